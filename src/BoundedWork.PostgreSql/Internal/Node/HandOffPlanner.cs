namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The hand-off planner: what a hand-off (the claim in an outcome's transaction, <see cref="KeyedClaimSql.HandOff"/>)
/// may take, and what becomes of its items after the commit. It books room in the <see cref="NodeRoom"/>, takes
/// permits from the <see cref="ClusterPermits"/> and asks the <see cref="KeyBook"/> which keys may prefetch; it owns no
/// state of its own. See docs/durable-invariants.md, I2 (the hand-off) and I6 (its bookkeeping).
/// </summary>
/// <remarks>
/// <para>
/// <b>Invariant (I6).</b> A plan's room and permits are given back exactly once: all of them when the write fails
/// (<see cref="Failed"/>) or plans nothing; after the commit, the permits of the items it did not find
/// (<see cref="Committed"/>), and the room once the items it found are held (<see cref="Start"/>, <see cref="Stopping"/>).
/// Every plan that <see cref="Plan"/> returns, and only those, ends the key book's hand-off (<see cref="KeyBook.EndHandOff"/>)
/// exactly once; so, between claims, the room's booked count and the permits in use come back to what the held items account for.
/// </para>
/// <para>
/// <b>The order of the room.</b> Room for one successor per final keyed outcome of the batch first, then one prefetched
/// item per key that may prefetch, then the rest of the node's room (the items the claim loop would otherwise claim
/// after the commit, in a claim of its own); permits for all of it, under a start rate no more than the idle workers.
/// </para>
/// <para>
/// <b>Lock.</b> None of its own: each step takes the lock of the component it calls, one at a time (the key book's
/// takes the permits' after its own: the lock order).
/// </para>
/// </remarks>
internal sealed class HandOffPlanner(NodeRoom room, KeyBook book, ClusterPermits permits)
{
    /// <summary>
    /// Plans a hand-off for the <paramref name="keys"/> of a batch with <paramref name="finished"/> final keyed outcomes
    /// that settles <paramref name="settling"/> held items, on a node of <paramref name="workers"/> workers: books its
    /// room and takes its permits, or returns <see langword="null"/> (nothing taken) when the per-key limit is one or
    /// nothing is free. <paramref name="lapsedNow"/>: the node's grant lapsed at this take.
    /// </summary>
    public HandOffPlan? Plan(string[] keys, int finished, int settling, int workers, out bool lapsedNow)
    {
        lapsedNow = false;
        var perKey = permits.PerKey;
        if (perKey <= 1)
        {
            return null;
        }

        var prefetchKeys = book.BeginHandOff(keys); // keys that may prefetch: one more item each (I3)
        var booked = room.Book(finished, settling);
        var prefetches = prefetchKeys.Length > 0 ? room.BookPrefetch(prefetchKeys.Length, settling, booked) : 0;
        prefetchKeys = prefetches < prefetchKeys.Length ? prefetchKeys[..prefetches] : prefetchKeys;
        booked = Math.Max(booked, 0) + prefetches;
        if (booked > 0)
        {
            // And the rest of the node's room, for more eligible items of the same keys: items the claim loop would
            // otherwise claim after the commit, in a claim of their own (booked last: the successors and prefetches first).
            booked += Math.Max(room.Book(room.Limit, settling), 0);
        }

        if (booked <= 0)
        {
            book.EndHandOff();
            return null;
        }

        var take = permits.Take(permits.StartRoom(booked, workers)); // under a rate: idle workers only
        lapsedNow = take.LapsedNow;
        room.Unbook(booked - take.Count);
        if (take.Count <= 0)
        {
            book.EndHandOff();
            return null;
        }

        return new HandOffPlan(keys, take.Count, perKey, prefetchKeys.Length > 0 ? prefetchKeys : null) { Rated = take.Rated };
    }

    /// <summary>The write failed (nothing was claimed): gives back the plan's room and permits.</summary>
    public void Failed(HandOffPlan plan)
    {
        book.EndHandOff();
        permits.Return(plan.Count, plan.Rated);
        room.Unbook(plan.Count);
    }

    /// <summary>
    /// The write committed with <paramref name="claimed"/> items: gives back the permits of those it did not find.
    /// Returns <see langword="false"/> when it found none (the plan is done: its room is back too).
    /// </summary>
    public bool Committed(HandOffPlan plan, int claimed)
    {
        permits.Return(plan.Count - claimed, plan.Rated);
        if (claimed == 0)
        {
            book.EndHandOff();
            room.Unbook(plan.Count);
            return false;
        }

        return true;
    }

    /// <summary>
    /// The node is stopping: the <paramref name="claimed"/> items start nothing; they are held (their permits back)
    /// until the writer has written their releases.
    /// </summary>
    public void Stopping(HandOffPlan plan, int claimed)
    {
        book.EndHandOff();
        permits.Return(claimed, plan.Rated);
        room.Hold(claimed);
        room.Unbook(plan.Count);
    }

    /// <summary>
    /// The plan's items are held now (each counted by the room and, if it is to run, the key book): gives back the
    /// plan's room and sorts them. Those claimed to start at once, and prefetched items paired with a final end of their
    /// key that came meanwhile, go to <paramref name="start"/>; a prefetched item is kept by the key book while a
    /// partner of its key still runs here; the others go to <paramref name="release"/>.
    /// </summary>
    public void Start(HandOffPlan plan, List<StoredItem> claimed, List<StoredItem> start, ref List<StoredItem>? release)
    {
        room.Unbook(plan.Count); // held now: counted as held by the room
        foreach (var item in claimed)
        {
            if (!item.Prefetched)
            {
                start.Add(item);
            }
            else if (book.AcceptPrefetched(item, out var giveUp))
            {
                book.CountStarted();
                start.Add(item);
            }
            else if (giveUp)
            {
                (release ??= []).Add(item);
            }
        }

        book.EndHandOff();
    }
}
