namespace BoundedWork.Internal.Adaptive;

/// <summary>
/// One look of the watchdog at the executor: cumulative counters (they only grow) and instantaneous gauges. Nothing
/// here is measured per item: every field is a counter or a state the executor keeps anyway, read the way
/// <see cref="BoundedExecutor.GetStatistics"/> reads it.
/// </summary>
/// <param name="Timestamp">When the look was taken, on the controller's <see cref="TimeProvider"/>.</param>
/// <param name="Completed">Items that ran to completion on the workers, ever (not items run on callers).</param>
/// <param name="Failed">Items that threw on the workers, ever.</param>
/// <param name="Submitted">Items submitted, ever, whatever became of them (rejected ones included): the demand.</param>
/// <param name="SlowItems">Items reported for running longer than the slow-item threshold, ever.</param>
/// <param name="BusyWorkers">Workers running an item now.</param>
/// <param name="WorkerCount">The worker count the executor is converging to now (its target).</param>
/// <param name="QueueLength">Items waiting in the queue now.</param>
/// <param name="OldestQueuedAge">How long the oldest queued item has waited now; zero when the queue is empty.</param>
/// <param name="MinWorkerCount">The adaptive mode's minimum worker count now.</param>
/// <param name="MaxWorkerCount">The adaptive mode's maximum worker count now (never above the executor's hard maximum).</param>
internal readonly record struct AdaptiveReading(
    long Timestamp,
    long Completed,
    long Failed,
    long Submitted,
    long SlowItems,
    int BusyWorkers,
    int WorkerCount,
    int QueueLength,
    TimeSpan OldestQueuedAge,
    int MinWorkerCount,
    int MaxWorkerCount);
