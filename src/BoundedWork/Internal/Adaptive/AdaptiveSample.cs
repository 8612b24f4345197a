namespace BoundedWork.Internal.Adaptive;

/// <summary>What the executor did during one measurement interval: the adaptive controller's only input.</summary>
/// <remarks>
/// <see cref="AdaptiveSampler"/> builds it from the watchdog's looks; tests and the simulation build it directly.
/// Counts are for the interval alone. <see cref="RunTime"/> follows from Little's law applied to the workers: the
/// average number of busy workers divided by the items completed per second is the mean time an item runs, measured
/// without reading a clock per item. The time of failed items is charged to the completed ones, so failures can make
/// the run time look slower (as timeouts should), never faster.
/// </remarks>
internal readonly record struct AdaptiveSample
{
    /// <summary>Gets how long the interval lasted.</summary>
    public required TimeSpan Interval { get; init; }

    /// <summary>Gets the executor's target worker count at the end of the interval.</summary>
    public required int WorkerCount { get; init; }

    /// <summary>Gets the adaptive mode's minimum worker count.</summary>
    public required int MinWorkerCount { get; init; }

    /// <summary>Gets the adaptive mode's maximum worker count.</summary>
    public required int MaxWorkerCount { get; init; }

    /// <summary>Gets the items that ran to completion on the workers during the interval.</summary>
    public long Completed { get; init; }

    /// <summary>Gets the items that threw during the interval.</summary>
    public long Failed { get; init; }

    /// <summary>Gets the items reported for running longer than the slow-item threshold during the interval.</summary>
    public long SlowItems { get; init; }

    /// <summary>Gets the items submitted during the interval (rejected ones included).</summary>
    public long Arrivals { get; init; }

    /// <summary>
    /// Gets the shortest queue wait seen during the interval: the oldest queued item's age at each look, the least of
    /// them (zero if the queue was empty at any look). At or above the target, the queue is standing.
    /// </summary>
    public TimeSpan MinQueueWait { get; init; }

    /// <summary>Gets the queue length at the end of the interval.</summary>
    public int QueueLength { get; init; }

    /// <summary>Gets the average number of busy workers over the interval.</summary>
    public double MeanBusyWorkers { get; init; }

    /// <summary>Gets the largest number of busy workers seen at a look during the interval.</summary>
    public int MaxBusyWorkers { get; init; }

    /// <summary>Gets the busy time per completed item (Little's law), or <see langword="null"/> if none completed.</summary>
    public TimeSpan? RunTime { get; init; }

    /// <summary>Gets the items that finished (completed or failed) during the interval.</summary>
    public long Finished => Completed + Failed;

    /// <summary>Gets the workers that were never busy at any look during the interval.</summary>
    public int IdleWorkers => Math.Max(0, WorkerCount - MaxBusyWorkers);
}
