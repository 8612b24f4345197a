namespace BoundedWork.AdaptiveSimulation;

/// <summary>
/// A blocking dependency of limited capacity, such as a database with <see cref="Capacity"/> connections: up to that
/// many calls at once are served in <see cref="ServiceTime"/>; a call beyond waits for a free connection, so the run
/// time grows with concurrency past the knee while the throughput stays flat (or falls, with a
/// <see cref="ContentionPenalty"/>: a server that thrashes under too many clients).
/// </summary>
internal sealed record Downstream
{
    /// <summary>Gets the calls served at once (the knee, K). Unknown to the executor.</summary>
    public int Capacity { get; init; } = 12;

    /// <summary>Gets a call's service time with a free connection and no contention (the mean, with <see cref="Jitter"/>).</summary>
    public TimeSpan ServiceTime { get; init; } = TimeSpan.FromMilliseconds(10);

    /// <summary>Gets how far a service time varies: uniform within plus or minus this fraction of the mean.</summary>
    public double Jitter { get; init; } = 0.5;

    /// <summary>
    /// Gets how much each call beyond the capacity slows every call being served: the service time is multiplied by
    /// <c>1 + ContentionPenalty x (calls - Capacity) / Capacity</c> for the calls in the dependency when it starts.
    /// </summary>
    public double ContentionPenalty { get; init; }

    /// <summary>Gets the service time's multiplier at a time (seconds from the start): a drift of the dependency's speed.</summary>
    public Func<double, double> SpeedFactor { get; init; } = static _ => 1;

    /// <summary>
    /// Gets the service time's multiplier at a time (seconds from the start) for a call that starts with a number of
    /// calls in service (itself included): contention for something more workers do not load further, such as the
    /// machine's cores during a neighbour's CPU burst.
    /// </summary>
    public Func<double, int, double> Slowdown { get; init; } = static (_, _) => 1;

    /// <summary>Gets the share of calls that fail at a time (seconds from the start).</summary>
    public Func<double, double> FailureShare { get; init; } = static _ => 0;

    /// <summary>Gets how long a failing call takes, as a fraction of a served call's (failures are usually fast).</summary>
    public double FailureTimeFactor { get; init; } = 0.1;

    /// <summary>Gets the most completions per second the dependency can serve (<see cref="Capacity"/> / <see cref="ServiceTime"/>).</summary>
    public double MaxThroughput => Capacity / ServiceTime.TotalSeconds;

    /// <summary>A triangle wave from 1 to <paramref name="peak"/> and back over <paramref name="period"/>, repeating.</summary>
    /// <param name="peak">The multiplier at mid-period.</param>
    /// <param name="period">The period.</param>
    /// <returns>The speed factor function.</returns>
    public static Func<double, double> Drift(double peak, TimeSpan period) => t =>
    {
        var phase = (t / period.TotalSeconds) % 1;
        return 1 + ((peak - 1) * (phase < 0.5 ? phase * 2 : (1 - phase) * 2));
    };
}

/// <summary>The arrival rate of items over time.</summary>
/// <param name="RatePerSecond">Items per second at a time (seconds from the start).</param>
/// <param name="Poisson">Whether arrivals are random (Poisson) or evenly paced, like the open-loop load driver.</param>
internal sealed record LoadShape(Func<double, double> RatePerSecond, bool Poisson = true)
{
    /// <summary>A constant rate.</summary>
    /// <param name="rate">Items per second.</param>
    /// <returns>The load.</returns>
    public static LoadShape Constant(double rate) => new(_ => rate);

    /// <summary>Bursts: <paramref name="on"/> items per second for <paramref name="onTime"/>, then <paramref name="off"/> for <paramref name="offTime"/>, repeating.</summary>
    /// <param name="on">The rate during a burst.</param>
    /// <param name="onTime">How long a burst lasts.</param>
    /// <param name="off">The rate between bursts.</param>
    /// <param name="offTime">How long the pause lasts.</param>
    /// <returns>The load.</returns>
    public static LoadShape OnOff(double on, TimeSpan onTime, double off, TimeSpan offTime)
    {
        var period = (onTime + offTime).TotalSeconds;
        return new(t => t % period < onTime.TotalSeconds ? on : off);
    }
}
