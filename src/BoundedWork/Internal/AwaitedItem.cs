namespace BoundedWork.Internal;

/// <summary>
/// An item whose caller awaits its result (<c>RunAsync</c>). Exactly one of start, cancel or finalize wins
/// the item's state, so each item has exactly one outcome.
/// </summary>
internal abstract class AwaitedItem
{
    private const int Queued = 0;
    private const int Claimed = 1;

    private int _state;

    /// <summary>Claims the item for running or for rejection; false if its caller already cancelled it.</summary>
    public bool TryClaim() => Interlocked.CompareExchange(ref _state, Claimed, Queued) == Queued;

    /// <summary>Runs the item on the current thread and completes its task. Call only after <see cref="TryClaim"/>.</summary>
    /// <returns>The outcome to count.</returns>
    public abstract ItemOutcome Run(ExecutionContext? restoreTo);

    /// <summary>Faults the task with a rejection. Call only after <see cref="TryClaim"/>.</summary>
    public abstract void Reject(RejectedExecutionException exception);

    /// <summary>Cancels the task because it was abandoned. Call only after <see cref="TryClaim"/>.</summary>
    public abstract void Abandon();

    public abstract WorkItem ToWorkItem();
}

internal enum ItemOutcome
{
    Completed,
    Failed,
    Cancelled,
}
