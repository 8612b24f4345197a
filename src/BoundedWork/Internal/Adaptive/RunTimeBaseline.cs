namespace BoundedWork.Internal.Adaptive;

/// <summary>
/// The run time an item takes when the dependency behind it is not saturated: a slow-moving low percentile of the
/// intervals' mean run times, which more workers cannot push up.
/// </summary>
/// <remarks>
/// <para>
/// A faster interval lowers the baseline at once by half the difference; a slower one raises it by a small fraction
/// of the difference (time constant <see cref="AdaptiveParameters.BaselineRiseTime"/>). An estimate that moves down
/// fast and up slowly settles at a low percentile of what it sees, so noise does not pull it up.
/// </para>
/// <para>
/// It does not ratchet up under load (the defect of baselines kept as a moving average, which follows the latency the
/// controller itself causes, or re-measured under load): the caller lets a slower interval raise it only when the
/// interval ran at a worker count whose growth was shown to pay, that is, below the dependency's knee. A run time that
/// climbs because workers were added past the knee never enters it. A dependency that really became slower (at a
/// count below the knee, or after a back-off that did not bring the run time down) moves it, so it follows a drift.
/// </para>
/// </remarks>
internal sealed class RunTimeBaseline
{
    private const double FallWeight = 0.5;
    private readonly TimeSpan _riseTime;

    /// <summary>Initializes a new instance of the <see cref="RunTimeBaseline"/> class.</summary>
    /// <param name="riseTime">The time constant of upward movement.</param>
    public RunTimeBaseline(TimeSpan riseTime) => _riseTime = riseTime;

    /// <summary>Gets the baseline in seconds, or <see langword="null"/> before the first trusted interval.</summary>
    public double? Seconds { get; private set; }

    /// <summary>Gets the lowest worker count any trusted interval was measured at (int.MaxValue before the first).</summary>
    public int LowestCountSeen { get; private set; } = int.MaxValue;

    /// <summary>Takes one trusted interval's mean run time into account.</summary>
    /// <param name="runTimeSeconds">The interval's mean run time.</param>
    /// <param name="workerCount">The worker count it ran at.</param>
    /// <param name="interval">How long the interval lasted.</param>
    /// <param name="mayRise">Whether a slower run time may raise the baseline (the count is below the knee).</param>
    public void Observe(double runTimeSeconds, int workerCount, TimeSpan interval, bool mayRise)
    {
        LowestCountSeen = Math.Min(LowestCountSeen, workerCount);
        if (Seconds is not { } current)
        {
            Seconds = runTimeSeconds;
        }
        else if (runTimeSeconds < current)
        {
            Seconds = current + ((runTimeSeconds - current) * FallWeight);
        }
        else if (mayRise)
        {
            var weight = 1 - Math.Exp(-interval.TotalSeconds / _riseTime.TotalSeconds);
            Seconds = current + ((runTimeSeconds - current) * weight);
        }
    }

    /// <summary>Replaces the baseline: the dependency's own speed changed (a back-off did not bring the run time down).</summary>
    /// <param name="runTimeSeconds">The run time now.</param>
    public void Reset(double runTimeSeconds) => Seconds = runTimeSeconds;
}
