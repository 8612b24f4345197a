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
}

/// <summary>An item of a typed work queue that will never be handled, and why.</summary>
/// <typeparam name="T">The item type.</typeparam>
public sealed class DeadLetter<T>
{
    internal DeadLetter(string queueName, T item, DeadLetterReason reason, RejectionReason? rejectionReason, Exception? exception, int attempts)
    {
        QueueName = queueName;
        Item = item;
        Reason = reason;
        RejectionReason = rejectionReason;
        Exception = exception;
        Attempts = attempts;
    }

    /// <summary>Gets the name of the queue the item was submitted to.</summary>
    public string QueueName { get; }

    /// <summary>Gets the item.</summary>
    public T Item { get; }

    /// <summary>Gets why the item was not handled.</summary>
    public DeadLetterReason Reason { get; }

    /// <summary>Gets the executor's reason when the executor did not run the item; otherwise <see langword="null"/>.</summary>
    public RejectionReason? RejectionReason { get; }

    /// <summary>Gets the exception of the last failed attempt, if any.</summary>
    public Exception? Exception { get; }

    /// <summary>Gets how many times the handler was called for the item.</summary>
    public int Attempts { get; }

    /// <inheritdoc/>
    public override string ToString() => $"{QueueName}: {Reason} after {Attempts} attempt(s): {Item}";
}
