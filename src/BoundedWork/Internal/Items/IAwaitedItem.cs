namespace BoundedWork.Internal;

/// <summary>
/// An item whose caller awaits its result (<c>RunAsync</c>). Exactly one party wins the item's claim: the thread
/// that starts it, its caller's cancellation, or a party that rejects, evicts or abandons it (how each counts it:
/// <see cref="OutcomeCounters"/>).
/// </summary>
internal interface IAwaitedItem
{
    /// <summary>Claims the item for running or for rejection; false if its caller already cancelled it.</summary>
    bool TryClaim();

    /// <summary>
    /// Runs the item on the current thread in its own execution context and completes its task. Call only after
    /// <see cref="TryClaim"/>; the caller restores its own context afterwards.
    /// </summary>
    /// <returns>The outcome to count.</returns>
    ItemOutcome Run(ExecutorCallbacks callbacks);

    /// <summary>Faults the task with a rejection. Call only after <see cref="TryClaim"/>.</summary>
    void Reject(RejectedExecutionException exception);

    /// <summary>Cancels the task (abandoned at a deadline, or its caller cancelled a wait). Call only after <see cref="TryClaim"/>.</summary>
    void Cancel();

    WorkItem ToWorkItem();
}
