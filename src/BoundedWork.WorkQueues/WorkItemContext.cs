namespace BoundedWork.Hosting;

/// <summary>
/// What a work-queue handler knows about the item it is handling: inject it into the handler (it is scoped, and each
/// attempt has its own scope). <see cref="ItemId"/> is the key for idempotent handlers: delivery can repeat (a retry,
/// or, with durable storage, a node that crashed after the handler ran), the id does not change.
/// </summary>
public sealed class WorkItemContext
{
    /// <summary>Gets the name of the queue the item belongs to; empty outside a handler's attempt.</summary>
    public string QueueName { get; internal set; } = string.Empty;

    /// <summary>
    /// Gets the item's id: with durable storage the row's id, stable across retries, processes and nodes; in memory
    /// an id unique within the process.
    /// </summary>
    public long ItemId { get; internal set; }

    /// <summary>Gets the number of this attempt, starting at 1 (with durable storage it counts deliveries on every node).</summary>
    public int Attempt { get; internal set; }

    /// <summary>Gets when the item was accepted by the queue.</summary>
    public DateTimeOffset EnqueuedAt { get; internal set; }

    /// <summary>Gets a value indicating whether the item is stored durably (it survives a crash and may be delivered again).</summary>
    public bool IsDurable { get; internal set; }

    /// <summary>
    /// Gets the W3C <c>traceparent</c> of the producer's <see cref="System.Diagnostics.Activity"/> when the item was
    /// enqueued, stored with a durable item (the same on every delivery, retries and requeues included), so the
    /// handler's work can join the producer's trace on whichever node runs it;
    /// <see langword="null"/> when the producer had no W3C activity, and for in-memory queues (whose items carry the
    /// producer's activity in their execution context instead).
    /// </summary>
    public string? TraceParent { get; internal set; }

    /// <summary>Gets the W3C <c>tracestate</c> stored with <see cref="TraceParent"/>; <see langword="null"/> when there was none.</summary>
    public string? TraceState { get; internal set; }

    /// <summary>The longest delay <see cref="Snooze"/> accepts: 30 days.</summary>
    public static readonly TimeSpan MaxSnooze = TimeSpan.FromDays(30);

    /// <summary>Gets the delay the handler asked for with <see cref="Snooze"/> in this attempt, or <see langword="null"/>.</summary>
    public TimeSpan? SnoozedFor { get; private set; }

    /// <summary>
    /// Asks for the item to run again after <paramref name="delay"/>, without counting a failed attempt: when the
    /// handler then returns (without throwing), the item is neither handled nor retried now; it waits, holding no worker
    /// and no queue slot (and still holding its ordering key), and runs again with the same attempt number. The shape
    /// for a downstream that answers "try again in 30 seconds". Snoozes are counted
    /// (<c>boundedwork.workqueue.items.snoozed</c>; for a durable item, <c>boundedwork.storage.snoozed</c>). An
    /// in-memory item still snoozing when the host stops becomes a dead letter (reason ShutDown). A durable item is
    /// stored scheduled: its run time moves by the delay, its attempts are unchanged, and any node runs it then; a
    /// cancellation asked while it ran cancels it instead.
    /// </summary>
    /// <param name="delay">How long to wait: positive, at most <see cref="MaxSnooze"/>. Calling again replaces it.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="delay"/> is not positive or above <see cref="MaxSnooze"/>.</exception>
    /// <exception cref="InvalidOperationException">Outside a handler's attempt.</exception>
    public void Snooze(TimeSpan delay)
    {
        if (delay <= TimeSpan.Zero || delay > MaxSnooze)
        {
            throw new ArgumentOutOfRangeException(nameof(delay), delay, $"A snooze's delay must be positive and at most {MaxSnooze.TotalDays} days.");
        }

        if (Attempt == 0)
        {
            throw new InvalidOperationException("Snooze is called from a work-queue handler, during its attempt.");
        }

        SnoozedFor = delay;
    }
}
