using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The per-key reserve: under a binding per-key limit (M above one, the queue's only cluster limit), the hand-off may
/// claim, for a key of which this node runs items, one more item than it may start: held unstarted, and started the
/// moment one of the node's own handlers of that key ends with a final outcome, before that outcome is written.
/// </summary>
/// <remarks>
/// <para>
/// <b>Why.</b> Without it, a key's next item starts only once its predecessor's outcome (and the hand-off's claim in
/// the same transaction) has committed: the key runs fewer than M handlers for that write and its commit after each
/// end. With it, the successor starts when the handler ends.
/// </para>
/// <para>
/// <b>Taking a reserve.</b> The hand-off (<see cref="KeyedClaimSql.HandOff"/>) admits by the rule with M + 1 instead of
/// M and returns each row's count (older unfinished + newer running items of its key, as the rule computes it): rows
/// with count &lt; M start at once as before; a row with count = M is a reserve. It is admitted only for the keys of
/// the batch of which this node has another item claimed to run (<see cref="StoredItem.KeyActive"/>, a partner that can
/// end later) and no reserve yet: at most one reserve per key per node. A key's eligible items have strictly
/// increasing counts (each one counts the earlier ones, running or not), so one statement takes at most one per key.
/// The claim loop (<see cref="KeyedClaimSql.ClaimPerKey"/>) keeps the rule with M and takes no reserve.
/// </para>
/// <para>
/// <b>Why at most M handlers of a key execute.</b> See the remarks of <see cref="KeyedClaimSql"/> ("The per-key
/// reserve"): every running row is among its key's M + 1 oldest unfinished items, one admitted to start at once among
/// the M oldest, and a reserve starts only paired with a final end of a handler of its key on this node, whose row
/// stays running, not executing, until its outcome is written.
/// </para>
/// <para>
/// A retry or a release is not a final outcome: the row stays unfinished (scheduled, or ready), so it starts no
/// reserve; when the node's last partner of a key ends so, the reserve, which no end can start any more, is released
/// (ready again).
/// </para>
/// <para>
/// <b>Other cases.</b> A lease that expires while an ended item's outcome is unwritten (the writer cannot reach the
/// database for a whole lease) returns that row to ready while the reserve paired with it executes: as today for any
/// unwritten outcome, the item runs again (at least once). Its new claim counts the reserve and the key's other running
/// items as running newer items, so it starts at once only where fewer than M rows of the key run; otherwise (the
/// step of (3) that P does not execute no longer holds) it can only be taken as a reserve in turn. This is the one
/// case the bound rests on the lease, as every at-least-once guarantee of the queue does.
/// A node that crashes holds its reserves as running rows whose lease expires: they return to ready, as its other
/// claims do. A node that stops releases its unstarted reserves (back to ready, counted by
/// <see cref="KeyReservesReleasedCount"/>) and takes no more (the hand-off asks for none once the node stops claiming).
/// A cancellation of a reserved item ends it cancelled without running (<see cref="CancelIfReserved"/>); its final
/// outcome hands its key off as any other. A requeued dead letter: the requeue fences M + 1 newer items of its key
/// (<see cref="StorageSql.RequeueDeadLetters"/>), the hand-off's bound. Reserves are held items (<c>_held</c>, the
/// node's room) whose leases are renewed with the node's other running rows; with a running limit or a start rate set,
/// the hand-off takes no reserve (<see cref="ClusterPermits.PerKeyOnly"/>).
/// </para>
/// </remarks>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    private readonly Lock _keyLock = new();

    /// <summary>This node's items of each key that are claimed to run and have not ended (a reserve's possible partners).</summary>
    private readonly Dictionary<string, int> _keyActive = new(StringComparer.Ordinal);

    /// <summary>Each key's reserved item (claimed, not started).</summary>
    private readonly Dictionary<string, StoredItem> _keyReserve = new(StringComparer.Ordinal);

    /// <summary>The keys of the hand-off in flight that may take a reserve, and their final ends meanwhile that started no reserve (their outcomes are unwritten until that hand-off's batch is done).</summary>
    private readonly Dictionary<string, int> _unpairedEnds = new(StringComparer.Ordinal);

    private bool _keyReserveClosed;
    private long _keyReservesStarted;
    private long _keyReservesReleased;

    /// <summary>Gets the items this node holds as its keys' reserves (claimed, not started).</summary>
    internal int KeyReservedCount
    {
        get
        {
            lock (_keyLock)
            {
                return _keyReserve.Count;
            }
        }
    }

    /// <summary>Gets the reserved item of each key this node holds one for (claimed, not started): key and item id.</summary>
    internal IReadOnlyDictionary<string, long> KeyReserved
    {
        get
        {
            lock (_keyLock)
            {
                return _keyReserve.ToDictionary(pair => pair.Key, pair => pair.Value.Id, StringComparer.Ordinal);
            }
        }
    }

    /// <summary>Gets how many reserved items this node started at a handler's end (or at once, paired with an end that came first).</summary>
    internal long KeyReservesStartedCount => Interlocked.Read(ref _keyReservesStarted);

    /// <summary>Gets how many reserved items this node released unstarted (stopping, or no partner left to start them).</summary>
    internal long KeyReservesReleasedCount => Interlocked.Read(ref _keyReservesReleased);

    /// <summary>A held item that is to run: counted as a partner of its key's reserve (a reserve itself is not, until it starts).</summary>
    private void CountKeyActive(StoredItem item)
    {
        if (item.OrderingKey is not { } key || item.KeyReserved)
        {
            return;
        }

        lock (_keyLock)
        {
            item.KeyActive = true;
            _keyActive[key] = _keyActive.GetValueOrDefault(key) + 1;
        }
    }

    /// <summary>
    /// Before the hand-off: of the batch's <paramref name="keys"/>, those this node may take a reserve for (another of its
    /// items of the key is to run, it holds no reserve of the key, the per-key limit is the only cluster limit). Starts
    /// counting their unpaired final ends until <see cref="EndKeyReservePlan"/>.
    /// </summary>
    private string[] KeyReserveKeys(string[] keys)
    {
        if (!_permits.PerKeyOnly)
        {
            return [];
        }

        lock (_keyLock)
        {
            _unpairedEnds.Clear();
            if (_keyReserveClosed)
            {
                return [];
            }

            foreach (var key in keys)
            {
                if (_keyActive.GetValueOrDefault(key) > 0 && !_keyReserve.ContainsKey(key))
                {
                    _unpairedEnds[key] = 0;
                }
            }

            return [.. _unpairedEnds.Keys];
        }
    }

    /// <summary>
    /// Room for up to <paramref name="reserves"/> reserves beside the <paramref name="room"/> the hand-off took for its
    /// starts: within what the node may hold (<see cref="ClaimLimit"/>) minus what it holds, plus the items the batch
    /// settles. Unlike <see cref="ReserveRoom"/> it does not leave out the room a claim of the claim loop has in flight
    /// (that claim takes all the free room while its statement runs, and under a binding per-key limit usually finds
    /// nothing): for that moment the node may hold at most one item per reserved key beyond its claim limit, never
    /// executing (a reserve starts only in place of a handler that ended). Taken as room (give it back with
    /// <see cref="ReturnRoom"/>).
    /// </summary>
    private int ReserveKeyRoom(int reserves, int settling, int room)
    {
        lock (_roomLock)
        {
            var free = Math.Min(reserves, ClaimLimit() - Volatile.Read(ref _held) + settling - Math.Max(room, 0));
            _roomReserved += Math.Max(free, 0);
            return Math.Max(free, 0);
        }
    }

    private void EndKeyReservePlan()
    {
        lock (_keyLock)
        {
            _unpairedEnds.Clear();
        }
    }

    /// <summary>
    /// After the hand-off committed, for a held item it claimed as its key's reserve: starts it (true) when a final end
    /// of its key came meanwhile, keeps it as the reserve (false, <paramref name="release"/> false), or, when no partner
    /// is left or the node stops, gives it up (<paramref name="release"/>: release it).
    /// </summary>
    private bool AcceptKeyReserve(StoredItem item, out bool release)
    {
        var key = item.OrderingKey!;
        lock (_keyLock)
        {
            release = false;
            if (!KeyReserveMayStart(item))
            {
                release = true; // the limits changed since the plan: it was claimed under a bound that no longer holds
                return false;
            }

            if (!_keyReserveClosed && _unpairedEnds.GetValueOrDefault(key) > 0)
            {
                _unpairedEnds[key]--;
                item.KeyActive = true;
                _keyActive[key] = _keyActive.GetValueOrDefault(key) + 1;
                return true;
            }

            if (_keyReserveClosed || _keyActive.GetValueOrDefault(key) == 0 || _keyReserve.ContainsKey(key))
            {
                release = true;
                return false;
            }

            _keyReserve[key] = item;
            return false;
        }
    }

    /// <summary>
    /// A delivery ended (its outcome about to be posted): it is no longer a partner of its key; a final outcome starts
    /// the key's reserve (returned, to execute once the outcome is posted) if the limits still allow it
    /// (<see cref="KeyReserveMayStart"/>), and the last partner's end, or limits that no longer allow it, give the
    /// reserve up (<paramref name="release"/>).
    /// </summary>
    private StoredItem? OnKeyItemEnded(StoredItem item, OutcomeKind kind, out StoredItem? release)
    {
        release = null;
        if (!item.KeyActive || item.OrderingKey is not { } key)
        {
            return null;
        }

        lock (_keyLock)
        {
            item.KeyActive = false;
            var left = _keyActive.GetValueOrDefault(key) - 1;
            if (left > 0)
            {
                _keyActive[key] = left;
            }
            else
            {
                _keyActive.Remove(key);
            }

            var final = kind is OutcomeKind.Completed or OutcomeKind.Dead or OutcomeKind.Cancelled;
            if (!_keyReserve.Remove(key, out var reserved))
            {
                if (final && _unpairedEnds.TryGetValue(key, out var unpaired))
                {
                    _unpairedEnds[key] = unpaired + 1;
                }

                return null;
            }

            if (final && !KeyReserveMayStart(reserved))
            {
                // The per-key limit was lowered (or another cluster limit set) since it was claimed: it does not start
                // in place of this end; released, it is claimed again under the limits now in force.
                release = reserved;
                return null;
            }

            if (final)
            {
                reserved.KeyActive = true;
                _keyActive[key] = left + 1;
                return reserved;
            }

            if (left == 0)
            {
                release = reserved;
                return null;
            }

            _keyReserve[key] = reserved;
            return null;
        }
    }

    /// <summary>
    /// Gets a value indicating whether a key's reserved item may start in place of a handler of its key that ended: the
    /// per-key limit is still the queue's only cluster limit, and no lower than the one it was claimed under. A change
    /// of the limits binds every start after the node applied it.
    /// </summary>
    private bool KeyReserveMayStart(StoredItem item) => _permits.PerKeyOnly && _permits.PerKey >= item.KeyReserveBound;

    /// <summary>
    /// The node applied new cluster limits: releases the reserves claimed under a per-key limit that no longer holds
    /// (lowered, or another cluster limit set), back to ready now, rather than at the next end of their key.
    /// </summary>
    private void ReleaseKeyReservesNoLongerAllowed()
    {
        List<StoredItem>? release = null;
        lock (_keyLock)
        {
            foreach (var item in _keyReserve.Values)
            {
                if (!KeyReserveMayStart(item))
                {
                    (release ??= []).Add(item);
                }
            }

            foreach (var item in release ?? [])
            {
                _keyReserve.Remove(item.OrderingKey!);
            }
        }

        ReleaseKeyReserves(release ?? [], "the queue's cluster limits changed since it was claimed");
    }

    /// <summary>Starts a reserved item paired with a handler's end.</summary>
    private void StartKeyReserve(StoredItem item)
    {
        Interlocked.Increment(ref _keyReservesStarted);
        Interlocked.Increment(ref _handedOff);
        Execute(item);
    }

    /// <summary>Releases reserved items unstarted (back to ready once the release is written), counted and logged.</summary>
    private void ReleaseKeyReserves(List<StoredItem> items, string reason)
    {
        if (items.Count == 0)
        {
            return;
        }

        Interlocked.Add(ref _keyReservesReleased, items.Count);
        _logger.KeyReserveReleased(Name, items.Count, reason);
        foreach (var item in items)
        {
            _ = item.OnNotRun(RejectionReason.ShutDown); // posts Released
        }
    }

    /// <summary>The node stops claiming: no more reserves; the unstarted ones are released.</summary>
    private void CloseKeyReserve()
    {
        List<StoredItem> release;
        lock (_keyLock)
        {
            _keyReserveClosed = true;
            release = [.. _keyReserve.Values];
            _keyReserve.Clear();
        }

        ReleaseKeyReserves(release, "the node is stopping");
    }

    /// <summary>A cancellation for a key's reserved item: it leaves the reserve (true), to end cancelled without running.</summary>
    private bool TryUnreserveKey(StoredItem item)
    {
        if (!item.KeyReserved || item.OrderingKey is not { } key)
        {
            return false;
        }

        lock (_keyLock)
        {
            return _keyReserve.TryGetValue(key, out var reserved) && ReferenceEquals(reserved, item) && _keyReserve.Remove(key);
        }
    }
}
