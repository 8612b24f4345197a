namespace BoundedWork.Hosting;

/// <summary>What <c>IDurableWorkQueue&lt;T&gt;.CancelAsync</c> found and did.</summary>
public enum CancelResult
{
    /// <summary>No item with that id is stored in the queue (never, or cleanup has deleted it).</summary>
    NotFound = 0,

    /// <summary>The item was ready or scheduled: it is cancelled and will not run.</summary>
    Cancelled = 1,

    /// <summary>
    /// The item is running: the cancellation token its handler got fires on whichever node runs it. The item ends
    /// cancelled if the handler stops (throws), completed if it finishes anyway; it is not retried.
    /// </summary>
    CancellationRequested = 2,

    /// <summary>The item had already completed; nothing changed.</summary>
    AlreadyCompleted = 3,

    /// <summary>The item is a dead letter; nothing changed (purge it from the dead letters instead).</summary>
    AlreadyDeadLettered = 4,

    /// <summary>The item had already been cancelled; nothing changed.</summary>
    AlreadyCancelled = 5,
}
