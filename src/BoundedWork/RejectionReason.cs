namespace BoundedWork;

/// <summary>Why an item did not run.</summary>
public enum RejectionReason
{
    /// <summary>The queue was full and the policy rejected the new item (counted as rejected).</summary>
    QueueFull = 0,

    /// <summary>The queue stayed full for the whole wait timeout of the Wait policy (counted as rejected).</summary>
    WaitTimedOut = 1,

    /// <summary>The executor had been shut down (counted as rejected).</summary>
    ShutDown = 2,

    /// <summary>The queue was full and the Discard policy dropped the new item (counted as discarded).</summary>
    Discarded = 3,

    /// <summary>The DiscardOldest policy evicted this queued item to make room for a newer one (counted as discarded).</summary>
    Evicted = 4,

    /// <summary>The item was still queued when a shutdown deadline passed (counted as abandoned).</summary>
    Abandoned = 5,

    /// <summary>
    /// The queue was full and the item would have run on the submitting thread (CallerRuns, or a Wait-policy submit
    /// from one of the executor's own workers), but that thread was already nested too deeply in such runs
    /// (counted as rejected).
    /// </summary>
    CallerRunsTooDeep = 6,

    /// <summary>
    /// The item's tenant already holds <see cref="FairShareSettings.MaxQueuedPerTenant"/> items, and the rejection policy
    /// (Abort or Wait, or <c>TryExecute</c>) refuses it.
    /// </summary>
    TenantLimit = 7,
}
