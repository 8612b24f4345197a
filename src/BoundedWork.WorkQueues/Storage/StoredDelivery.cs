namespace BoundedWork.Hosting;

/// <summary>One delivery of a stored item, as a storage hands it to <see cref="WorkQueueStorageContext{T}.Run"/>.</summary>
/// <param name="ItemId">The item's id in the storage (the handler's <see cref="WorkItemContext.ItemId"/>).</param>
/// <param name="Attempt">
/// The delivery's number: 1 for the first, counting every claim of the item, those that ended without an outcome (a
/// lost node) included (the handler's <see cref="WorkItemContext.Attempt"/>).
/// </param>
/// <param name="AttemptBase">
/// The item's attempts when it was last requeued from the dead letters (zero if never): the retries left are counted
/// from there, so a requeued item gets the queue's retries again.
/// </param>
/// <param name="EnqueuedAt">When the item was enqueued.</param>
/// <param name="TraceParent">The producer's W3C <c>traceparent</c>, stored at enqueue; <see langword="null"/> when there was none.</param>
/// <param name="TraceState">The producer's W3C <c>tracestate</c>, stored at enqueue.</param>
/// <param name="Payload">The item as the storage keeps it (for example JSON), passed on to its dead letter (<see cref="DeadLetter{T}.Payload"/>).</param>
public readonly record struct StoredDelivery(long ItemId, int Attempt, int AttemptBase, DateTimeOffset EnqueuedAt, string? TraceParent = null, string? TraceState = null, string? Payload = null);

/// <summary>What became of a delivery, for the storage to record.</summary>
public enum StoredOutcomeKind
{
    /// <summary>The handler succeeded (also when a cancellation was asked meanwhile but the handler finished): record the item completed.</summary>
    Completed = 0,

    /// <summary>The handler failed and the item has deliveries left: store it to run again after <see cref="StoredOutcome.RetryDelay"/>.</summary>
    Retry = 1,

    /// <summary>The handler failed at the item's last delivery: the dead letter has been delivered to the handlers; record the item as a dead letter.</summary>
    DeadLettered = 2,

    /// <summary>The handler stopped (or failed) after the item was cancelled: record the item cancelled; it is not retried.</summary>
    Cancelled = 3,

    /// <summary>
    /// The handler succeeded after asking to run again later (<see cref="WorkItemContext.Snooze"/>): store the item to
    /// run again after <see cref="StoredOutcome.RetryDelay"/>, without counting this delivery as an attempt.
    /// </summary>
    Snoozed = 4,
}

/// <summary>The outcome of one delivery, as <see cref="WorkQueueStorageContext{T}.Run"/> decided it.</summary>
/// <param name="Kind">What to record.</param>
/// <param name="RetryDelay">For <see cref="StoredOutcomeKind.Retry"/>, how long the item waits before its next delivery (the queue's exponential backoff with jitter); for <see cref="StoredOutcomeKind.Snoozed"/>, the delay the handler asked for; zero otherwise.</param>
/// <param name="Exception">The handler's exception, for every kind but <see cref="StoredOutcomeKind.Completed"/> and <see cref="StoredOutcomeKind.Snoozed"/>.</param>
public readonly record struct StoredOutcome(StoredOutcomeKind Kind, TimeSpan RetryDelay, Exception? Exception);
