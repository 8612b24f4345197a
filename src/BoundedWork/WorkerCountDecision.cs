namespace BoundedWork;

/// <summary>
/// One entry of an executor's worker-count decision log (<see cref="BoundedExecutor.GetWorkerCountDecisions"/>): a
/// change the adaptive mode made (or, in <see cref="AdaptiveMode.Advisory"/> mode, would have made), the end of a pin,
/// or an operator's pin, with the signals it was made on.
/// </summary>
public sealed record WorkerCountDecision
{
    /// <summary>Gets the executor's name.</summary>
    public required string ExecutorName { get; init; }

    /// <summary>Gets when the decision was made, on the executor's <see cref="BoundedExecutorOptions.TimeProvider"/>.</summary>
    public required DateTimeOffset Time { get; init; }

    /// <summary>Gets the worker count before the decision.</summary>
    public required int OldCount { get; init; }

    /// <summary>Gets the worker count chosen (equal to <see cref="OldCount"/> when the decision changes nothing).</summary>
    public required int NewCount { get; init; }

    /// <summary>
    /// Gets the rule that fired: <c>Grow</c>, <c>GrowthDidNotPay</c>, <c>GrowthPaidPartly</c>, <c>Saturated</c>,
    /// <c>Failures</c>, <c>StarvingQueue</c>, <c>RetireIdle</c>, <c>ProbeDown</c>, <c>ProbeDownCost</c>, <c>Bounds</c>, <c>Unpinned</c>, or
    /// <c>Pinned</c> for an operator's pin (see the adaptive workers guide for each rule).
    /// </summary>
    public required string Rule { get; init; }

    /// <summary>
    /// Gets a value indicating whether the worker count was changed: <see langword="false"/> in advisory mode, or when
    /// someone else changed the count first.
    /// </summary>
    public required bool Applied { get; init; }

    /// <summary>Gets the shortest queue wait seen during the interval the decision was made on (a standing queue when it stays above the target).</summary>
    public TimeSpan MinQueueWait { get; init; }

    /// <summary>Gets the queue length at the end of the interval.</summary>
    public int QueueLength { get; init; }

    /// <summary>Gets the items completed per second during the interval.</summary>
    public double CompletedPerSecond { get; init; }

    /// <summary>Gets the items submitted per second during the interval.</summary>
    public double ArrivalsPerSecond { get; init; }

    /// <summary>Gets the share of finished items that failed or were reported slow during the interval.</summary>
    public double FailureShare { get; init; }

    /// <summary>Gets the items' mean run time during the interval, or <see langword="null"/> when too few finished to tell.</summary>
    public TimeSpan? RunTime { get; init; }

    /// <summary>Gets the run time items take while the dependency is not saturated, as measured so far; <see langword="null"/> before it is known.</summary>
    public TimeSpan? RunTimeBaseline { get; init; }

    /// <summary>Gets the average number of busy workers during the interval.</summary>
    public double BusyWorkers { get; init; }

    /// <summary>Gets the decision in one line, for a log or a console.</summary>
    public required string Description { get; init; }
}
