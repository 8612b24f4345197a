namespace BoundedWork.Hosting;

/// <summary>Why an item of a typed work queue was never handled.</summary>
public enum DeadLetterReason
{
    /// <summary>The handler failed on the last attempt the resilience pipeline allowed (or with an error it does not retry).</summary>
    Failed = 0,

    /// <summary>The queue's rejection policy refused the item (queue full, Wait timed out, discarded or evicted).</summary>
    Rejected = 1,

    /// <summary>The host was stopping: the item was still queued at the shutdown deadline, waiting for a retry, or arrived after shutdown.</summary>
    ShutDown = 2,

    /// <summary>
    /// Durable storage only: the stored payload could not be read as the item type (<see cref="DeadLetter{T}.Item"/>
    /// is the default value; <see cref="DeadLetter{T}.Payload"/> holds the stored text and
    /// <see cref="DeadLetter{T}.Exception"/> the serializer's error).
    /// </summary>
    Malformed = 3,

    /// <summary>
    /// Durable storage only: the item was claimed by a node whose lease expired (it crashed or hung) more times than the
    /// queue allows attempts, so it is not delivered again; it may be the item that brings nodes down.
    /// </summary>
    LeaseExpired = 4,
}

/// <summary>An item of a typed work queue that will never be handled, and why.</summary>
/// <typeparam name="T">The item type.</typeparam>
public sealed class DeadLetter<T>
{
    /// <summary>Creates a dead letter (a storage creates those it finds itself, for example a malformed payload or an expired last lease).</summary>
    /// <param name="queueName">The queue's name.</param>
    /// <param name="itemId">The item's id.</param>
    /// <param name="item">The item; <see langword="default"/> when its payload could not be read.</param>
    /// <param name="reason">Why the item will never be handled.</param>
    /// <param name="rejectionReason">Why the executor did not run it, for <see cref="DeadLetterReason.Rejected"/>.</param>
    /// <param name="exception">The last exception, if any.</param>
    /// <param name="attempts">How many times the handler ran.</param>
    /// <param name="payload">The stored payload, for a durable queue's item.</param>
    public DeadLetter(string queueName, long itemId, T item, DeadLetterReason reason, RejectionReason? rejectionReason, Exception? exception, int attempts, string? payload = null)
    {
        QueueName = queueName;
        ItemId = itemId;
        Payload = payload;
        Item = item;
        Reason = reason;
        RejectionReason = rejectionReason;
        Exception = exception;
        Attempts = attempts;
    }

    /// <summary>Gets the name of the queue the item was submitted to.</summary>
    public string QueueName { get; }

    /// <summary>Gets the item's id: the same as <see cref="WorkItemContext.ItemId"/> in the handler's attempts.</summary>
    public long ItemId { get; }

    /// <summary>Gets the item; the default value when <see cref="Reason"/> is <see cref="DeadLetterReason.Malformed"/>.</summary>
    public T Item { get; }

    /// <summary>Gets the stored payload (JSON) with durable storage; <see langword="null"/> for in-memory queues.</summary>
    public string? Payload { get; }

    /// <summary>Gets why the item was not handled.</summary>
    public DeadLetterReason Reason { get; }

    /// <summary>Gets the executor's reason when the executor did not run the item; otherwise <see langword="null"/>.</summary>
    public RejectionReason? RejectionReason { get; }

    /// <summary>Gets the exception of the last failed attempt, if any.</summary>
    public Exception? Exception { get; }

    /// <summary>Gets how many times the handler was called for the item.</summary>
    public int Attempts { get; }

    /// <inheritdoc/>
    public override string ToString() => $"{QueueName}: item {ItemId} {Reason} after {Attempts} attempt(s): {(object?)Item ?? Payload}";
}
