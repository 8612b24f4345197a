using System.Diagnostics;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// One node's cluster permits for its queue (the <c>queue_settings</c> row's <c>max_running</c>,
/// <c>starts_per_second</c> with <c>start_burst</c>, and <c>max_running_per_key</c>): the grant leased to the node,
/// counted locally, and what its last claim held back. Taken and given back by the claim loop and the workers; granted
/// by the cluster loop; read by metrics, the health check and the node's heartbeat.
/// </summary>
/// <remarks>
/// <para>
/// <b>The grant.</b> Each live node holds, in its <c>nodes</c> row, a grant of the queue's running permits and a share
/// of its start rate and burst, written only by its own cluster loop in a short transaction that locks the settings row
/// (<see cref="PermitGrantSql"/>), at every heartbeat, at once when the node is short of permits and there may be
/// room, and at once when its row holds more than its allowance (a grant that shrank below what was in use) and its use
/// has come down to the allowance, to give the rest back; <see cref="PermitAllocation"/> says what it may take and
/// why the limits hold. A claim never takes that lock: it is the plain claim, for <c>min(items the node may hold, free local permits, whole tokens)</c> items.
/// </para>
/// <para>
/// <b>Starts, not claims, are what the rate bounds.</b> Under a start rate the node's share is two token buckets of the
/// same rate and burst. The claim bucket (<see cref="Take"/>) is spent when items are claimed, as many as it holds
/// whole tokens, and a claim asks for no more than the node's idle workers (<see cref="StartRoom"/>), so claimed items
/// start at once and the node does not claim far ahead of its starts. The start bucket is spent by each handler start
/// on its worker (<see cref="Starting"/>): a start takes a token of it, waiting on its own thread for the next one if
/// it came a little early (the claim bucket holds at least <see cref="ClaimLookahead"/>'s worth of tokens, so that a
/// small burst is not spent one claim round trip per start) (at most <see cref="MaxStartWait"/>; an item that would wait longer, or whose grant lapsed,
/// does not start and is released, ready again). So every handler start under the rate spends a token of a bucket of
/// the node's share at that instant, and the starts themselves are at most <c>burst + rate × L</c> in any span of L
/// seconds (see <see cref="LocalTokenBucket"/>), whatever the time between a claim and its start; and as the claim
/// bucket is spent at the claim, it refills while the claim's round trip runs, so a small burst does not cost the
/// rate a round trip per start. An item claimed before the rate was set takes its start token the same way.
/// </para>
/// <para>
/// <b>Counted locally.</b> A permit is taken when an item is claimed (<see cref="Take"/>, before the claim statement;
/// what the claim did not find is given back) and given back when its handler ends (<see cref="Finished(StoredItem?, out StoredItem?)"/>), so the
/// next claim does not wait for the outcome's commit. In use never exceeds the allowance except after a grant shrank
/// below it; then the node starts nothing until it is below. Every held item counts, with or without limits, so the
/// count is right the moment limits are set.
/// </para>
/// <para>
/// <b>Expiry.</b> A grant is good until the node's row expires (three heartbeats after the renewal's first statement).
/// The node measures that on its own monotonic clock from before it sent the renewal, so it stops starting limited
/// items no later than the database sees its row expire: a node cut off from the database (or whose renewal cannot
/// finish) starts nothing limited once its grant lapses, and its share goes to the other nodes only after that.
/// </para>
/// <para>
/// <b>Changes.</b> Each grant is for one settings version. The claim statement claims nothing unless the row's
/// version is still that one, and returns the version it saw; a newer one stops this node's claims
/// (<see cref="Stale"/>) until the cluster loop has renewed the grant under it. So a changed limit binds every claim
/// whose statement starts after the change committed, on every node, heard of or not. (A claim that saw the version its
/// permits were taken under is not stale, even if a renewal moved the grant on meanwhile; one that saw another version
/// does not stop the node when a renewal during the claim already caught up with it.) The keyed claim (a queue
/// with <c>max_running_per_key</c> above one) checks it too: the per-key limit it passes is read with the version
/// (<see cref="PermitTake.PerKey"/>), so a claim never runs under a limit older than the settings it sees.
/// </para>
/// <para>
/// <b>The reserve.</b> Under a binding running limit: items claimed (rows in state running, so every limit's accounting
/// counts them) beyond the node's permits, at most one per permit it holds, kept unstarted until a permit frees, in the
/// claim order (highest priority, then earliest due, then oldest: <see cref="StoredItem.CompareClaimOrder"/>). A
/// handler's end gives its permit straight to the first reserved item (<see cref="Finished(StoredItem?, out StoredItem?)"/>),
/// so the next start needs no claim. Never used under a rate limit (a start needs a token) or when no running limit binds.
/// (The only "reserve" of the node: room for a claim is <em>booked</em> in the <see cref="NodeRoom"/>, and the item a
/// node holds ahead for a key is <em>prefetched</em> in the <see cref="KeyBook"/>.)
/// </para>
/// <para>
/// <b>Invariant (I4).</b> The items holding a permit are the node's items claimed whose handler has not ended
/// (<c>_inUse</c>, never below zero), at most the allowance unless a grant shrank below what was in use; no reserved item
/// holds a permit; the reserve is in the claim order, and a freed permit goes to its first item.
/// </para>
/// <para>
/// Thread safety: every member takes <see cref="SyncObj"/>; the buckets are used only under it. Lock order: the key
/// book's lock may be held when this one is taken (<see cref="KeyBook"/>), never the other way round.
/// </para>
/// </remarks>
internal sealed class ClusterPermits(TimeProvider time)
{
    private readonly Queue<(long Timestamp, int Count)> _starts = new();
    private readonly LocalTokenBucket _bucket = new(time);
    private volatile bool _limited;
    private long _waiting;
    private double _oldestWaitSeconds;
    private long _measuredAt;

    private int _inUse;
    private readonly LocalTokenBucket _startBucket = new(time);
    private int? _allowed;
    private bool _rated;
    private int _perKey = 1;
    private bool _fairShare;
    private bool _tenantRated;
    private long _version = -1;
    private bool _stale;
    private long _expiresAt;
    private bool _lapsed;
    private int _fair;
    private int _stored;
    private bool _givingBack;
    private long _earlyRenewalAt = long.MinValue;

    /// <summary>The reserve, in the claim order (see the remarks).</summary>
    private readonly List<StoredItem> _reserve = [];

    /// <summary>Reserve slots promised to a claim in flight (<see cref="ReserveSlots"/>).</summary>
    private int _reserving;
    private bool _reserveClosed;

    /// <summary>Gets the lock of every member.</summary>
    private Lock SyncObj { get; } = new();

    /// <summary>Gets a value indicating whether the calling thread holds the permits' lock (for the lock order's Debug checks).</summary>
    public bool IsLockHeldByCurrentThread => SyncObj.IsHeldByCurrentThread;

    /// <summary>Gets a value indicating whether the queue had cluster limits (any of the three) at the node's last renewal.</summary>
    public bool IsLimited => _limited;

    /// <summary>Gets the queue's <c>max_running_per_key</c> as of the last renewal.</summary>
    public int PerKey
    {
        get
        {
            lock (SyncObj)
            {
                return _perKey;
            }
        }
    }

    /// <summary>Gets the permits this node has in use: items claimed whose handler has not ended.</summary>
    public int InUse
    {
        get
        {
            lock (SyncObj)
            {
                return _inUse;
            }
        }
    }

    /// <summary>Gets the running permits this node may use (null: no running limit; zero while its grant has lapsed).</summary>
    public int? Allowed
    {
        get
        {
            lock (SyncObj)
            {
                return _allowed;
            }
        }
    }

    /// <summary>Gets a value indicating whether the node's grant has lapsed (it could not renew it in time).</summary>
    public bool IsLapsed
    {
        get
        {
            lock (SyncObj)
            {
                return _lapsed;
            }
        }
    }

    /// <summary>
    /// Gets the items waiting for a cluster permit: the ready items this node had room for that its last claim left,
    /// and the items in its reserve (claimed, waiting for a permit to free on this node).
    /// </summary>
    public long Waiting
    {
        get
        {
            lock (SyncObj)
            {
                return Interlocked.Read(ref _waiting) + _reserve.Count;
            }
        }
    }

    /// <summary>
    /// Gets how long the oldest of <see cref="Waiting"/> has waited: a ready item since it became due, a reserved item
    /// since it entered the reserve (its wait before that claim is not known here); zero when none waits.
    /// </summary>
    public TimeSpan OldestWait
    {
        get
        {
            lock (SyncObj)
            {
                var ready = _waiting == 0 ? TimeSpan.Zero : TimeSpan.FromSeconds(_oldestWaitSeconds) + time.GetElapsedTime(_measuredAt);
                var reserved = _reserve.Count == 0 ? TimeSpan.Zero : time.GetElapsedTime(_reserve.Min(static item => item.ReservedAt));
                return ready > reserved ? ready : reserved;
            }
        }
    }

    /// <summary>Gets the handlers this node started under cluster limits during the last second.</summary>
    public double StartsLastSecond
    {
        get
        {
            lock (SyncObj)
            {
                Prune();
                var sum = 0;
                foreach (var (_, count) in _starts)
                {
                    sum += count;
                }

                return sum;
            }
        }
    }

    /// <summary>
    /// Under a start rate (the queue's, or a per-tenant rate of its fair share), what a claim of up to
    /// <paramref name="wanted"/> items may ask for: no more than the node's idle workers (<paramref name="workers"/>
    /// minus the items claimed whose handler has not ended), so that every item it claims starts at once and the tokens
    /// promised are spent at once. Without a rate, <paramref name="wanted"/>.
    /// </summary>
    public int StartRoom(int wanted, int workers)
    {
        lock (SyncObj)
        {
            return _rated || _tenantRated ? Math.Min(wanted, Math.Max(workers - _inUse, 0)) : wanted;
        }
    }

    /// <summary>How far ahead of its start tokens a node may claim: the claim bucket holds at least this much of the rate.</summary>
    public static readonly TimeSpan ClaimLookahead = TimeSpan.FromMilliseconds(100);

    /// <summary>The longest a handler start waits on its worker for a token of the start bucket before its item is released instead.</summary>
    public static readonly TimeSpan MaxStartWait = TimeSpan.FromSeconds(1);

    /// <summary>
    /// A handler is about to start, on its worker's thread: under a start rate it spends a token of the start bucket
    /// now, or waits for the next one on this thread (a kernel wait, never the ThreadPool), up to
    /// <see cref="MaxStartWait"/>. Returns false when it may not start (no token in time, or the grant lapsed): release
    /// the item. Counts the start.
    /// </summary>
    public bool Starting()
    {
        var waited = TimeSpan.Zero;
        while (true)
        {
            TimeSpan wait;
            lock (SyncObj)
            {
                if (!_rated || _startBucket.Take(1) == 1)
                {
                    if (_rated && (_lapsed || time.GetTimestamp() - _expiresAt >= 0))
                    {
                        return false; // the grant lapsed: nothing limited starts (the token is gone with the share)
                    }

                    if (_limited)
                    {
                        _starts.Enqueue((time.GetTimestamp(), 1));
                        Prune();
                    }

                    return true;
                }

                wait = _startBucket.TimeToNextToken() ?? TimeSpan.MaxValue;
                if (_lapsed || wait > MaxStartWait - waited)
                {
                    return false;
                }
            }

            // Round up to the millisecond (a shorter sleep would wake just before the token), at least one.
            var sleep = TimeSpan.FromMilliseconds(Math.Max(1, Math.Ceiling(wait.TotalMilliseconds)));
            Thread.Sleep(sleep);
            waited += sleep;
        }
    }

    /// <summary>
    /// Takes permits (and promises tokens) for up to <paramref name="wanted"/> items before a claim: returns how many, the
    /// settings version the claim must find, whether a limit held some back, and whether the grant lapsed just now.
    /// </summary>
    public PermitTake Take(int wanted)
    {
        lock (SyncObj)
        {
            if (_version < 0 || _stale)
            {
                return new PermitTake(0, _version, Bound: false, LapsedNow: false) { PerKey = _perKey, FairShare = _fairShare, TenantRated = _tenantRated };
            }

            var lapsedNow = false;
            if ((_allowed is not null || _rated) && time.GetTimestamp() - _expiresAt >= 0)
            {
                if (!_lapsed)
                {
                    // Lapsed: nothing limited starts until a renewal succeeds, and the rate share starts again empty.
                    _lapsed = lapsedNow = true;
                    _allowed = _allowed is null ? null : 0;
                    SetShareLocked(0, 0);
                }

                return new PermitTake(0, _version, Bound: true, lapsedNow) { PerKey = _perKey, FairShare = _fairShare, TenantRated = _tenantRated };
            }

            var count = Math.Max(wanted, 0);
            if (_allowed is int allowed)
            {
                count = Math.Min(count, Math.Max(allowed - _inUse, 0));
            }

            var rateBound = false;
            if (_rated)
            {
                // The claim bucket, spent now; each handler start spends a token of the start bucket too (Starting).
                var tokens = _bucket.Take(count);
                rateBound = tokens < count;
                count = tokens;
            }

            _inUse += count;
            return new PermitTake(count, _version, Bound: count < wanted && (_allowed is not null || _rated), LapsedNow: false) { Rated = _rated, RateBound = rateBound, PerKey = _perKey, FairShare = _fairShare, TenantRated = _tenantRated };
        }
    }

    /// <summary>Gives back permits (and, when <paramref name="rated"/>, the claim tokens taken with them) for a claim that found fewer items.</summary>
    public void Return(int unused, bool rated)
    {
        if (unused <= 0)
        {
            return;
        }

        lock (SyncObj)
        {
            _inUse -= unused;
            if (rated && _rated)
            {
                _bucket.Refund(unused);
            }
        }
    }

    /// <summary>
    /// <paramref name="item"/>'s delivery ended (its handler, or given back unrun): the permit it held is free, and goes
    /// straight to the oldest reserved item, if any may start now (<paramref name="next"/>, to submit at once). A
    /// reserved item that ends unrun (released, cancelled) held no permit: it only leaves the reserve.
    /// </summary>
    /// <returns>
    /// <see langword="true"/> once the node's row records more than its allowance (a grant that shrank below what was in
    /// use) and its use has come down to the allowance: worth a renewal now, to give the rest back to the other nodes.
    /// </returns>
    public bool Finished(StoredItem? item, out StoredItem? next)
    {
        lock (SyncObj)
        {
            next = null;
            if (item is { HoldsPermit: false })
            {
                _reserve.Remove(item);
                return false;
            }

            _inUse--;
            next = StartReservedLocked();
            if (_allowed is int allowed && _stored > allowed && _inUse <= allowed && !_givingBack)
            {
                _givingBack = true;
                return true;
            }

            return false;
        }
    }

    /// <summary>
    /// A claim whose permits were taken under settings version <paramref name="taken"/> (<see cref="PermitTake.Version"/>)
    /// saw version <paramref name="seen"/>. If they differ, the claim ran under another version than its permits and
    /// claimed nothing: it is stale, and what it counted is not reported. The node's grant is stale only if it is not
    /// for <paramref name="seen"/> either (a renewal during the claim may already have caught up with it): then
    /// nothing starts until the next renewal, and <paramref name="renew"/> says to renew now.
    /// </summary>
    /// <returns><see langword="true"/> if the claim ran under another settings version than its permits.</returns>
    public bool Stale(long taken, long seen, out bool renew)
    {
        lock (SyncObj)
        {
            renew = false;
            if (seen == taken)
            {
                return false; // the claim ran under its permits' version (a renewal since then changes nothing of it)
            }

            if (seen != _version)
            {
                _stale = true;
                renew = true;
            }

            return true;
        }
    }

    /// <summary>
    /// Within a renewal's transaction, before its write: the allowance and the rate share drop at once to the new
    /// grant if it is smaller (it grows only once committed, <see cref="Granted"/>). Returns the permits in use now,
    /// which the row records if they exceed the allowance: from here on, in use never exceeds what the row says.
    /// </summary>
    public int ShrinkTo(PermitGrant grant)
    {
        lock (SyncObj)
        {
            if (_allowed is int current && grant.Allowed is int next)
            {
                _allowed = Math.Min(current, next);
            }
            else if (grant.Allowed is int first)
            {
                _allowed = first;
            }

            if (_rated)
            {
                SetShareLocked(Math.Min(_startBucket.Rate, grant.Rate), Math.Min(_startBucket.Burst, grant.Burst));
            }

            return _inUse;
        }
    }

    /// <summary>A renewal committed: the grant holds until <paramref name="startedAt"/> plus <paramref name="lifetime"/> (the node's own clock).</summary>
    /// <returns><see langword="true"/> if the grant had lapsed.</returns>
    public bool Granted(PermitGrant grant, GrantLimits limits, int perKey, long version, long startedAt, TimeSpan lifetime, bool fairShare = false, bool tenantRated = false)
    {
        lock (SyncObj)
        {
            _fairShare = fairShare;
            _tenantRated = fairShare && tenantRated;
            _allowed = grant.Allowed;
            _rated = limits.StartsPerSecond is not null;
            SetShareLocked(_rated ? grant.Rate : 0, _rated ? grant.Burst : 0);
            _fair = grant.FairRunning;
            _stored = grant.Stored;
            _givingBack = false;
            _perKey = perKey;
            _version = version;
            _stale = false;
            _expiresAt = startedAt + (long)(lifetime.TotalSeconds * time.TimestampFrequency);
            _limited = true;
            var lapsed = _lapsed;
            _lapsed = false;
            return lapsed;
        }
    }

    /// <summary>The queue has no running or rate limit under settings <paramref name="version"/> (<paramref name="perKey"/> may be above one).</summary>
    public void NoGrant(int perKey, long version, bool fairShare = false, bool tenantRated = false)
    {
        lock (SyncObj)
        {
            _fairShare = fairShare;
            _tenantRated = fairShare && tenantRated;
            _allowed = null;
            _rated = false;
            SetShareLocked(0, 0);
            _perKey = perKey;
            _version = version;
            _stale = false;
            _lapsed = false;
            _limited = perKey > 1;
        }

        if (perKey <= 1)
        {
            Held(0, 0);
        }
    }

    /// <summary>
    /// Gets a value indicating whether the node should renew its grant now rather than at its next heartbeat: a limit
    /// held items back, its allowance is below its fair share (others must still shrink, or have shrunk), and it has not
    /// asked within <paramref name="minInterval"/>.
    /// </summary>
    public bool ShouldRenewEarly(TimeSpan minInterval)
    {
        lock (SyncObj)
        {
            var now = time.GetTimestamp();
            if (_allowed is not int allowed || allowed >= _fair || _lapsed
                || (_earlyRenewalAt != long.MinValue && time.GetElapsedTime(_earlyRenewalAt, now) < minInterval))
            {
                return false;
            }

            _earlyRenewalAt = now;
            return true;
        }
    }

    /// <summary>Gets the time until the rate share holds a whole token (null: no rate limit).</summary>
    public TimeSpan? TimeToNextToken()
    {
        lock (SyncObj)
        {
            return _rated && !_lapsed ? _bucket.TimeToNextToken() : null;
        }
    }

    /// <summary>A claim took <paramref name="claimed"/> items and left <paramref name="waiting"/> waiting for a permit, the oldest for <paramref name="oldestWaitSeconds"/>.</summary>
    public void Claimed(int claimed, long waiting, double oldestWaitSeconds)
    {
        _ = claimed; // counted when they start (Starting)
        Held(waiting, oldestWaitSeconds);
    }

    /// <summary>The node had no room for more items, so nothing of its waits for a cluster permit.</summary>
    public void NothingRequested() => Held(0, 0);

    /// <summary>
    /// Sets the node's rate share: the start bucket holds <paramref name="burst"/>, the claim bucket at least
    /// <see cref="ClaimLookahead"/>'s worth of the rate, so that a node with a small burst can claim the items of the
    /// next few tokens in one round trip (they wait for their start tokens on their workers); the starts stay bounded
    /// by the start bucket.
    /// </summary>
    private void SetShareLocked(double rate, int burst)
    {
        Debug.Assert(SyncObj.IsHeldByCurrentThread);
        var claimBurst = burst == 0 || rate <= 0 ? burst : Math.Max(burst, (int)Math.Min(Math.Ceiling(rate * ClaimLookahead.TotalSeconds), int.MaxValue));
        _bucket.SetShare(rate, claimBurst);
        _startBucket.SetShare(rate, burst);
    }

    private void Held(long waiting, double oldestWaitSeconds)
    {
        lock (SyncObj)
        {
            _oldestWaitSeconds = oldestWaitSeconds;
            _measuredAt = time.GetTimestamp();
            Interlocked.Exchange(ref _waiting, waiting);
        }
    }

    /// <summary>Checks I4 (in Debug builds): called by the stress and model tests.</summary>
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
        Debug.Assert(_reserving >= 0, "I4: reserve slots promised below zero");
        Debug.Assert(_allowed is not int a || a >= 0, "I4: a negative allowance");
        for (var i = 0; i < _reserve.Count; i++)
        {
            Debug.Assert(!_reserve[i].HoldsPermit, "I4: a reserved item holds a permit");
            Debug.Assert(i == 0 || StoredItem.CompareClaimOrder(_reserve[i - 1], _reserve[i]) <= 0, "I4: the reserve is out of the claim order");
        }

        Debug.Assert(_inUse >= 0, "I4: permits in use below zero");
    }

    private void Prune()
    {
        Debug.Assert(SyncObj.IsHeldByCurrentThread);
        while (_starts.TryPeek(out var start) && time.GetElapsedTime(start.Timestamp) > TimeSpan.FromSeconds(1))
        {
            _starts.Dequeue();
        }
    }


    /// <summary>Gets the items this node holds in its reserve (claimed, not started, holding no permit).</summary>
    public int ReservedCount
    {
        get
        {
            lock (SyncObj)
            {
                return _reserve.Count;
            }
        }
    }

    /// <summary>
    /// After <see cref="Take"/> gave <paramref name="taken"/> of <paramref name="wanted"/>: how many more items the
    /// claim may take into the reserve (zero unless the running limit is what held items back, with no rate limit).
    /// The slots stay promised until <see cref="ReserveSlotsDone"/>.
    /// </summary>
    public int ReserveSlots(int wanted, int taken)
    {
        lock (SyncObj)
        {
            if (taken >= wanted || !ReserveAllowedLocked() || _allowed is not int allowed || _inUse < allowed)
            {
                return 0;
            }

            var room = Math.Min(wanted - taken, Math.Min(_inUse, allowed) - _reserve.Count - _reserving);
            room = Math.Max(room, 0);
            _reserving += room;
            return room;
        }
    }

    /// <summary>The claim that was promised <paramref name="slots"/> reserve slots ended.</summary>
    public void ReserveSlotsDone(int slots)
    {
        lock (SyncObj)
        {
            _reserving -= slots;
        }
    }

    /// <summary>
    /// Puts claimed items (already held by the node) into the reserve, in the claim order among those it holds. Returns those that may start at
    /// once (a permit freed during the claim; they now hold it) and those the reserve has no room for now (to release).
    /// </summary>
    public (List<StoredItem> Start, List<StoredItem> Release) Reserve(List<StoredItem> items)
    {
        lock (SyncObj)
        {
            foreach (var item in items)
            {
                item.HoldsPermit = false;
                item.ReservedAt = time.GetTimestamp();
                var at = _reserve.FindIndex(held => StoredItem.CompareClaimOrder(held, item) > 0);
                _reserve.Insert(at < 0 ? _reserve.Count : at, item);
            }

            return (StartAllReservedLocked(), TrimLocked());
        }
    }

    /// <summary>Reserved items that may start now (free permits): each now holds one. Then trims the reserve to what the grant allows now; returns the rest, to release.</summary>
    public (List<StoredItem> Start, List<StoredItem> Release) Rebalance()
    {
        lock (SyncObj)
        {
            return (StartAllReservedLocked(), TrimLocked());
        }
    }

    /// <summary>A cancellation was asked for <paramref name="item"/>: if it waits in the reserve, it leaves it (not to run).</summary>
    public bool TryUnreserve(StoredItem item)
    {
        lock (SyncObj)
        {
            return !item.HoldsPermit && _reserve.Remove(item);
        }
    }

    /// <summary>The node stops claiming: the reserve closes and its items are returned, to release.</summary>
    public List<StoredItem> CloseReserve()
    {
        lock (SyncObj)
        {
            _reserveClosed = true;
            return TrimLocked();
        }
    }

    private bool ReserveAllowedLocked() =>
        !_reserveClosed && !_rated && !_stale && !_lapsed && _version >= 0 && _allowed is not null && time.GetTimestamp() - _expiresAt < 0;

    /// <summary>The first reserved item in the claim order, if a permit is free for it now: it takes the permit.</summary>
    private StoredItem? StartReservedLocked()
    {
        if (_reserve.Count == 0 || !ReserveAllowedLocked() || _allowed is not int allowed || _inUse >= allowed)
        {
            return null;
        }

        var item = _reserve[0];
        _reserve.RemoveAt(0);
        item.HoldsPermit = true;
        _inUse++;
        return item;
    }

    private List<StoredItem> StartAllReservedLocked()
    {
        var start = new List<StoredItem>();
        while (StartReservedLocked() is { } item)
        {
            start.Add(item);
        }

        return start;
    }

    /// <summary>Removes the last reserved items in the claim order beyond one per permit held (all, when the reserve may not be used now).</summary>
    private List<StoredItem> TrimLocked()
    {
        var cap = ReserveAllowedLocked() && _allowed is int allowed ? Math.Min(_inUse, allowed) : 0;
        var release = new List<StoredItem>();
        while (_reserve.Count > Math.Max(cap, 0))
        {
            release.Add(_reserve[^1]);
            _reserve.RemoveAt(_reserve.Count - 1);
        }

        release.Reverse();
        return release;
    }

    /// <summary>
    /// Gets a value indicating whether the queue's per-key limit (above one) is its only cluster limit as of the last
    /// renewal: no running limit and no start rate. Only then does the hand-off take per-key reserves.
    /// </summary>
    public bool PerKeyOnly
    {
        get
        {
            lock (SyncObj)
            {
                return _perKey > 1 && _allowed is null && !_rated && _version >= 0 && !_stale;
            }
        }
    }
}

/// <summary>What <see cref="ClusterPermits.Take"/> gave: permits for <see cref="Count"/> items, under settings <see cref="Version"/>.</summary>
internal readonly record struct PermitTake(int Count, long Version, bool Bound, bool LapsedNow)
{
    /// <summary>Gets a value indicating whether the take spent claim tokens (a start rate was set): give back those unused.</summary>
    public bool Rated { get; init; }

    /// <summary>Gets a value indicating whether the tokens (not the permits) cut the take short: the next token is worth waking for.</summary>
    public bool RateBound { get; init; }

    /// <summary>Gets the per-key limit M of the settings <see cref="Version"/> (read with it, under the permits' lock).</summary>
    public int PerKey { get; init; }

    /// <summary>Gets a value indicating whether the settings <see cref="Version"/> turn fair share on (the claim is the fair claim).</summary>
    public bool FairShare { get; init; }

    /// <summary>Gets a value indicating whether the settings <see cref="Version"/> set a per-tenant start rate (the fair claim is the rated one, and no reserve is claimed).</summary>
    public bool TenantRated { get; init; }
}
