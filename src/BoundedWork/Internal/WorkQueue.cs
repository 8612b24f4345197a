using System.Collections.Concurrent;

namespace BoundedWork.Internal;

/// <summary>
/// The executor's queue: a <see cref="ConcurrentQueue{T}"/> of items behind two monotonic counters, one written by
/// producers and one by consumers, so that each side's atomic step touches its own cache line.
/// </summary>
/// <remarks>
/// <para>The counters and what they mean:</para>
/// <list type="bullet">
/// <item><description><c>_admitted</c>: how many items were ever admitted (bits 0-61), plus the <c>Shutdown</c> flag
/// (bit 62): once it is set nothing more is admitted, so the count is final.</description></item>
/// <item><description><c>_claimed</c>: how many items were ever claimed (bits 0-61), plus the <c>Abandoned</c> flag
/// (bit 62): once it is set nothing more is claimed.</description></item>
/// <item><description><c>_claimedEstimate</c>: a lower bound of <c>_claimed</c> that producers keep, so they read the
/// consumers' line only when the queue looks full.</description></item>
/// </list>
/// <para>
/// Invariant: <c>claimed &lt;= admitted</c>, and the queue length is <c>admitted - claimed</c>, never above the
/// capacity in force when each item was admitted. A producer admits against <c>admitted - estimate</c>, which is never
/// below the true length, so the bound holds without reading the consumers' counter on every item. An admission
/// reserves its slot first and writes the item right after (nothing that can fail runs between the two), so a consumer
/// that claimed an item may find it not yet written and spins for those few instructions.
/// </para>
/// <para>
/// Abandoning after shutdown moves <c>claimed</c> up to the (final) <c>admitted</c> in one step and sets
/// <c>Abandoned</c> in the same step: the caller then reads exactly the items it claimed, and no consumer can
/// start another. Because each item passes each counter exactly once, a reader that reads the consumers' counter
/// before the producers' one sees every item in exactly one place, which is what makes the executor's statistics
/// consistent. Items are claimed in admission order; nothing here blocks, allocates per item or needs the ThreadPool.
/// </para>
/// </remarks>
internal sealed class WorkQueue
{
    private const long CountMask = (1L << 62) - 1;
    private const long FlagBit = 1L << 62;

    private readonly ConcurrentQueue<QueuedItem> _items = new();
    private readonly AdmissionStamps _stamps;
    private PaddedInt64 _admitted;
    private PaddedInt64 _claimed;
    private PaddedInt64 _claimedEstimate;

    /// <summary>Initializes a new instance of the <see cref="WorkQueue"/> class.</summary>
    /// <param name="capacity">The initial capacity (sizes the admission stamps; admission takes the capacity in force).</param>
    public WorkQueue(int capacity) => _stamps = new AdmissionStamps(capacity);

    /// <summary>Gets how many items were ever admitted. Read after <see cref="Claims"/> for a consistent pair.</summary>
    public long Admissions => Volatile.Read(ref _admitted.Value) & CountMask;

    /// <summary>Gets how many items were ever claimed (by workers, evictions and abandoning).</summary>
    public long Claims => Volatile.Read(ref _claimed.Value) & CountMask;

    /// <summary>Gets the number of queued, unclaimed items.</summary>
    public int Count
    {
        get
        {
            var claims = Claims;
            return (int)(Admissions - claims);
        }
    }

    /// <summary>Gets a value indicating whether at least <paramref name="slots"/> of <paramref name="capacity"/> are free.</summary>
    public bool HasRoomFor(int capacity, int slots) => Count <= (long)capacity - slots;

    /// <summary>Gets a value indicating whether admission has stopped for good.</summary>
    public bool IsShutdown => (Volatile.Read(ref _admitted.Value) & FlagBit) != 0;

    /// <summary>Gets a value indicating whether claims have stopped for good (a shutdown deadline passed).</summary>
    public bool IsAbandoned => (Volatile.Read(ref _claimed.Value) & FlagBit) != 0;

    /// <summary>Reserves a slot if fewer than <paramref name="capacity"/> items are queued and shutdown has not begun.</summary>
    /// <param name="capacity">The limit; <see cref="int.MaxValue"/> to ignore it (an eviction already made room).</param>
    /// <param name="ticket">The admitted item's ticket (its place in admission order), to pass to <see cref="Write"/>.</param>
    public Admission TryAdmit(int capacity, out long ticket)
    {
        var admitted = Volatile.Read(ref _admitted.Value);
        while (true)
        {
            ticket = admitted;
            if ((admitted & FlagBit) != 0)
            {
                return Admission.ShutDown;
            }

            if (admitted - Volatile.Read(ref _claimedEstimate.Value) >= capacity)
            {
                // Looks full: learn how far the consumers really are (a lower bound is all the estimate promises,
                // so racing producers that write an older value only make someone look again).
                var claimed = Claims;
                Volatile.Write(ref _claimedEstimate.Value, claimed);
                if (admitted - claimed >= capacity)
                {
                    return Admission.Full;
                }
            }

            var previous = Interlocked.CompareExchange(ref _admitted.Value, admitted + 1, admitted);
            if (previous == admitted)
            {
                return Admission.Admitted;
            }

            admitted = previous;
        }
    }

    /// <summary>Writes an item whose slot <see cref="TryAdmit"/> reserved, with the ticket it got.</summary>
    public void Write(long ticket, in QueuedItem item)
    {
        _stamps.Record(ticket, item.EnqueuedTimestamp);
        _items.Enqueue(item);
    }

    /// <summary>Makes the queue ready for a new capacity (admission itself takes the capacity in force).</summary>
    public void EnsureCapacity(int capacity) => _stamps.EnsureCapacity(capacity);

    /// <summary>Claims the oldest unclaimed item; fails when none is queued or the queue was abandoned.</summary>
    /// <param name="knownAdmissions">
    /// The caller's own lower bound of <see cref="Admissions"/>, refreshed only when it says the queue is empty, so a
    /// consumer reads the producers' counter only when it has caught up with them.
    /// </param>
    /// <param name="remaining">About how many items are still queued after this claim (never more than there are).</param>
    public bool TryClaim(ref long knownAdmissions, out long remaining)
    {
        var claimed = Volatile.Read(ref _claimed.Value);
        while (true)
        {
            remaining = 0;
            if ((claimed & FlagBit) != 0)
            {
                return false;
            }

            if (claimed >= knownAdmissions)
            {
                knownAdmissions = Admissions;
                if (claimed >= knownAdmissions)
                {
                    return false;
                }
            }

            var previous = Interlocked.CompareExchange(ref _claimed.Value, claimed + 1, claimed);
            if (previous == claimed)
            {
                remaining = knownAdmissions - claimed - 1;
                return true;
            }

            claimed = previous;
        }
    }

    /// <summary>Reads a claimed item: the oldest in the queue. Its writer may be a few instructions behind.</summary>
    public QueuedItem ReadClaimed()
    {
        if (_items.TryDequeue(out var item))
        {
            return item;
        }

        var spinner = default(SpinWait);
        do
        {
            spinner.SpinOnce(sleep1Threshold: -1);
        }
        while (!_items.TryDequeue(out item));
        return item;
    }

    /// <summary>Gets a value indicating whether any written item is still unread (for tests; does not peek).</summary>
    public bool HasUnreadItems => !_items.IsEmpty;

    /// <summary>
    /// Gets when the oldest queued item was enqueued, given a <see cref="Claims"/> reading with items queued behind it;
    /// false when that item is being written right now. Never peeks at the items (see <see cref="AdmissionStamps"/>).
    /// </summary>
    public bool TryReadOldestStamp(long claims, out long enqueuedTimestamp) => _stamps.TryRead(claims, out enqueuedTimestamp);

    /// <summary>Stops admission for good. Returns false if shutdown had already begun.</summary>
    public bool Freeze()
    {
        var admitted = Volatile.Read(ref _admitted.Value);
        while ((admitted & FlagBit) == 0)
        {
            var previous = Interlocked.CompareExchange(ref _admitted.Value, admitted | FlagBit, admitted);
            if (previous == admitted)
            {
                return true;
            }

            admitted = previous;
        }

        return false;
    }

    /// <summary>
    /// Stops admission and claims for good and claims every queued item in the same step as the claims stop, so
    /// nothing queued can start after this. Returns how many items it claimed; the caller reads exactly that many
    /// with <see cref="ReadClaimed"/>. A second call claims nothing.
    /// </summary>
    public int Abandon()
    {
        Freeze();
        var admitted = Admissions; // final: admission has stopped
        var claimed = Volatile.Read(ref _claimed.Value);
        while (true)
        {
            if ((claimed & FlagBit) != 0)
            {
                return 0;
            }

            var previous = Interlocked.CompareExchange(ref _claimed.Value, admitted | FlagBit, claimed);
            if (previous == claimed)
            {
                return (int)(admitted - claimed);
            }

            claimed = previous;
        }
    }
}

/// <summary>The result of <see cref="WorkQueue.TryAdmit"/>.</summary>
internal enum Admission
{
    Admitted,
    Full,
    ShutDown,
}
