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
}
