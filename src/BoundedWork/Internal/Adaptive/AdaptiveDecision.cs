using System.Globalization;

namespace BoundedWork.Internal.Adaptive;

/// <summary>The rule behind an <see cref="AdaptiveDecision"/>: what the controller saw and did.</summary>
internal enum AdaptiveRule
{
    /// <summary>No standing queue and no worker idle long enough: nothing to do.</summary>
    Steady,

    /// <summary>A standing queue, run time near its baseline, and the last step paid: workers added.</summary>
    Grow,

    /// <summary>The last growth step did not raise completions per second in proportion: reverted.</summary>
    GrowthDidNotPay,

    /// <summary>The last growth step raised completions per second, but less than in proportion: settled at the estimated knee.</summary>
    GrowthPaidPartly,

    /// <summary>The run time climbed past its baseline (the dependency saturates): workers removed.</summary>
    Saturated,

    /// <summary>The share of failed or slow items rose above its usual level: workers removed.</summary>
    Failures,

    /// <summary>Workers stayed idle with no standing queue for the idle period: some retired.</summary>
    RetireIdle,

    /// <summary>Started above the knee, possibly: one probe step down, kept only if it costs no throughput.</summary>
    ProbeDown,

    /// <summary>The last probe step down cost throughput: reverted.</summary>
    ProbeDownCost,

    /// <summary>The count was outside the minimum and maximum: brought inside.</summary>
    Bounds,

    /// <summary>An operator pinned the count: the controller holds it.</summary>
    Pinned,

    /// <summary>The operator's pin ended (unpinned, or its time ran out): the controller resumes.</summary>
    Unpinned,

    /// <summary>A standing queue, but the run time is between the growth and the back-off thresholds: holding.</summary>
    RunTimeHigh,

    /// <summary>A standing queue, but growth stopped paying at this count recently: holding until the probe hold ends.</summary>
    AtCeiling,

    /// <summary>A standing queue, but the count is at the maximum.</summary>
    AtMaximum,

    /// <summary>A standing queue, but the workers in force drain it within the drain time and it is shrinking.</summary>
    Draining,

    /// <summary>
    /// A standing queue grew for the probe time while the count was held (after a back-off, at a ceiling, or with the
    /// run time above its baseline): one worker added, kept if the queue stops growing or throughput rises.
    /// </summary>
    StarvingQueue,

    /// <summary>Saturated or failing, but the count is at the minimum.</summary>
    AtMinimum,

    /// <summary>Measuring the current count, or the last step, before deciding.</summary>
    Measuring,

    /// <summary>Too few items finished to trust the interval's throughput and run time.</summary>
    NotEnoughData,

    /// <summary>Too soon after the last change (cooldown).</summary>
    Cooldown,

    /// <summary>The controller already made its most changes for the last minute.</summary>
    RateLimited,
}

/// <summary>The signals a decision was made on, as the controller read them.</summary>
/// <param name="MinQueueWait">The interval's shortest queue wait (standing queue when at or above the target).</param>
/// <param name="QueueLength">The queue length at the end of the interval.</param>
/// <param name="CompletedPerSecond">Items completed per second (goodput: failed items are not counted).</param>
/// <param name="ArrivalsPerSecond">Items submitted per second.</param>
/// <param name="FailureShare">The share of finished items that failed or were reported slow.</param>
/// <param name="RunTime">The interval's mean run time, or <see langword="null"/> when too few items finished.</param>
/// <param name="SmoothedRunTime">The smoothed run time the thresholds are compared with.</param>
/// <param name="Baseline">The run-time baseline, or <see langword="null"/> before the first trusted interval.</param>
/// <param name="BusyWorkers">The average number of busy workers.</param>
/// <param name="IdleWorkers">The workers never busy during the interval.</param>
internal readonly record struct AdaptiveSignals(
    TimeSpan MinQueueWait,
    int QueueLength,
    double CompletedPerSecond,
    double ArrivalsPerSecond,
    double FailureShare,
    TimeSpan? RunTime,
    TimeSpan? SmoothedRunTime,
    TimeSpan? Baseline,
    double BusyWorkers,
    int IdleWorkers);

/// <summary>
/// One decision of the adaptive controller: when, the count before and after, the rule that fired and the signals it
/// read. A decision is made every interval; most hold (<see cref="IsChange"/> is false) and say why.
/// </summary>
/// <param name="Time">When the decision was made (the controller's clock).</param>
/// <param name="OldCount">The worker count before.</param>
/// <param name="NewCount">The worker count the controller chose (equal to <paramref name="OldCount"/> when it holds).</param>
/// <param name="Rule">The rule that fired.</param>
/// <param name="Signals">The signals it read.</param>
/// <param name="Applied">
/// <see langword="false"/> in advisory mode: the controller records what it would do, and the count stays as it is.
/// </param>
internal sealed record AdaptiveDecision(
    DateTimeOffset Time,
    int OldCount,
    int NewCount,
    AdaptiveRule Rule,
    AdaptiveSignals Signals,
    bool Applied)
{
    /// <summary>Gets a value indicating whether the decision changes the worker count.</summary>
    public bool IsChange => NewCount != OldCount;

    /// <summary>Describes the decision in one line, for a log or a console.</summary>
    /// <returns>For example <c>grow 2 -> 8 (Grow): min queue wait 120 ms, 641 done/s, run time 3.1 ms (baseline 3.0 ms), 2.0 busy</c>.</returns>
    public override string ToString()
    {
        var s = Signals;
        var what = IsChange ? (Applied ? string.Empty : "would ") + (NewCount > OldCount ? "grow" : "shrink") : "hold";
        return string.Create(
            CultureInfo.InvariantCulture,
            $"{what} {OldCount} -> {NewCount} ({Rule}): min queue wait {Ms(s.MinQueueWait)}, queue {s.QueueLength}, {s.CompletedPerSecond:F0} done/s, {s.ArrivalsPerSecond:F0} arrived/s, failed {s.FailureShare:P0}, run time {Ms(s.RunTime)} (smoothed {Ms(s.SmoothedRunTime)}, baseline {Ms(s.Baseline)}), {s.BusyWorkers:F1} busy, {s.IdleWorkers} idle");
    }

    private static string Ms(TimeSpan? value) =>
        value is { } v ? string.Create(CultureInfo.InvariantCulture, $"{v.TotalMilliseconds:0.#} ms") : "unknown";
}
