using System.Runtime.CompilerServices;

namespace BoundedWork.Internal;

/// <summary>
/// The executor's queue: a ring of item slots indexed by ticket, behind two monotonic counters that hand out the
/// tickets, one advanced by producers and one by consumers, so that each side's atomic step touches its own cache line.
/// </summary>
/// <remarks>
/// <para>The counters and what they mean:</para>
/// <list type="bullet">
/// <item><description><c>_admitted</c>: how many items were ever admitted (bits 0-60), plus <c>ShutdownBit</c>
/// (bit 62): once it is set nothing more is admitted, so the count is final; and <c>GrowingBit</c> (bit 61),
/// set for the few instructions it takes to install a longer ring, while no ticket is handed out.</description></item>
/// <item><description><c>_claimed</c>: how many items were ever claimed (bits 0-60), plus <c>AbandonedBit</c>
/// (bit 62): once it is set nothing more is claimed.</description></item>
/// <item><description><c>_claimedEstimate</c>: a lower bound of <c>_claimed</c> that producers keep, so they read the
/// consumers' line only when the queue looks full.</description></item>
/// </list>
/// <para>
/// Invariant: <c>claimed &lt;= admitted</c>, and the queue length is <c>admitted - claimed</c>, never above the
/// capacity in force when each item was admitted, nor above the current ring's length. A producer admits against
/// <c>admitted - estimate</c>, which is never below the true length, so the bounds hold without reading the consumers'
/// counter on every item.
/// </para>
/// <para>
/// The admission counter's old value is the item's ticket <c>t</c>; the claim counter's old value is the ticket a
/// consumer reads. Ticket <c>t</c> lives in slot <c>t mod length</c> of the ring that starts at or before <c>t</c>.
/// Each slot has a sequence number that says whose turn it is (the bounded queue of D. Vyukov): <c>t</c> means free
/// for ticket <c>t</c>'s producer, <c>t + 1</c> means written and waiting for ticket <c>t</c>'s consumer, and the
/// consumer hands it on to ticket <c>t + length</c>. Because the queue is never longer than the ring, the consumer of
/// <c>t - length</c> has always claimed its ticket when the producer of <c>t</c> arrives; if it is descheduled before
/// it releases the slot, the producer waits for it. Each side waits only for the one thread that owns the ticket
/// before its own in that slot, and nothing is ever allocated for it. (A <c>ConcurrentQueue</c>, used here before,
/// allocates a new segment twice as long instead, which on an oversubscribed machine grew it to half a million
/// slots for a queue of 1,024.)
/// </para>
/// <para>
/// The ring is as long as the longest queue so far (a power of two, at least 16 and at least the capacity up to
/// 1,024, at most 2^30: past that the queue reports itself full), and grows by installing a longer ring that starts
/// at the next ticket, under <c>GrowingBit</c>. Tickets
/// before it stay in the older ring, so nothing is copied and no one waits for a reader; the older rings are kept
/// (their slots cleared), at most as long together as the newest.
/// </para>
/// <para>
/// Abandoning after shutdown moves <c>claimed</c> up to the (final) <c>admitted</c> in one step and sets
/// <c>AbandonedBit</c> in the same step: the caller then reads exactly the tickets it claimed, and no consumer can
/// start another. Because each item passes each counter exactly once, a reader that reads the consumers' counter
/// before the producers' one sees every item in exactly one place, which is what makes the executor's statistics
/// consistent. Items are claimed in admission order; nothing here blocks, allocates per item or needs the ThreadPool.
/// </para>
/// </remarks>
internal sealed class TicketQueue
{
    private const long CountMask = (1L << 61) - 1;
    private const long GrowingBit = 1L << 61;
    private const long ShutdownBit = 1L << 62; // in _admitted: admission has stopped for good
    private const long AbandonedBit = 1L << 62; // in _claimed: claims have stopped for good
    private const int MinRingLength = 16;
    private const int InitialRingLimit = 1024;
    private const int MaxRingLength = 1 << 30;

    private readonly object _growLock = new();
    private PaddedInt64 _admitted;
    private PaddedInt64 _claimed;
    private PaddedInt64 _claimedEstimate;
    private Ring _ring;

    /// <summary>Initializes a new instance of the <see cref="TicketQueue"/> class.</summary>
    /// <param name="capacity">The initial capacity (sizes the first ring; admission takes the capacity in force).</param>
    public TicketQueue(int capacity)
    {
        _ring = new Ring(RingLengthFor(Math.Min(capacity, InitialRingLimit)), startTicket: 0, previous: null);
    }

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

    /// <summary>Gets the length of the newest ring (for tests).</summary>
    public int RingLength => Volatile.Read(ref _ring).Length;

    /// <summary>Gets a value indicating whether at least <paramref name="slots"/> of <paramref name="capacity"/> are free.</summary>
    public bool HasRoomFor(int capacity, int slots) => Count <= (long)capacity - slots;

    /// <summary>Gets a value indicating whether admission has stopped for good.</summary>
    public bool IsShutdown => (Volatile.Read(ref _admitted.Value) & ShutdownBit) != 0;

    /// <summary>Gets a value indicating whether claims have stopped for good (a shutdown deadline passed).</summary>
    public bool IsAbandoned => (Volatile.Read(ref _claimed.Value) & AbandonedBit) != 0;

    /// <summary>Gets a value indicating whether any written item is still unread (for tests; scans the rings).</summary>
    public bool HasUnreadItems
    {
        get
        {
            for (var ring = Volatile.Read(ref _ring); ring is not null; ring = ring.Previous)
            {
                if (ring.HasWrittenSlot())
                {
                    return true;
                }
            }

            return false;
        }
    }

    /// <summary>Reserves a slot if fewer than <paramref name="capacity"/> items are queued and shutdown has not begun.</summary>
    /// <param name="capacity">The limit; <see cref="int.MaxValue"/> to ignore it (an eviction already made room).</param>
    /// <param name="ticket">The admitted item's ticket (its place in admission order), to pass to <see cref="Write"/>.</param>
    public Admission TryAdmit(int capacity, out long ticket)
    {
        var admitted = Volatile.Read(ref _admitted.Value);
        while (true)
        {
            ticket = admitted & CountMask;
            if ((admitted & ShutdownBit) != 0)
            {
                return Admission.ShutDown;
            }

            if ((admitted & GrowingBit) != 0)
            {
                // A longer ring is being installed (a few instructions under a lock): wait for it.
                admitted = WaitWhileGrowing();
                continue;
            }

            var ringLength = Volatile.Read(ref _ring).Length;
            if (ticket - Volatile.Read(ref _claimedEstimate.Value) >= Math.Min(capacity, ringLength))
            {
                // Looks full: learn how far the consumers really are (a lower bound is all the estimate promises,
                // so racing producers that write an older value only make someone look again).
                var claimed = Claims;
                Volatile.Write(ref _claimedEstimate.Value, claimed);
                if (ticket - claimed >= capacity)
                {
                    return Admission.Full;
                }

                if (ticket - claimed >= ringLength)
                {
                    if (ringLength >= MaxRingLength)
                    {
                        return Admission.Full;
                    }

                    // Room by the capacity, but the ring is full: install a longer one, then try again.
                    Grow(ringLength);
                    admitted = Volatile.Read(ref _admitted.Value);
                    continue;
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
    public void Write(long ticket, in QueuedItem item) => RingFor(ticket).Write(ticket, item);

    /// <summary>Claims the oldest unclaimed item; fails when none is queued or the queue was abandoned.</summary>
    /// <param name="knownAdmissions">
    /// The caller's own lower bound of <see cref="Admissions"/>, refreshed only when it says the queue is empty, so a
    /// consumer reads the producers' counter only when it has caught up with them.
    /// </param>
    /// <param name="ticket">The claimed item's ticket, to pass to <see cref="ReadClaimed"/>.</param>
    /// <param name="remaining">About how many items are still queued after this claim (never more than there are).</param>
    public bool TryClaim(ref long knownAdmissions, out long ticket, out long remaining)
    {
        var claimed = Volatile.Read(ref _claimed.Value);
        while (true)
        {
            ticket = claimed & CountMask;
            remaining = 0;
            if ((claimed & AbandonedBit) != 0)
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

    /// <summary>Reads (and frees the slot of) a claimed item. Its writer may be a few instructions behind.</summary>
    public QueuedItem ReadClaimed(long ticket) => RingFor(ticket).Read(ticket);

    /// <summary>
    /// Gets when the oldest queued item was enqueued, given a <see cref="Claims"/> reading with items queued behind it:
    /// read from the item's slot without claiming it. False when that item is not written yet (its producer is between
    /// admission and write) or no longer queued (a consumer claimed it meanwhile).
    /// </summary>
    public bool TryReadOldestStamp(long claims, out long enqueuedTimestamp) => RingFor(claims).TryReadStamp(claims, out enqueuedTimestamp);

    /// <summary>Stops admission for good. Returns false if shutdown had already begun.</summary>
    public bool Freeze()
    {
        var admitted = Volatile.Read(ref _admitted.Value);
        while ((admitted & ShutdownBit) == 0)
        {
            var previous = Interlocked.CompareExchange(ref _admitted.Value, admitted | ShutdownBit, admitted);
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
    /// nothing queued can start after this. Returns how many items it claimed, tickets <paramref name="firstTicket"/>
    /// onwards; the caller reads each with <see cref="ReadClaimed"/>. A second call claims nothing.
    /// </summary>
    public int Abandon(out long firstTicket)
    {
        Freeze();
        var admitted = Admissions; // final: admission has stopped
        var claimed = Volatile.Read(ref _claimed.Value);
        while (true)
        {
            firstTicket = claimed & CountMask;
            if ((claimed & AbandonedBit) != 0)
            {
                return 0;
            }

            var previous = Interlocked.CompareExchange(ref _claimed.Value, admitted | AbandonedBit, claimed);
            if (previous == claimed)
            {
                return (int)(admitted - claimed);
            }

            claimed = previous;
        }
    }

    private static int RingLengthFor(int items) =>
        Math.Max(MinRingLength, (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)Math.Max(items, 1)));

    /// <summary>The ring that holds a ticket: the newest ring that starts at or before it.</summary>
    private Ring RingFor(long ticket)
    {
        var ring = Volatile.Read(ref _ring);
        while (ticket < ring.StartTicket)
        {
            ring = ring.Previous!;
        }

        return ring;
    }

    private long WaitWhileGrowing()
    {
        var spinner = default(SpinWait);
        long admitted;
        while (((admitted = Volatile.Read(ref _admitted.Value)) & GrowingBit) != 0)
        {
            spinner.SpinOnce();
        }

        return admitted;
    }

    /// <summary>
    /// Installs a ring twice as long as <paramref name="seenLength"/>, starting at the next ticket, unless another
    /// producer already did. No ticket is handed out meanwhile, so every ticket maps to exactly one ring.
    /// </summary>
    private void Grow(int seenLength)
    {
        lock (_growLock)
        {
            var current = _ring;
            if (current.Length != seenLength)
            {
                return;
            }

            var admitted = Interlocked.Or(ref _admitted.Value, GrowingBit);
            try
            {
                Volatile.Write(ref _ring, new Ring(seenLength * 2, admitted & CountMask, current));
            }
            finally
            {
                Interlocked.And(ref _admitted.Value, ~GrowingBit);
            }
        }
    }

    /// <summary>One ring of slots: tickets from <see cref="StartTicket"/> on, ticket <c>t</c> in slot <c>t mod Length</c>.</summary>
    private sealed class Ring
    {
        private readonly Slot[] _slots;
        private readonly int _mask;

        public Ring(int length, long startTicket, Ring? previous)
        {
            _slots = new Slot[length];
            _mask = length - 1;
            StartTicket = startTicket;
            Previous = previous;
            for (var i = 0; i < length; i++)
            {
                // The first ticket at or after the start that maps to slot i.
                _slots[i].Sequence = startTicket + ((i - startTicket) & _mask);
            }
        }

        public int Length => _slots.Length;

        public long StartTicket { get; }

        public Ring? Previous { get; }

        public void Write(long ticket, in QueuedItem item)
        {
            ref var slot = ref _slots[ticket & _mask];
            if (Volatile.Read(ref slot.Sequence) != ticket)
            {
                // The consumer of the ticket one lap earlier has claimed it but not yet released the slot.
                WaitForSequence(ref slot, ticket);
            }

            slot.Item = item;
            Volatile.Write(ref slot.Sequence, ticket + 1);
        }

        public QueuedItem Read(long ticket)
        {
            ref var slot = ref _slots[ticket & _mask];
            if (Volatile.Read(ref slot.Sequence) != ticket + 1)
            {
                // Admitted, but its producer has not written it yet.
                WaitForSequence(ref slot, ticket + 1);
            }

            var item = slot.Item;

            // Forget the item's references (delegate, state, context) so the ring keeps nothing alive, but keep its
            // stamps: a statistics reader that checked this slot's sequence may still be reading them.
            slot.Item = item.WithoutReferences();
            Volatile.Write(ref slot.Sequence, ticket + _slots.Length);
            return item;
        }

        /// <summary>
        /// Reads when ticket <paramref name="ticket"/>'s item was enqueued, if it is written and not yet read: the
        /// slot's sequence says ticket + 1 both before and after the read, so the stamp is that item's.
        /// </summary>
        public bool TryReadStamp(long ticket, out long enqueuedTimestamp)
        {
            ref var slot = ref _slots[ticket & _mask];
            enqueuedTimestamp = 0;
            if (Volatile.Read(ref slot.Sequence) != ticket + 1)
            {
                return false;
            }

            enqueuedTimestamp = Volatile.Read(ref Unsafe.AsRef(in slot.Item.EnqueuedTimestamp));
            return Volatile.Read(ref slot.Sequence) == ticket + 1;
        }

        public bool HasWrittenSlot()
        {
            for (var i = 0; i < _slots.Length; i++)
            {
                // Free slots hold a ticket that maps to them; written ones that ticket plus one.
                if (((Volatile.Read(ref _slots[i].Sequence) - 1) & _mask) == i)
                {
                    return true;
                }
            }

            return false;
        }

        private static void WaitForSequence(ref Slot slot, long sequence)
        {
            // The thread this one waits for is at most a few instructions away unless it was descheduled right there:
            // spin, then yield, then sleep, so a long wait costs no CPU that the other thread might need to finish.
            var spinner = default(SpinWait);
            while (Volatile.Read(ref slot.Sequence) != sequence)
            {
                spinner.SpinOnce(sleep1Threshold: -1);
            }
        }

        private struct Slot
        {
            public QueuedItem Item;
            public long Sequence;
        }
    }
}

/// <summary>The result of <see cref="TicketQueue.TryAdmit"/>.</summary>
internal enum Admission
{
    Admitted,
    Full,
    ShutDown,
}
