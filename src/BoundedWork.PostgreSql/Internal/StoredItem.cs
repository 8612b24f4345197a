using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// One delivery of a stored item to this node: the claimed row, as the executor item's state. It ends exactly once:
/// it runs (and its outcome is written), or the executor never runs it and it is released back to the table.
/// A cancellation asked for the item (<see cref="RequestCancellation"/>) fires the token its handler gets, or, before
/// it starts, makes it end cancelled without running.
/// </summary>
[System.Diagnostics.CodeAnalysis.SuppressMessage("Design", "CA1001:Types that own disposable fields should be disposable",
    Justification = "The token source has no timer and its wait handle is never read, so it holds nothing to release; a cancellation may arrive after the delivery ended, which disposing would turn into an ObjectDisposedException.")]
internal sealed class StoredItem(IStoredItemOwner owner, long id, string payload, int attempts, int attemptBase, DateTimeOffset enqueuedAt, bool isOrdered, string? traceParent, string? traceState, string? orderingKey = null, long delivery = 0) : IWorkQueueDelivery, IDescribedWork
{
    private const int Claimed = 0;
    private const int Started = 1;
    private const int Released = 2;

    private readonly CancellationTokenSource _cancellation = new();
    private int _state;
    private int _cancellationRequested;

    public IStoredItemOwner Owner { get; } = owner;

    /// <summary>Gets or sets the delivery's <c>process</c> span (<see cref="DurableTracing"/>), ended when its outcome is posted; <see langword="null"/> untraced.</summary>
    public System.Diagnostics.Activity? Process { get; set; }

    public long Id { get; } = id;

    /// <summary>Gets the item's tenant as its claim read it (<see langword="null"/>: none), for the per-tenant outcome counts.</summary>
    public string? Tenant { get; init; }

    /// <summary>Gets or sets a value indicating whether the delivery holds a cluster permit (false while it waits in the node's reserve); set under the permits' lock.</summary>
    public bool HoldsPermit { get; set; } = true;

    /// <summary>Gets or sets when the item entered the node's reserve (a <see cref="TimeProvider"/> timestamp), for how long it has waited for a permit.</summary>
    public long ReservedAt { get; set; }

    /// <summary>Gets or sets a value indicating whether the hand-off claimed the item as its key's prefetched item (not to start until a handler of its key on this node ends with a final outcome).</summary>
    public bool Prefetched { get; set; }

    /// <summary>Gets or sets the item's priority as the plain claim read it (zero when not read): with <see cref="RunAt"/> and the id, its place in the claim order.</summary>
    public short Priority { get; set; }

    /// <summary>Gets or sets when the item became due, as the plain claim read it (default when not read).</summary>
    public DateTimeOffset RunAt { get; set; }

    /// <summary>The claim order: highest priority first, then the earliest due, then enqueue (id) order.</summary>
    public static int CompareClaimOrder(StoredItem a, StoredItem b)
    {
        var byPriority = b.Priority.CompareTo(a.Priority);
        if (byPriority != 0)
        {
            return byPriority;
        }

        var byRunAt = a.RunAt.CompareTo(b.RunAt);
        return byRunAt != 0 ? byRunAt : a.Id.CompareTo(b.Id);
    }

    /// <summary>Gets or sets the per-key limit the hand-off prefetched the item under: it starts only while the limit is at least that.</summary>
    public int PrefetchBound { get; set; }

    /// <summary>Gets or sets a value indicating whether the item is counted among the node's items of its key that run or are about to (a prefetched item's partners); set under the key book's lock.</summary>
    public bool KeyRunning { get; set; }

    public string Payload { get; } = payload;

    /// <summary>Gets what operators see for this delivery (running items, alarms): the handler, the item type, the item's id and key.</summary>
    public string WorkDescription => OrderingKey is null
        ? $"{Owner.DeliveryDescriptionPrefix} #{Id})"
        : $"{Owner.DeliveryDescriptionPrefix} #{Id}, key {OrderingKey})";

    /// <summary>Gets the delivery's number: the row's attempts after this claim; outcomes are written only for this delivery.</summary>
    public int Attempts { get; } = attempts;

    /// <summary>Gets the delivery's token: the row's <c>delivery</c> set by this claim; only this delivery's outcome and lease renewals touch the row.</summary>
    public long Delivery { get; } = delivery;

    /// <summary>Gets the row's attempts when it was last requeued from the dead letters (zero if never): the retries left are counted from there.</summary>
    public int AttemptBase { get; } = attemptBase;

    public DateTimeOffset EnqueuedAt { get; } = enqueuedAt;

    /// <summary>Gets a value indicating whether the item has an ordering key: its end may let the next item of its key run.</summary>
    public bool IsOrdered { get; } = isOrdered;

    /// <summary>Gets the item's ordering key (null: unkeyed, or not read by the statement that claimed it).</summary>
    public string? OrderingKey { get; } = orderingKey;

    /// <summary>Gets the producer's W3C traceparent, stored at enqueue; <see langword="null"/> when it had no W3C activity.</summary>
    public string? TraceParent { get; } = traceParent;

    /// <summary>Gets the producer's W3C tracestate, stored at enqueue.</summary>
    public string? TraceState { get; } = traceState;

    /// <summary>Gets the token the handler's attempt gets: it fires when someone cancels the item.</summary>
    public CancellationToken CancellationToken => _cancellation.Token;

    /// <summary>Gets a value indicating whether someone asked to cancel the item while this node held it.</summary>
    public bool IsCancellationRequested => Volatile.Read(ref _cancellationRequested) != 0;

    /// <summary>
    /// Someone asked to cancel the item (the listener or the heartbeat heard of it): fires the handler's token, once.
    /// Callbacks registered on the token run here; one that throws is reported to the caller, and the item's fate is
    /// decided as for any cancellation.
    /// </summary>
    /// <returns>The exception the token's callbacks threw, if any; <see langword="null"/> otherwise, or if already requested.</returns>
    public AggregateException? RequestCancellation()
    {
        if (Interlocked.Exchange(ref _cancellationRequested, 1) != 0)
        {
            return null;
        }

        try
        {
            _cancellation.Cancel();
            return null;
        }
        catch (AggregateException ex)
        {
            return ex;
        }
    }

    /// <summary>Marks the delivery as running; <see langword="false"/> if it was already released.</summary>
    public bool TryStart() => Interlocked.CompareExchange(ref _state, Started, Claimed) == Claimed;

    /// <summary>The executor refused, dropped or abandoned the delivery: the row goes back to ready at once.</summary>
    public Task OnNotRun(RejectionReason reason)
    {
        if (Interlocked.CompareExchange(ref _state, Released, Claimed) == Claimed)
        {
            Owner.Release(this);
        }

        return Task.CompletedTask;
    }

    public override string ToString() => $"stored item {Id} (delivery {Attempts})";
}

/// <summary>A delivery held by a node: its row's id and the delivery token its claim set (see <see cref="StoredItem.Delivery"/>).</summary>
internal readonly record struct HeldDelivery(long Id, long Delivery);

/// <summary>The queue that claimed a <see cref="StoredItem"/>.</summary>
internal interface IStoredItemOwner
{
    /// <summary>Gets what an operator reads for a delivery of this queue before its id and key: <c>Shop.LedgerHandler.Handle(PaymentNotice</c>.</summary>
    string DeliveryDescriptionPrefix { get; }

    /// <summary>Runs the delivery on the current worker thread.</summary>
    void Run(StoredItem item);

    /// <summary>Hands an unrun delivery back to the table.</summary>
    void Release(StoredItem item);
}
