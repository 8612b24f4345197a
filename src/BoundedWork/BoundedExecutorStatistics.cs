namespace BoundedWork;

/// <summary>
/// One snapshot of an executor's state and counters, taken by <see cref="BoundedExecutor.GetStatistics"/>.
/// </summary>
/// <remarks>
/// <para>
/// The snapshot is taken without stopping the executor, and it is consistent: every item submitted so far is in
/// exactly one of <see cref="QueueLength"/>, <see cref="Starting"/>, <see cref="Running"/> or one outcome (completed,
/// failed, cancelled, rejected, discarded, abandoned), so <see cref="Submitted"/> equals their sum in every snapshot.
/// An item counts as submitted once the executor has queued it or decided its fate; a producer still blocked waiting
/// for room (<see cref="WaitingProducers"/>) is not counted yet.
/// </para>
/// <para>
/// The running items and the busy workers agree in every snapshot: <see cref="Running"/> is always
/// <see cref="BusyWorkerCount"/> plus <see cref="RunningOnCallers"/>. An item a worker has taken from the queue but not
/// yet started is <see cref="Starting"/>, neither queued nor running.
/// </para>
/// <para>
/// A snapshot is read while items keep moving, so it is not one instant: an item that moves while it is read is
/// counted in the stage it was in when its part was read (an earlier one), never in two or in none.
/// </para>
/// </remarks>
public sealed record BoundedExecutorStatistics
{
    /// <summary>Gets the executor's name.</summary>
    public required string Name { get; init; }

    /// <summary>Gets the worker count the executor is converging to (the last resize).</summary>
    public required int TargetWorkerCount { get; init; }

    /// <summary>
    /// Gets the number of worker threads serving the queue now: above the target while shrinking, until busy workers
    /// finish their items; never above <see cref="MaxWorkerCount"/> (a worker that has decided to retire no longer counts).
    /// </summary>
    public required int LiveWorkerCount { get; init; }

    /// <summary>
    /// Gets the number of workers running an item now: each one's item is counted in <see cref="Running"/>, so the two
    /// always agree (<see cref="Running"/> = <see cref="BusyWorkerCount"/> + <see cref="RunningOnCallers"/>).
    /// </summary>
    public required int BusyWorkerCount { get; init; }

    /// <summary>Gets the largest number of live workers seen at once.</summary>
    public required int PeakWorkerCount { get; init; }

    /// <summary>Gets the hard maximum worker count.</summary>
    public required int MaxWorkerCount { get; init; }

    /// <summary>Gets the number of items waiting in the queue.</summary>
    public required int QueueLength { get; init; }

    /// <summary>Gets the queue capacity.</summary>
    public required int QueueCapacity { get; init; }

    /// <summary>Gets how long the oldest item still in the queue has waited; <see cref="TimeSpan.Zero"/> when the queue is empty.</summary>
    /// <remarks>
    /// Read from the oldest item's queue slot without taking it. If that item is still being written at the very
    /// instant of the reading, or a worker takes it meanwhile, the age reads as zero.
    /// </remarks>
    public required TimeSpan OldestQueuedItemAge { get; init; }

    /// <summary>Gets the policy applied when the queue is full.</summary>
    public required RejectionPolicy RejectionPolicy { get; init; }

    /// <summary>Gets how long the Wait policy waits for room (<see cref="Timeout.InfiniteTimeSpan"/> for no limit).</summary>
    public required TimeSpan WaitTimeout { get; init; }

    /// <summary>
    /// Gets the number of producers waiting for room now: submits under the Wait policy (their items are not counted
    /// as submitted yet), and channel writers in <c>WaitToWriteAsync</c> under any policy (they hold no item).
    /// </summary>
    public required int WaitingProducers { get; init; }

    /// <summary>
    /// Gets the number of items running now: on a busy worker, or on the submitting thread (the CallerRuns policy, or
    /// a Wait-policy submit from one of the executor's own workers). Always <see cref="BusyWorkerCount"/> +
    /// <see cref="RunningOnCallers"/>.
    /// </summary>
    public required long Running { get; init; }

    /// <summary>Gets the number of items running on the thread that submitted them now (counted in <see cref="Running"/>, not in <see cref="BusyWorkerCount"/>).</summary>
    public required long RunningOnCallers { get; init; }

    /// <summary>
    /// Gets the number of items taken from the queue that have not started and whose outcome is not counted yet:
    /// items changing hands at the instant of the snapshot (a worker has taken the item and is about to start it, or
    /// skip it because its caller cancelled it; an eviction or a shutdown deadline has taken it and is about to count
    /// it), and items a worker took after the snapshot had read that worker. Usually 0.
    /// </summary>
    public required long Starting { get; init; }

    /// <summary>Gets the number of items submitted, whatever became of them: always queued + starting + running + every outcome.</summary>
    public required long Submitted { get; init; }

    /// <summary>Gets the number of items that ran to completion (on a worker or, under CallerRuns, on the caller).</summary>
    public required long Completed { get; init; }

    /// <summary>Gets the number of items that threw.</summary>
    public required long Failed { get; init; }

    /// <summary>Gets the number of items cancelled by their caller before they started.</summary>
    public required long Cancelled { get; init; }

    /// <summary>Gets the number of items rejected (queue full, wait timed out, shut down, or nested too deeply in caller runs).</summary>
    public required long Rejected { get; init; }

    /// <summary>Gets the number of items discarded by the Discard policy or evicted by the DiscardOldest policy.</summary>
    public required long Discarded { get; init; }

    /// <summary>Gets the number of items still queued at a shutdown deadline and handed back to the caller.</summary>
    public required long Abandoned { get; init; }

    /// <summary>Gets the number of items run on the submitting thread by the CallerRuns policy (also counted as completed or failed).</summary>
    public required long CallerRuns { get; init; }

    /// <summary>Gets the number of times an <see cref="BoundedExecutorOptions.OnError"/> or <see cref="BoundedExecutorOptions.OnRejected"/> callback threw.</summary>
    public required long CallbackFailures { get; init; }

    /// <summary>
    /// Gets the number of times a ThreadPool thread blocked waiting for this executor (a Wait-policy submit on a full
    /// queue, or a synchronous submit-and-wait). Each one holds a shared pool thread hostage: use the asynchronous
    /// submit methods from request code.
    /// </summary>
    public required long ThreadPoolBlockingWaits { get; init; }

    /// <summary>Gets the number of worker threads started to replace one that stopped because of a defect (normally 0).</summary>
    public required long WorkersReplaced { get; init; }

    /// <summary>Gets the number of workers running an item for longer than the slow-item threshold now.</summary>
    public required int SlowWorkerCount { get; init; }

    /// <summary>Gets the number of items reported for running longer than the slow-item threshold.</summary>
    public required long SlowItemsReported { get; init; }

    /// <summary>Gets the number of items reported for waiting in the queue longer than the queue-wait threshold.</summary>
    public required long LongQueueWaitsReported { get; init; }

    /// <summary>Gets how long the slow-item threshold is (<see cref="Timeout.InfiniteTimeSpan"/>: off).</summary>
    public required TimeSpan SlowItemThreshold { get; init; }

    /// <summary>Gets how long the queue-wait threshold is (<see cref="Timeout.InfiniteTimeSpan"/>: off).</summary>
    public required TimeSpan QueueWaitThreshold { get; init; }

    /// <summary>Gets the configured rate limit in items per second (0: none, or a limiter of your own; see <see cref="IsRateLimited"/>).</summary>
    public int PermitsPerSecond { get; init; }

    /// <summary>Gets the configured rate limit's burst.</summary>
    public int PermitBurst { get; init; }

    /// <summary>Gets a value indicating whether a rate limit is in force (configured, or a limiter of your own).</summary>
    public bool IsRateLimited { get; init; }

    /// <summary>
    /// Gets the number of workers waiting for a rate-limit permit now (with submitting threads running an item under
    /// CallerRuns). A waiting worker has not taken an item: the items it waits for are still counted in <see cref="QueueLength"/>.
    /// </summary>
    public int RateLimitWaitingWorkers { get; init; }

    /// <summary>Gets the number of rate-limit permits taken: one per item started under a rate limit.</summary>
    public long PermitsAcquired { get; init; }

    /// <summary>Gets the number of times the rate limiter refused a permit and the worker had to wait for one.</summary>
    public long PermitsRefused { get; init; }

    /// <summary>Gets the total time workers spent waiting for rate-limit permits (finished waits).</summary>
    public TimeSpan RateLimitWaitTime { get; init; }

    /// <summary>Gets a value indicating whether shutdown has begun (the executor accepts no new items).</summary>
    public required bool IsShutdown { get; init; }

    /// <summary>Gets the adaptive mode in force.</summary>
    public AdaptiveMode AdaptiveMode { get; init; }

    /// <summary>Gets the fewest workers the adaptive mode runs (the setting, within the hard maximum).</summary>
    public int AdaptiveMinWorkerCount { get; init; }

    /// <summary>Gets the most workers the adaptive mode runs (the setting, or the hard maximum when it is not set).</summary>
    public int AdaptiveMaxWorkerCount { get; init; }

    /// <summary>Gets a value indicating whether an operator pinned the worker count (the adaptive mode holds it).</summary>
    public bool IsWorkerCountPinned { get; init; }

    /// <summary>Gets when the pin ends, or <see langword="null"/> when it lasts until unpinned (or there is none).</summary>
    public DateTimeOffset? WorkerCountPinnedUntil { get; init; }

    /// <summary>Gets how many entries the worker-count decision log has received, ever (<see cref="BoundedExecutor.GetWorkerCountDecisions"/>).</summary>
    public long WorkerCountDecisions { get; init; }

    /// <summary>Gets the run time items take while the dependency is not saturated, as the adaptive mode measured it; <see langword="null"/> before it is known.</summary>
    public TimeSpan? RunTimeBaseline { get; init; }

    /// <summary>Gets a value indicating whether the executor is paused (<see cref="BoundedExecutor.Pause(string, TimeSpan)"/>): its workers start no new item.</summary>
    public bool IsPaused { get; init; }

    /// <summary>Gets why the executor is paused, or <see langword="null"/> when it is not.</summary>
    public string? PauseReason { get; init; }

    /// <summary>Gets when the pause began, or <see langword="null"/> when the executor is not paused.</summary>
    public DateTimeOffset? PausedSince { get; init; }

    /// <summary>Gets when the pause ends by itself, or <see langword="null"/> when it lasts until resumed (or there is none).</summary>
    public DateTimeOffset? PausedUntil { get; init; }
}
