using System.Diagnostics;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The node's room: how many deliveries it holds, and how much room the claims in flight (the claim loop's, a
/// hand-off's) have booked, against its claim limit (the executor's workers times the claims per worker, within
/// what the executor can hold). See docs/durable-invariants.md, I5.
/// </summary>
/// <remarks>
/// <para>
/// <b>Counters.</b> <c>held</c>: deliveries claimed and held by this node whose outcome (or release) is not yet
/// written; one per claimed row, incremented when the row is held (<see cref="Hold()"/>), decremented only when the
/// outcome writer has written its outcome or given up on it at a stop (<see cref="Settled"/>). <c>booked</c>: room
/// booked by claims whose items are not held yet (<see cref="Book"/>, <see cref="BookPrefetch"/>), given back with
/// <see cref="Unbook"/> once those items are held (counted twice meanwhile, never too few).
/// </para>
/// <para>
/// <b>Invariant (I5).</b> <c>held &gt;= 0</c> and <c>booked &gt;= 0</c>. A booking never takes room beyond
/// <c>limit - held - booked + settling</c>, where <c>settling</c> are held items whose outcomes the same transaction
/// writes; so, limits unchanged, <c>held + booked &lt;= limit</c> holds after every claim, except for prefetched items
/// (<see cref="BookPrefetch"/>): at most one per key beyond the limit, while a claim of the claim loop is in flight,
/// and never executing. A lowered limit is not a breach: the node books nothing until it is below it again.
/// </para>
/// <para>
/// <b>Lock.</b> <see cref="SyncObj"/> guards <c>booked</c>; <c>held</c> is changed with interlocked operations only (it
/// is touched per item, a booking per claim). No other lock is taken under it; the claim limit is read under it.
/// </para>
/// </remarks>
internal sealed class NodeRoom(Func<int> claimLimit)
{
    private int _held;
    private int _booked;

    /// <summary>Gets the lock over the booked room.</summary>
    private Lock SyncObj { get; } = new();

    /// <summary>Gets the deliveries this node holds: claimed, their outcome not yet written.</summary>
    public int Held => Volatile.Read(ref _held);

    /// <summary>Gets the room booked by claims in flight.</summary>
    public int Booked
    {
        get
        {
            lock (SyncObj)
            {
                return _booked;
            }
        }
    }

    /// <summary>Gets the claim limit in force now.</summary>
    public int Limit => claimLimit();

    /// <summary>
    /// Books room for a claim of up to <paramref name="wanted"/> items: the limit minus what the node holds and what
    /// other claims in flight booked, plus <paramref name="settling"/> held items whose outcomes the same transaction
    /// writes. Returns the room (zero or less: none); give it back with <see cref="Unbook"/> once the claimed items are held.
    /// </summary>
    public int Book(int wanted, int settling)
    {
        lock (SyncObj)
        {
            var room = Math.Min(wanted, claimLimit() - Volatile.Read(ref _held) - _booked + settling);
            _booked += Math.Max(room, 0);
            AssertInvariantsLocked();
            return room;
        }
    }

    /// <summary>
    /// Books room for up to <paramref name="prefetches"/> prefetched items (one per key, see <see cref="KeyBook"/>)
    /// beside the <paramref name="booked"/> room the same hand-off booked for its starts: within the limit minus what
    /// the node holds, plus the items the batch settles. Unlike <see cref="Book"/> it does not leave out the room a
    /// claim of the claim loop has booked (that claim books all the free room while its statement runs, and under a
    /// binding per-key limit usually finds nothing): for that moment the node may hold at most one item per prefetched
    /// key beyond its limit, never executing (I5). Returns the room booked (zero or more); give it back with <see cref="Unbook"/>.
    /// </summary>
    public int BookPrefetch(int prefetches, int settling, int booked)
    {
        lock (SyncObj)
        {
            var free = Math.Min(prefetches, claimLimit() - Volatile.Read(ref _held) + settling - Math.Max(booked, 0));
            _booked += Math.Max(free, 0);
            AssertInvariantsLocked();
            return Math.Max(free, 0);
        }
    }

    /// <summary>Gives back booked room (nothing when <paramref name="room"/> is zero or less).</summary>
    public void Unbook(int room)
    {
        if (room > 0)
        {
            lock (SyncObj)
            {
                _booked -= room;
                AssertInvariantsLocked();
            }
        }
    }

    /// <summary>Counts one claimed delivery as held.</summary>
    public void Hold() => Interlocked.Increment(ref _held);

    /// <summary>Counts <paramref name="count"/> claimed deliveries as held.</summary>
    public void Hold(int count) => Interlocked.Add(ref _held, count);

    /// <summary>The writer wrote (or, at a stop, gave up on) the outcomes of <paramref name="count"/> held deliveries.</summary>
    public void Settled(int count)
    {
        var held = Interlocked.Add(ref _held, -count);
        Debug.Assert(held >= 0, "I5: more deliveries settled than held");
    }

    /// <summary>Checks I5's counters (in Debug builds): called by the stress and model tests.</summary>
    [Conditional("DEBUG")]
    public void AssertInvariants()
    {
        lock (SyncObj)
        {
            AssertInvariantsLocked();
        }
    }

    [Conditional("DEBUG")]
    private void AssertInvariantsLocked()
    {
        Debug.Assert(SyncObj.IsHeldByCurrentThread);
        Debug.Assert(_booked >= 0, "I5: booked room below zero");
        Debug.Assert(Volatile.Read(ref _held) >= 0, "I5: held deliveries below zero");
    }
}
