using System.Collections.Concurrent;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The leases this node keeps: the deliveries it holds, by item id, with their delivery tokens (renewed by the lease
/// heartbeat, and no others), and, until a delivery's outcome is posted, the delivery itself (where a cancellation
/// request finds its item). See docs/durable-invariants.md, I7.
/// </summary>
/// <remarks>
/// <para>
/// <b>Invariant (I7).</b> A delivery's lease is in the book from when the node holds it until the writer has written
/// its outcome (or, at a stop, given up on it); its item from when it is held until its outcome is posted. So the
/// heartbeat renews exactly the rows this node holds, by id and delivery token: a row leased to this node that it does
/// not hold (left by a claim or an outcome whose answer was lost) is not renewed, expires and is reaped; and a
/// cancellation reaches a delivery only while its outcome is still to be decided.
/// </para>
/// <para>
/// <b>Lock.</b> None: two concurrent dictionaries, each entry added and removed by the one party that owns that step
/// (removal compares the delivery too, so a later delivery of the same id is never removed by an earlier one's end).
/// </para>
/// </remarks>
internal sealed class LeaseBook
{
    private readonly ConcurrentDictionary<long, StoredItem> _deliveries = new();
    private readonly ConcurrentDictionary<long, long> _leases = new();

    /// <summary>Gets a value indicating whether the node holds no lease.</summary>
    public bool IsEmpty => _leases.IsEmpty;

    /// <summary>A delivery is held: its lease is kept, and a cancellation finds it.</summary>
    public void Hold(StoredItem item)
    {
        _leases[item.Id] = item.Delivery;
        _deliveries[item.Id] = item;
    }

    /// <summary>A delivery is held only to be released (the node stops): its lease is kept until the release is written.</summary>
    public void Lease(StoredItem item) => _leases[item.Id] = item.Delivery;

    /// <summary>The delivery's outcome is posted: a cancellation no longer concerns this node.</summary>
    public void Posted(StoredItem item) => _deliveries.TryRemove(new KeyValuePair<long, StoredItem>(item.Id, item));

    /// <summary>The delivery's outcome is written (or given up on): its lease is no longer renewed.</summary>
    public void Settled(HeldDelivery delivery) => _leases.TryRemove(new KeyValuePair<long, long>(delivery.Id, delivery.Delivery));

    /// <summary>Finds the delivery of item <paramref name="id"/> whose outcome is not posted yet.</summary>
    public bool TryGetDelivery(long id, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out StoredItem? item) => _deliveries.TryGetValue(id, out item);

    /// <summary>Gets the leases to renew now: item id and delivery token.</summary>
    public KeyValuePair<long, long>[] Snapshot() => _leases.ToArray();
}
