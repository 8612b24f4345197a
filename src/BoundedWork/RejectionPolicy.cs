namespace BoundedWork;

/// <summary>
/// What an executor does with a new item when its queue is full. The names follow Java's
/// <c>ThreadPoolExecutor</c> policies; whatever the policy, every item that does not run is
/// reported and counted.
/// </summary>
public enum RejectionPolicy
{
    /// <summary>
    /// Reject the new item: <see cref="BoundedExecutor.Execute(Action, CancellationToken)"/> throws a
    /// <see cref="RejectedExecutionException"/> and <c>RunAsync</c> returns a task faulted with one.
    /// </summary>
    Abort = 0,

    /// <summary>
    /// Run the new item on the submitting thread, which slows the producer down to the executor's pace.
    /// After shutdown the item is rejected instead.
    /// </summary>
    CallerRuns = 1,

    /// <summary>Drop the new item and report it to <see cref="BoundedExecutorOptions.OnRejected"/>.</summary>
    Discard = 2,

    /// <summary>
    /// Evict the oldest queued item (reporting it to <see cref="BoundedExecutorOptions.OnRejected"/>, or
    /// faulting its task) and queue the new one.
    /// </summary>
    DiscardOldest = 3,

    /// <summary>
    /// Wait for room, up to <see cref="BoundedExecutorOptions.WaitTimeout"/> or until the caller's token is
    /// cancelled, then reject as <see cref="Abort"/> does. Asynchronous submit methods wait asynchronously.
    /// </summary>
    Wait = 4,
}
