using System.Diagnostics;
using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The per-key book: under a per-key limit M above one, what this node runs of each key and the item it holds ahead
/// for a key (its prefetched item: claimed by the hand-off, held unstarted, and started the moment one of the node's
/// own handlers of that key ends with a final outcome, before that outcome is written). See docs/durable-invariants.md,
/// I2 and I3.
/// </summary>
/// <remarks>
/// <para>
/// <b>Why prefetch.</b> Without it, a key's next item starts only once its predecessor's outcome (and the hand-off's
/// claim in the same transaction) has committed: the key runs fewer than M handlers for that write and its commit after
/// each end. With it, the successor starts when the handler ends.
/// </para>
/// <para>
/// <b>State.</b> <c>_running</c>: per key, this node's items claimed to run that have not ended (the partners a
/// prefetched item can start in place of); <c>_prefetched</c>: per key, the one prefetched item (claimed, not started);
/// <c>_unpairedEnds</c>: while a hand-off is in flight, the final ends of its prefetch keys that started no prefetched
/// item (a prefetched item that the hand-off brings starts in place of one of them); <c>_closed</c>: the node stops.
/// </para>
/// <para>
/// <b>Invariant (I3).</b> At most one prefetched item per key; a prefetched item is never counted as running; every
/// count in <c>_running</c> is above zero; a key with a prefetched item has a running item on this node (its partner).
/// A prefetched item starts only in place of a final end of its key on this node (<see cref="Ended"/>, or an unpaired
/// end at <see cref="AcceptPrefetched"/>), and only while the per-key limit is the queue's only cluster limit and no
/// lower than the one it was claimed under; otherwise it is released (ready again).
/// </para>
/// <para>
/// <b>Lock.</b> <see cref="SyncObj"/> guards all of the state. Lock order: this lock, then the cluster permits' lock
/// (read for the limits in force); never the other way round (asserted in Debug). No user code runs under it, and no
/// item is started or released under it: the callers do that with what it returns.
/// </para>
/// </remarks>
internal sealed class KeyBook(ClusterPermits permits)
{
    private readonly Dictionary<string, int> _running = new(StringComparer.Ordinal);
    private readonly Dictionary<string, StoredItem> _prefetched = new(StringComparer.Ordinal);
    private readonly Dictionary<string, int> _unpairedEnds = new(StringComparer.Ordinal);
    private bool _closed;
    private long _started;
    private long _released;

    /// <summary>Gets the lock over the book (taken before the cluster permits' lock, never after it).</summary>
    private Lock SyncObj { get; } = new();

    /// <summary>Gets the items this node holds prefetched for their keys (claimed, not started).</summary>
    public int PrefetchedCount
    {
        get
        {
            lock (Enter())
            {
                return _prefetched.Count;
            }
        }
    }

    /// <summary>Gets the prefetched item of each key this node holds one for: key and item id.</summary>
    public IReadOnlyDictionary<string, long> PrefetchedByKey
    {
        get
        {
            lock (Enter())
            {
                return _prefetched.ToDictionary(pair => pair.Key, pair => pair.Value.Id, StringComparer.Ordinal);
            }
        }
    }

    /// <summary>Gets how many prefetched items this node started (at a handler's end, or paired with an end that came first).</summary>
    public long StartedCount => Interlocked.Read(ref _started);

    /// <summary>Gets how many prefetched items this node released unstarted.</summary>
    public long ReleasedCount => Interlocked.Read(ref _released);

    /// <summary>Counts a prefetched item started.</summary>
    public void CountStarted() => Interlocked.Increment(ref _started);

    /// <summary>Counts prefetched items released.</summary>
    public void CountReleased(int count) => Interlocked.Add(ref _released, count);

    /// <summary>A held item that is to run: counted as running for its key (a prefetched item is not, until it starts).</summary>
    public void CountRunning(StoredItem item)
    {
        if (item.OrderingKey is not { } key || item.Prefetched)
        {
            return;
        }

        lock (Enter())
        {
            item.KeyRunning = true;
            _running[key] = _running.GetValueOrDefault(key) + 1;
        }
    }

    /// <summary>
    /// Before a hand-off: of the batch's <paramref name="keys"/>, those this node may prefetch for (another of its items
    /// of the key is to run, it holds no prefetched item of the key, the per-key limit is the only cluster limit).
    /// Starts counting their unpaired final ends until <see cref="EndHandOff"/>.
    /// </summary>
    public string[] BeginHandOff(string[] keys)
    {
        if (!permits.PerKeyOnly)
        {
            return [];
        }

        lock (Enter())
        {
            _unpairedEnds.Clear();
            if (_closed)
            {
                return [];
            }

            foreach (var key in keys)
            {
                if (_running.GetValueOrDefault(key) > 0 && !_prefetched.ContainsKey(key))
                {
                    _unpairedEnds[key] = 0;
                }
            }

            return [.. _unpairedEnds.Keys];
        }
    }

    /// <summary>The hand-off in flight is done (committed, failed, or planned nothing): unpaired ends are no longer counted.</summary>
    public void EndHandOff()
    {
        lock (Enter())
        {
            _unpairedEnds.Clear();
        }
    }

    /// <summary>
    /// After the hand-off committed, for a held item it prefetched: starts it (true) when a final end of its key came
    /// meanwhile, keeps it prefetched (false, <paramref name="release"/> false), or, when no partner is left or the
    /// node stops, gives it up (<paramref name="release"/>: release it).
    /// </summary>
    public bool AcceptPrefetched(StoredItem item, out bool release)
    {
        var key = item.OrderingKey!;
        lock (Enter())
        {
            release = false;
            if (!MayStartLocked(item))
            {
                release = true; // the limits changed since the plan: it was claimed under a bound that no longer holds
                return false;
            }

            if (!_closed && _unpairedEnds.GetValueOrDefault(key) > 0)
            {
                _unpairedEnds[key]--;
                item.KeyRunning = true;
                _running[key] = _running.GetValueOrDefault(key) + 1;
                AssertInvariantsLocked();
                return true;
            }

            if (_closed || _running.GetValueOrDefault(key) == 0 || _prefetched.ContainsKey(key))
            {
                release = true;
                return false;
            }

            _prefetched[key] = item;
            AssertInvariantsLocked();
            return false;
        }
    }

    /// <summary>
    /// A delivery ended (its outcome about to be posted): it no longer runs for its key; a final outcome starts the
    /// key's prefetched item (returned, to execute once the outcome is posted) if the limits still allow it, and the
    /// last partner's end, or limits that no longer allow it, give the prefetched item up (<paramref name="release"/>).
    /// </summary>
    public StoredItem? Ended(StoredItem item, OutcomeKind kind, out StoredItem? release)
    {
        release = null;
        if (!item.KeyRunning || item.OrderingKey is not { } key)
        {
            return null;
        }

        lock (Enter())
        {
            item.KeyRunning = false;
            var left = _running.GetValueOrDefault(key) - 1;
            if (left > 0)
            {
                _running[key] = left;
            }
            else
            {
                _running.Remove(key);
            }

            var final = kind is OutcomeKind.Completed or OutcomeKind.Dead or OutcomeKind.Cancelled;
            if (!_prefetched.Remove(key, out var prefetched))
            {
                if (final && _unpairedEnds.TryGetValue(key, out var unpaired))
                {
                    _unpairedEnds[key] = unpaired + 1;
                }

                return null;
            }

            if (final && !MayStartLocked(prefetched))
            {
                // The per-key limit was lowered (or another cluster limit set) since it was claimed: it does not start
                // in place of this end; released, it is claimed again under the limits now in force.
                release = prefetched;
                return null;
            }

            if (final)
            {
                prefetched.KeyRunning = true;
                _running[key] = left + 1;
                AssertInvariantsLocked();
                return prefetched;
            }

            if (left == 0)
            {
                release = prefetched;
                return null;
            }

            _prefetched[key] = prefetched;
            AssertInvariantsLocked();
            return null;
        }
    }

    /// <summary>
    /// The node applied new cluster limits: takes out the prefetched items claimed under a per-key limit that no
    /// longer holds (lowered, or another cluster limit set), to release now rather than at the next end of their key.
    /// </summary>
    public List<StoredItem>? TakeNoLongerAllowed()
    {
        List<StoredItem>? release = null;
        lock (Enter())
        {
            foreach (var item in _prefetched.Values)
            {
                if (!MayStartLocked(item))
                {
                    (release ??= []).Add(item);
                }
            }

            foreach (var item in release ?? [])
            {
                _prefetched.Remove(item.OrderingKey!);
            }
        }

        return release;
    }

    /// <summary>The node stops claiming: no more prefetching; returns the unstarted prefetched items, to release.</summary>
    public List<StoredItem> Close()
    {
        lock (Enter())
        {
            _closed = true;
            List<StoredItem> release = [.. _prefetched.Values];
            _prefetched.Clear();
            return release;
        }
    }

    /// <summary>A cancellation for a prefetched item: it leaves the book (true), to end cancelled without running.</summary>
    public bool TryRemovePrefetched(StoredItem item)
    {
        if (!item.Prefetched || item.OrderingKey is not { } key)
        {
            return false;
        }

        lock (Enter())
        {
            return _prefetched.TryGetValue(key, out var prefetched) && ReferenceEquals(prefetched, item) && _prefetched.Remove(key);
        }
    }

    /// <summary>Checks I3 (in Debug builds): called by the stress and model tests.</summary>
    [Conditional("DEBUG")]
    public void AssertInvariants()
    {
        lock (Enter())
        {
            AssertInvariantsLocked();
        }
    }

    /// <summary>
    /// Gets a value indicating whether a key's prefetched item may start in place of a handler of its key that ended:
    /// the per-key limit is still the queue's only cluster limit, and no lower than the one it was claimed under.
    /// Takes the permits' lock under this one (the lock order).
    /// </summary>
    private bool MayStartLocked(StoredItem item) => permits.PerKeyOnly && permits.PerKey >= item.PrefetchBound;

    /// <summary>Takes the lock order's first step: the permits' lock is not held here (asserted in Debug).</summary>
    private Lock Enter()
    {
        Debug.Assert(!permits.IsLockHeldByCurrentThread, "Lock order: the per-key book's lock is taken before the cluster permits' lock, never under it.");
        return SyncObj;
    }

    [Conditional("DEBUG")]
    private void AssertInvariantsLocked()
    {
        Debug.Assert(SyncObj.IsHeldByCurrentThread);
        foreach (var (key, running) in _running)
        {
            Debug.Assert(running > 0, $"I3: key '{key}' counted with {running} running items");
        }

        foreach (var (key, item) in _prefetched)
        {
            Debug.Assert(item.Prefetched && !item.KeyRunning && item.OrderingKey == key, $"I3: the prefetched item #{item.Id} of key '{key}' is not a prefetched, unstarted item of that key");
            Debug.Assert(_running.GetValueOrDefault(key) > 0, $"I3: key '{key}' holds a prefetched item with no running partner on this node");
        }
    }
}
