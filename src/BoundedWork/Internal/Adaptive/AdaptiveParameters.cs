namespace BoundedWork.Internal.Adaptive;

/// <summary>
/// The adaptive controller's tuning. Every value has a default that suits blocking items of a millisecond to a few
/// hundred milliseconds; the rules that use each one are described on <see cref="AdaptiveController"/>.
/// </summary>
/// <remarks>
/// Times are durations on the controller's <see cref="TimeProvider"/>. <see cref="Validate"/> lists every bad value
/// by name; the controller refuses parameters that do not validate.
/// </remarks>
internal sealed record AdaptiveParameters
{
    /// <summary>Gets the default parameters.</summary>
    public static AdaptiveParameters Default { get; } = new();

    /// <summary>Gets how long one measurement interval lasts at least: one decision per interval.</summary>
    /// <value>Defaults to 250 ms. The watchdog should look at the executor at least five times per interval.</value>
    public TimeSpan Interval { get; init; } = TimeSpan.FromMilliseconds(250);

    /// <summary>
    /// Gets how long an interval may be extended while fewer than <see cref="MinItemsPerInterval"/> items have
    /// finished in it (slow items): then the interval ends anyway and its run time counts as unknown.
    /// </summary>
    /// <value>Defaults to 5 s.</value>
    public TimeSpan MaxInterval { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>Gets how many items must finish in an interval for its throughput and run time to be trusted.</summary>
    /// <value>Defaults to 20.</value>
    public int MinItemsPerInterval { get; init; } = 20;

    /// <summary>
    /// Gets the queue wait that makes a queue standing: when even the shortest wait seen during a whole interval is
    /// at least this long, the queue never emptied and there is more work than workers (CoDel's target).
    /// </summary>
    /// <value>Defaults to 10 ms.</value>
    public TimeSpan QueueWaitTarget { get; init; } = TimeSpan.FromMilliseconds(10);

    /// <summary>
    /// Gets how far above its baseline the run time may be for the controller to add workers (0.2: 20% above).
    /// Between this and <see cref="BackoffTolerance"/> the controller holds (hysteresis).
    /// </summary>
    /// <value>Defaults to 0.2.</value>
    public double GrowthTolerance { get; init; } = 0.2;

    /// <summary>Gets how far above its baseline the run time must climb for the controller to remove workers (0.5: 50% above).</summary>
    /// <value>Defaults to 0.5.</value>
    public double BackoffTolerance { get; init; } = 0.5;

    /// <summary>
    /// Gets the largest factor one growth step may multiply the worker count by (while the demand estimate asks for
    /// more). Each step must pay before the next is taken.
    /// </summary>
    /// <value>Defaults to 4.</value>
    public double MaxGrowthFactor { get; init; } = 4;

    /// <summary>Gets the largest fraction of the workers one back-off step may remove (0.5: at most half).</summary>
    /// <value>Defaults to 0.5.</value>
    public double MaxDecrease { get; init; } = 0.5;

    /// <summary>
    /// Gets the share of the throughput gain a growth step should bring (in proportion to the workers it added) for
    /// it to count as paid: 0.5 means adding 10% more workers must raise completions per second by at least 5%.
    /// </summary>
    /// <value>Defaults to 0.5.</value>
    public double PayoffFraction { get; init; } = 0.5;

    /// <summary>
    /// Gets the time in which a growth step aims to drain the backlog: the demand estimate is
    /// <c>run time x (arrivals per second + queue length / DrainTime)</c> workers.
    /// </summary>
    /// <value>Defaults to 500 ms.</value>
    public TimeSpan DrainTime { get; init; } = TimeSpan.FromMilliseconds(500);

    /// <summary>Gets the size of a probe step as a fraction of the worker count (at least one worker).</summary>
    /// <value>Defaults to 0.1.</value>
    public double ProbeStep { get; init; } = 0.1;

    /// <summary>
    /// Gets how long a count where growth stopped paying (or where run time said the dependency saturated) blocks
    /// further growth before one probe step may try again. Doubles after each probe that does not pay.
    /// </summary>
    /// <value>Defaults to 60 s.</value>
    public TimeSpan ProbeHoldTime { get; init; } = TimeSpan.FromSeconds(60);

    /// <summary>Gets the longest hold <see cref="ProbeHoldTime"/> doubles to.</summary>
    /// <value>Defaults to 10 minutes.</value>
    public TimeSpan MaxProbeHoldTime { get; init; } = TimeSpan.FromMinutes(10);

    /// <summary>Gets how long a step is measured at most before it is judged with the items seen so far.</summary>
    /// <value>Defaults to 10 s.</value>
    public TimeSpan MaxEvaluationTime { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Gets how long a standing queue may grow while the count is held (by a back-off, a ceiling or a run time above its
    /// baseline) before one worker is added anyway; each such probe that does not pay doubles it, up to
    /// <see cref="MaxProbeHoldTime"/>.
    /// </summary>
    /// <value>Defaults to 5 s.</value>
    public TimeSpan StarvingQueueProbeAfter { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>Gets how long workers must have stayed idle, with no standing queue, before any of them is retired.</summary>
    /// <value>Defaults to 30 s.</value>
    public TimeSpan IdleRetireAfter { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>Gets the share of the workers idle throughout that period which one retirement removes (at least one).</summary>
    /// <value>Defaults to 0.5.</value>
    public double IdleRetireFraction { get; init; } = 0.5;

    /// <summary>
    /// Gets the time constant of the run-time baseline's upward movement: a slower run time becomes the baseline over
    /// about this long, and only while the worker count is one whose growth was shown to pay. A faster run time
    /// lowers it at once (by half the difference per interval).
    /// </summary>
    /// <value>Defaults to 30 s.</value>
    public TimeSpan BaselineRiseTime { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>Gets the weight of the newest interval in the smoothed run time (1: no smoothing).</summary>
    /// <value>Defaults to 0.5.</value>
    public double RunTimeSmoothing { get; init; } = 0.5;

    /// <summary>
    /// Gets how far the share of failed (and slow-reported) items must rise above its usual level for the controller
    /// to back off (0.05: five percentage points).
    /// </summary>
    /// <value>Defaults to 0.05.</value>
    public double FailureRiseThreshold { get; init; } = 0.05;

    /// <summary>Gets the time constant over which a persistent failure share becomes the usual level.</summary>
    /// <value>Defaults to 60 s.</value>
    public TimeSpan FailureMemory { get; init; } = TimeSpan.FromSeconds(60);

    /// <summary>Gets the shortest time between two changes the controller makes.</summary>
    /// <value>Defaults to 250 ms (one interval).</value>
    public TimeSpan Cooldown { get; init; } = TimeSpan.FromMilliseconds(250);

    /// <summary>Gets the most changes the controller makes in any 60 s (operator pins and bounds excepted).</summary>
    /// <value>Defaults to 12.</value>
    public int MaxChangesPerMinute { get; init; } = 12;

    /// <summary>Lists what is wrong with these parameters, naming each one.</summary>
    /// <returns>The errors; empty when valid.</returns>
    public IEnumerable<string> Validate()
    {
        foreach (var (name, value) in ((string, TimeSpan)[])[
            (nameof(Interval), Interval), (nameof(QueueWaitTarget), QueueWaitTarget), (nameof(DrainTime), DrainTime),
            (nameof(ProbeHoldTime), ProbeHoldTime), (nameof(MaxEvaluationTime), MaxEvaluationTime),
            (nameof(StarvingQueueProbeAfter), StarvingQueueProbeAfter),
            (nameof(IdleRetireAfter), IdleRetireAfter), (nameof(BaselineRiseTime), BaselineRiseTime),
            (nameof(FailureMemory), FailureMemory)])
        {
            if (value <= TimeSpan.Zero)
            {
                yield return $"{name} ({value}) must be positive.";
            }
        }

        if (MaxInterval < Interval)
        {
            yield return $"{nameof(MaxInterval)} ({MaxInterval}) must be at least {nameof(Interval)} ({Interval}).";
        }

        if (MaxProbeHoldTime < ProbeHoldTime)
        {
            yield return $"{nameof(MaxProbeHoldTime)} ({MaxProbeHoldTime}) must be at least {nameof(ProbeHoldTime)} ({ProbeHoldTime}).";
        }

        if (Cooldown < TimeSpan.Zero)
        {
            yield return $"{nameof(Cooldown)} ({Cooldown}) must not be negative.";
        }

        if (MinItemsPerInterval < 1)
        {
            yield return $"{nameof(MinItemsPerInterval)} ({MinItemsPerInterval}) must be at least 1.";
        }

        if (MaxChangesPerMinute < 1)
        {
            yield return $"{nameof(MaxChangesPerMinute)} ({MaxChangesPerMinute}) must be at least 1.";
        }

        if (!(GrowthTolerance >= 0) || !(BackoffTolerance > GrowthTolerance))
        {
            yield return $"{nameof(GrowthTolerance)} ({GrowthTolerance}) must be at least 0 and below {nameof(BackoffTolerance)} ({BackoffTolerance}).";
        }

        if (!(MaxGrowthFactor > 1))
        {
            yield return $"{nameof(MaxGrowthFactor)} ({MaxGrowthFactor}) must be above 1.";
        }

        foreach (var (name, value) in ((string, double)[])[
            (nameof(MaxDecrease), MaxDecrease), (nameof(PayoffFraction), PayoffFraction), (nameof(ProbeStep), ProbeStep),
            (nameof(IdleRetireFraction), IdleRetireFraction), (nameof(RunTimeSmoothing), RunTimeSmoothing),
            (nameof(FailureRiseThreshold), FailureRiseThreshold)])
        {
            if (!(value > 0 && value <= 1))
            {
                yield return $"{name} ({value}) must be above 0 and at most 1.";
            }
        }
    }
}
