using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// The fair-share scheduler: one first-in-first-out lane per tenant, served in weighted turn by deficit round robin
/// (Shreedhar and Varghese, 1995), each item costing one unit. Not thread-safe: <see cref="TenantBook"/> holds it
/// under its lock; the tests drive it directly.
/// </summary>
/// <remarks>
/// <para>
/// <b>State.</b> A lane exists while its tenant has an item queued, reserved (a producer on its way in) or running:
/// tenants come and go, and an idle one costs nothing. The round is the circular list of lanes with a backlog; the
/// cursor is the lane whose turn it is, and <c>_charged</c> says whether that lane has had its quantum for this turn. A
/// lane that becomes backlogged joins at the tail of the round, just before the cursor.
/// </para>
/// <para>
/// <b>The turn.</b> When the cursor reaches a lane that may start an item (its running count is below the per-tenant
/// bound), the lane's deficit grows by its weight, once per turn; each item served costs one; the turn ends when the
/// deficit is spent or the lane empties (an emptied lane leaves the round with a deficit of 0, so an idle tenant saves
/// no credit and its share goes to the others). A lane at its running bound is passed over with its deficit reset: it
/// is not backlogged in the scheduler's sense, since it could not start an item anyway.
/// </para>
/// <para>
/// <b>What follows.</b> (1) Nothing is lost or served twice: each enqueued item leaves exactly once, by
/// <see cref="TryDequeue"/> or one of the removals, and a lane is served oldest first. (2) While lanes i and j stay
/// backlogged and eligible, served(i)/w(i) and served(j)/w(j) differ by at most 2 turns' worth (a lane serves exactly
/// w items per full turn, so the difference is at most one turn in progress on each side). (3) No tenant waits forever:
/// an eligible backlogged lane is served within one round, at most the sum of the other lanes' weights of dequeues.
/// Each dequeue visits at most every lane once. Tests: <c>FairQueueProperties</c>.
/// </para>
/// </remarks>
/// <typeparam name="T">The items.</typeparam>
internal sealed class FairQueue<T>
{
    private readonly Dictionary<string, Lane> _lanes = new(StringComparer.Ordinal);
    private readonly LinkedList<Lane> _round = new();
    private LinkedListNode<Lane>? _cursor;
    private bool _charged;
    private Func<string, int> _weightOf;
    private int _maxRunning;

    /// <summary>Creates a scheduler.</summary>
    /// <param name="weightOf">A tenant's weight (at least 1).</param>
    /// <param name="maxRunning">The most items of one tenant running at once.</param>
    public FairQueue(Func<string, int> weightOf, int maxRunning)
    {
        _weightOf = weightOf;
        _maxRunning = maxRunning;
    }

    /// <summary>Gets the number of items queued, in every lane.</summary>
    public int Count { get; private set; }

    /// <summary>Gets the tenants with state (queued, reserved or running items).</summary>
    public IEnumerable<Lane> Lanes => _lanes.Values;

    /// <summary>Puts new weights and a new running bound in force; a lane's deficit is kept, its next quantum is the new weight.</summary>
    public void Apply(Func<string, int> weightOf, int maxRunning)
    {
        _weightOf = weightOf;
        _maxRunning = maxRunning;
        foreach (var lane in _lanes.Values)
        {
            lane.Weight = weightOf(lane.Tenant);
        }
    }

    /// <summary>Gets a tenant's lane, or <see langword="null"/> when it has no state.</summary>
    public Lane? Find(string tenant) => _lanes.GetValueOrDefault(tenant);

    /// <summary>Gets a tenant's lane, creating it.</summary>
    public Lane LaneOf(string tenant)
    {
        if (!_lanes.TryGetValue(tenant, out var lane))
        {
            lane = new Lane(tenant, _weightOf(tenant));
            _lanes.Add(tenant, lane);
        }

        return lane;
    }

    /// <summary>Queues an item at the end of its tenant's lane; the lane joins the round if it was not backlogged.</summary>
    public void Enqueue(Lane lane, T item)
    {
        lane.Items.AddLast(item);
        Count++;
        if (lane.Node.List is null)
        {
            // The tail of the round is just before the cursor: the newcomer is served after every lane already waiting
            // has had its turn (appended at the list's end instead, a lane that empties and comes back could get two
            // turns in one round).
            if (_cursor is null)
            {
                _round.AddLast(lane.Node);
            }
            else
            {
                _round.AddBefore(_cursor, lane.Node);
            }
        }
    }

    /// <summary>
    /// Takes the next item in weighted turn from a lane below its running bound, and counts it as running; returns
    /// <see langword="false"/> when every backlogged lane is at its bound (or none is backlogged).
    /// </summary>
    public bool TryDequeue(out Lane lane, out T item)
    {
        for (var steps = _round.Count; steps >= 0 && _round.Count != 0; steps--)
        {
            _cursor ??= _round.First;
            var candidate = _cursor!.Value;
            if (candidate.Running < _maxRunning)
            {
                if (candidate.Deficit < 1 && !_charged)
                {
                    candidate.Deficit += candidate.Weight;
                    _charged = true;
                }

                if (candidate.Deficit >= 1)
                {
                    candidate.Deficit--;
                    item = TakeOldest(candidate);
                    candidate.Running++;
                    if (candidate.Deficit < 1 && candidate.Node.List is not null)
                    {
                        Advance(); // the turn is spent
                    }

                    lane = candidate;
                    return true;
                }
            }
            else
            {
                candidate.Deficit = 0;
            }

            Advance();
        }

        lane = null!;
        item = default!;
        return false;
    }

    /// <summary>An item of the lane finished (or will not run after all): one running fewer; a lane with nothing left is forgotten.</summary>
    public void Finished(Lane lane)
    {
        Debug.Assert(lane.Running > 0, "Only a running item finishes.");
        lane.Running--;
        ForgetIfIdle(lane);
    }

    /// <summary>Takes the oldest item of a lane out of the queue (an eviction); it does not run.</summary>
    public T RemoveOldest(Lane lane)
    {
        var item = TakeOldest(lane);
        ForgetIfIdle(lane);
        return item;
    }

    /// <summary>Takes the newest item of a lane out of the queue (the longest backlog gives way); it does not run.</summary>
    public T RemoveNewest(Lane lane)
    {
        var item = lane.Items.Last!.Value;
        lane.Items.RemoveLast();
        Count--;
        if (lane.Items.Count == 0)
        {
            LeaveRound(lane);
        }

        ForgetIfIdle(lane);
        return item;
    }

    /// <summary>Gets the lane with the most items queued, or <see langword="null"/> when nothing is queued.</summary>
    public Lane? LongestBacklog()
    {
        Lane? longest = null;
        foreach (var lane in _round)
        {
            if (longest is null || lane.Items.Count > longest.Items.Count)
            {
                longest = lane;
            }
        }

        return longest;
    }

    /// <summary>Takes every queued item out, lane by lane (a shutdown deadline).</summary>
    public List<T> TakeAll()
    {
        var all = new List<T>(Count);
        foreach (var lane in _round.ToList())
        {
            while (lane.Items.Count != 0)
            {
                all.Add(TakeOldest(lane));
            }

            ForgetIfIdle(lane);
        }

        return all;
    }

    /// <summary>A reservation ended without the item being queued: forgets the lane if nothing else holds it.</summary>
    public void ForgetIfIdle(Lane lane)
    {
        if (lane.Items.Count == 0 && lane.Running == 0 && lane.Reserved == 0)
        {
            _lanes.Remove(lane.Tenant);
        }
    }

    /// <summary>Checks the bookkeeping (Debug builds and tests).</summary>
    [Conditional("DEBUG")]
    public void AssertInvariants()
    {
        var queued = 0;
        foreach (var lane in _lanes.Values)
        {
            Debug.Assert(lane.Running >= 0 && lane.Reserved >= 0, "Counts never go negative.");
            Debug.Assert((lane.Node.List is not null) == (lane.Items.Count != 0), "A lane is in the round exactly while it has a backlog.");
            queued += lane.Items.Count;
        }

        Debug.Assert(queued == Count, "The count is the sum of the lanes.");
        Debug.Assert(_round.Count <= _lanes.Count, "Every lane in the round is known.");
    }

    private T TakeOldest(Lane lane)
    {
        var item = lane.Items.First!.Value;
        lane.Items.RemoveFirst();
        Count--;
        if (lane.Items.Count == 0)
        {
            LeaveRound(lane);
        }

        return item;
    }

    private void LeaveRound(Lane lane)
    {
        if (lane.Node.List is null)
        {
            return;
        }

        if (_cursor == lane.Node)
        {
            Advance();
            if (_cursor == lane.Node)
            {
                _cursor = null; // it was the only lane
            }
        }

        _round.Remove(lane.Node);
        lane.Deficit = 0; // an idle tenant saves no credit
    }

    private void Advance()
    {
        _cursor = _cursor?.Next ?? _round.First;
        _charged = false;
    }

    /// <summary>One tenant's lane.</summary>
    internal sealed class Lane
    {
        public Lane(string tenant, int weight)
        {
            Tenant = tenant;
            Weight = weight;
            Node = new LinkedListNode<Lane>(this);
        }

        public string Tenant { get; }

        public int Weight { get; set; }

        /// <summary>Credit left in this turn, in items.</summary>
        public long Deficit { get; set; }

        /// <summary>Items of the tenant running now (taken from the lane, not finished).</summary>
        public int Running { get; set; }

        /// <summary>Items on their way in: counted against the tenant's queue bound, not queued yet.</summary>
        public int Reserved { get; set; }

        /// <summary>Queued items, oldest first.</summary>
        public LinkedList<T> Items { get; } = new();

        /// <summary>This lane's place in the round, while it has a backlog.</summary>
        public LinkedListNode<Lane> Node { get; }

        /// <summary>Extra state of the lane's owner (the executor's counters).</summary>
        public object? Tag { get; set; }
    }
}
