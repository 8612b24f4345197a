namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The node's reserve under a binding running limit: items claimed (rows in state running, so every limit's accounting
/// counts them) beyond the node's permits, at most one per permit it holds, kept unstarted until a permit frees, in the
/// claim order (highest priority, then earliest due, then oldest: <see cref="StoredItem.CompareClaimOrder"/>). A
/// handler's end gives its permit straight to the first reserved item (<see cref="Finished(StoredItem?, out StoredItem?)"/>),
/// so the next start needs no claim. Never used under a rate limit (a start needs a token) or when no running limit binds.
/// </summary>
internal sealed partial class ClusterPermits
{
    private readonly List<StoredItem> _reserve = [];
    private int _reserving;
    private bool _reserveClosed;

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
    public int ReserveRoom(int wanted, int taken)
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

            return (HandOffAllLocked(), TrimLocked());
        }
    }

    /// <summary>Reserved items that may start now (free permits): each now holds one. Then trims the reserve to what the grant allows now; returns the rest, to release.</summary>
    public (List<StoredItem> Start, List<StoredItem> Release) Rebalance()
    {
        lock (SyncObj)
        {
            return (HandOffAllLocked(), TrimLocked());
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
    private StoredItem? HandOffLocked()
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

    private List<StoredItem> HandOffAllLocked()
    {
        var start = new List<StoredItem>();
        while (HandOffLocked() is { } item)
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
}
