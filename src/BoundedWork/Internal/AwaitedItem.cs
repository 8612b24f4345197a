namespace BoundedWork.Internal;

/// <summary>
/// An item whose caller awaits its result (<c>RunAsync</c>). Exactly one of start, cancel or finalize wins
/// the item's claim, so each item has exactly one outcome.
/// </summary>
internal interface IAwaitedItem
{
    /// <summary>Claims the item for running or for rejection; false if its caller already cancelled it.</summary>
    bool TryClaim();

    /// <summary>Runs the item on the current thread and completes its task. Call only after <see cref="TryClaim"/>.</summary>
    /// <returns>The outcome to count.</returns>
    ItemOutcome Run(ExecutionContext? restoreTo);

    /// <summary>Faults the task with a rejection. Call only after <see cref="TryClaim"/>.</summary>
    void Reject(RejectedExecutionException exception);

    /// <summary>Cancels the task because it was abandoned. Call only after <see cref="TryClaim"/>.</summary>
    void Abandon();

    WorkItem ToWorkItem();
}

internal enum ItemOutcome
{
    Completed,
    Failed,
    Cancelled,
}
