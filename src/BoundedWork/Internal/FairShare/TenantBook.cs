using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// The executor's fair-share component: the tenants' lanes (<see cref="FairQueue{T}"/>), their bounds and their
/// counters, under one lock.
/// </summary>
/// <remarks>
/// <para>
/// <b>How it meets the queue.</b> A tenant item takes a slot of the executor's queue like any item, but the slot holds
/// a placeholder (<see cref="TenantEntry"/>) and the item waits in its tenant's lane. A worker that claims a
/// placeholder asks <see cref="Resolve"/> for the scheduler's pick. The invariant (F1): <b>items in the lanes =
/// placeholders admitted and not yet resolved + deferred</b>. Every party keeps it: an admission adds a placeholder
/// and an item (<see cref="Admit"/>, before the slot is written, so the worker that claims it finds an item); a
/// resolve takes one of each; an eviction of a placeholder from the queue takes an item (<see cref="TakeForEviction"/>);
/// shedding the longest backlog swaps an item for another and leaves the queue alone (<see cref="TryShed"/>); a
/// shutdown deadline takes every item (<see cref="TakeAll"/>), and a worker that claims a placeholder after it finds
/// none and counts nothing (the deadline counted the item). So a worker that claims a placeholder always finds an item,
/// each item is run or refused exactly once, and the executor's ledger stays exact.
/// </para>
/// <para>
/// <b>Deferred.</b> When every backlogged tenant is at its running bound, the claiming worker finds no item it may
/// start: it leaves the placeholder deferred (F1's second term; the statistics show it as starting). Its slot is free,
/// so tenant items are admitted against the capacity less the deferred ones (<see cref="Deferred"/>): what the executor
/// holds stays within its queue capacity plus, for items without a tenant, the deferred ones. Every deferred
/// placeholder has a running tenant item behind it (a bound is at least 1); when one finishes, the book says a deferred
/// item may start (<see cref="DeferredMayStart"/>), the executor counts that as work (its workers wake for it, and the
/// worker that finished goes on to take it), and a worker takes it with <see cref="TakeDeferred"/> only after the
/// executor's pause and rate-limit checks, like any item it starts. So a deferred item never waits for a wake-up that
/// does not come, and it never starts while the executor is paused or without a permit.
/// </para>
/// <para>
/// <b>Locks.</b> Its own, never held while user code runs. Taken under the waiting producers' lock (an admitted waiting
/// producer's item joins its lane before its slot is written); it takes no other lock itself.
/// </para>
/// </remarks>
internal sealed class TenantBook
{
    private readonly ItemClock _clock;
    private readonly Dictionary<string, TenantCounters> _series = new(StringComparer.Ordinal);
    private readonly TenantCounters _other = new(TenantStatistics.OtherTenants);
    private readonly FairQueue<TenantEntry> _queue;
    private FairShareSettings _settings;
    private int _deferred;
    private bool _deferredMayStart;

    public TenantBook(ItemClock clock, FairShareSettings? settings)
    {
        _clock = clock;
        _settings = settings ?? new FairShareSettings();
        _queue = new FairQueue<TenantEntry>(_settings.GetWeight, _settings.MaxRunningPerTenant ?? int.MaxValue);
    }

    private object SyncObj => _series;

    /// <summary>Puts new fair-share settings in force (weights and bounds apply from the next decision).</summary>
    public void Apply(FairShareSettings? settings)
    {
        if (settings is null)
        {
            return; // turned off: what is held still runs under the settings it had
        }

        lock (SyncObj)
        {
            _settings = settings;
            _queue.Apply(settings.GetWeight, settings.MaxRunningPerTenant ?? int.MaxValue);
        }
    }

    /// <summary>
    /// Reserves room in the tenant's lane for an item on its way in; <see langword="false"/> when the tenant already
    /// holds <see cref="FairShareSettings.MaxQueuedPerTenant"/> items (queued or on their way).
    /// </summary>
    public bool TryReserve(string tenant)
    {
        lock (SyncObj)
        {
            var lane = _queue.LaneOf(tenant);
            if (_settings.MaxQueuedPerTenant is { } max && lane.Items.Count + lane.Reserved >= max)
            {
                _queue.ForgetIfIdle(lane);
                return false;
            }

            lane.Reserved++;
            return true;
        }
    }

    /// <summary>A reservation ends without the item being queued; <paramref name="refused"/> counts a refusal.</summary>
    public void Unreserve(string tenant, bool refused)
    {
        lock (SyncObj)
        {
            var lane = _queue.LaneOf(tenant);
            Debug.Assert(lane.Reserved > 0, "Only a reservation ends.");
            lane.Reserved--;
            if (refused)
            {
                CountersOf(tenant).Refused++;
            }

            _queue.ForgetIfIdle(lane);
        }
    }

    /// <summary>Counts a refusal of an item that never reserved room (its tenant's bound was reached).</summary>
    public void Refused(string tenant)
    {
        lock (SyncObj)
        {
            CountersOf(tenant).Refused++;
        }
    }

    /// <summary>The reserved item's placeholder was admitted: the item joins its lane (F1), before its slot is written.</summary>
    public void Admit(TenantEntry entry)
    {
        lock (SyncObj)
        {
            var lane = _queue.LaneOf(entry.Tenant);
            Debug.Assert(lane.Reserved > 0, "An item is admitted on its reservation.");
            lane.Reserved--;
            _queue.Enqueue(lane, entry);
            _queue.AssertInvariants();
        }
    }

    /// <summary>
    /// A worker claimed a placeholder: the scheduler's pick, counted as running, or <see langword="null"/> when every
    /// backlogged tenant is at its running bound (the placeholder is deferred) or a shutdown deadline took the items.
    /// </summary>
    public TenantEntry? Resolve()
    {
        lock (SyncObj)
        {
            if (_queue.TryDequeue(out _, out var entry))
            {
                Started(entry);
                return entry;
            }

            if (_queue.Count != 0)
            {
                Volatile.Write(ref _deferred, _deferred + 1);
            }

            return null;
        }
    }

    /// <summary>
    /// A tenant item a worker took has finished (<paramref name="outcome"/>), or will not run (its caller cancelled
    /// it); returns <see langword="true"/> when a deferred item may now start (a worker takes it with
    /// <see cref="TakeDeferred"/>, after the executor's pause and rate-limit checks, as for any item it starts).
    /// </summary>
    public bool Finished(TenantEntry entry, ItemOutcome outcome)
    {
        lock (SyncObj)
        {
            var counters = CountersOf(entry.Tenant);
            if (outcome == ItemOutcome.Failed)
            {
                counters.Failed++;
            }
            else if (outcome == ItemOutcome.Completed)
            {
                counters.Completed++;
            }

            var lane = _queue.Find(entry.Tenant);
            Debug.Assert(lane is not null, "A running item's lane is kept.");
            _queue.Finished(lane!);
            if (_deferred != 0)
            {
                Volatile.Write(ref _deferredMayStart, true);
            }

            return _deferredMayStart;
        }
    }

    /// <summary>
    /// Gets whether a deferred item may start now (a hint, read without the lock: set when a tenant item finishes while
    /// items are deferred, cleared when <see cref="TakeDeferred"/> finds none the scheduler lets start).
    /// </summary>
    public bool DeferredMayStart => Volatile.Read(ref _deferredMayStart);

    /// <summary>
    /// Takes a deferred item the scheduler now lets start, counted as running, or <see langword="null"/> when there is
    /// none (every backlogged tenant is still at its running bound, or nothing is deferred).
    /// </summary>
    public TenantEntry? TakeDeferred()
    {
        lock (SyncObj)
        {
            if (_deferred != 0 && _queue.TryDequeue(out _, out var next))
            {
                Volatile.Write(ref _deferred, _deferred - 1);
                Started(next);
                return next;
            }

            Volatile.Write(ref _deferredMayStart, false);
            return null;
        }
    }

    /// <summary>
    /// A placeholder was evicted from the queue (DiscardOldest): takes the oldest item of the placeholder's tenant, or of
    /// the tenant with the longest backlog, counted as refused; <see langword="null"/> after a shutdown deadline took them.
    /// </summary>
    public TenantEntry? TakeForEviction(TenantEntry placeholder)
    {
        lock (SyncObj)
        {
            var lane = _queue.Find(placeholder.Tenant) is { Items.Count: > 0 } own ? own : _queue.LongestBacklog();
            if (lane is null)
            {
                return null;
            }

            var evicted = _queue.RemoveOldest(lane);
            CountersOf(evicted.Tenant).Refused++;
            return evicted;
        }
    }

    /// <summary>
    /// DiscardOldest, decided at once: reserves room in the tenant's lane when the tenant is below
    /// <see cref="FairShareSettings.MaxQueuedPerTenant"/> (<see cref="TenantRoom.Reserved"/>); past it, the new item
    /// takes the place of the tenant's oldest queued one, which is returned (counted as refused;
    /// <see cref="TenantRoom.Swapped"/>); <see cref="TenantRoom.Full"/> when every item the tenant holds is still a
    /// reservation on its way in (none queued to swap).
    /// </summary>
    public TenantRoom ReserveOrSwapOldest(TenantEntry entry, out TenantEntry? evicted)
    {
        lock (SyncObj)
        {
            evicted = null;
            var lane = _queue.LaneOf(entry.Tenant);
            if (_settings.MaxQueuedPerTenant is not { } max || lane.Items.Count + lane.Reserved < max)
            {
                lane.Reserved++;
                return TenantRoom.Reserved;
            }

            if (lane.Items.Count == 0)
            {
                _queue.ForgetIfIdle(lane);
                return TenantRoom.Full;
            }

            evicted = _queue.RemoveOldest(lane);
            CountersOf(entry.Tenant).Refused++;
            _queue.Enqueue(_queue.LaneOf(entry.Tenant), entry); // the lane may have left the turn when it emptied
            _queue.AssertInvariants();
            return TenantRoom.Swapped;
        }
    }

    /// <summary>
    /// The queue is full and the longest backlog gives way: if another tenant holds more queued items than the entry's
    /// tenant, its newest item is taken out (returned, counted as refused) and the entry, reserved, takes its place in
    /// the lanes; the queue's slots do not change (F1). <see langword="false"/> when the entry's own tenant has the
    /// longest backlog (the entry itself is then the one to refuse).
    /// </summary>
    public bool TryShed(TenantEntry entry, out TenantEntry shed)
    {
        lock (SyncObj)
        {
            var own = _queue.LaneOf(entry.Tenant);
            var longest = _queue.LongestBacklog();
            if (longest is null || longest == own || longest.Items.Count <= own.Items.Count + 1)
            {
                shed = null!;
                return false;
            }

            shed = _queue.RemoveNewest(longest);
            CountersOf(shed.Tenant).Refused++;
            own.Reserved--;
            _queue.Enqueue(own, entry);
            _queue.AssertInvariants();
            return true;
        }
    }

    /// <summary>A shutdown deadline: takes every item still in a lane, deferred ones included.</summary>
    public List<TenantEntry> TakeAll()
    {
        lock (SyncObj)
        {
            Volatile.Write(ref _deferred, 0);
            Volatile.Write(ref _deferredMayStart, false);
            return _queue.TakeAll();
        }
    }

    /// <summary>Counts an item run by its submitting thread (CallerRuns) under its tenant.</summary>
    public void CallerFinished(string tenant, ItemOutcome outcome)
    {
        lock (SyncObj)
        {
            var counters = CountersOf(tenant);
            if (outcome == ItemOutcome.Failed)
            {
                counters.Failed++;
            }
            else if (outcome == ItemOutcome.Completed)
            {
                counters.Completed++;
            }
        }
    }

    /// <summary>The tenants, busiest first (queued and running, then completed), at most <paramref name="top"/>.</summary>
    public IReadOnlyList<TenantStatistics> Read(int top)
    {
        lock (SyncObj)
        {
            var rows = new Dictionary<string, TenantStatistics>(StringComparer.Ordinal);
            foreach (var counters in _series.Values.Append(_other))
            {
                if (counters == _other && counters.Started + counters.Refused == 0)
                {
                    continue;
                }

                rows[counters.Tenant] = Row(counters.Tenant, counters, 0, 0, _settings.GetWeight(counters.Tenant));
            }

            foreach (var lane in _queue.Lanes)
            {
                var counters = CountersOf(lane.Tenant);
                var key = counters == _other ? lane.Tenant : counters.Tenant;
                rows[key] = Row(lane.Tenant, counters, lane.Items.Count + lane.Reserved, lane.Running, lane.Weight, counters == _other);
            }

            return [.. rows.Values
                .OrderByDescending(static r => r.Queued + r.Running)
                .ThenByDescending(static r => r.Completed + r.Failed + r.Refused)
                .ThenBy(static r => r.Tenant, StringComparer.Ordinal)
                .Take(top)];
        }
    }

    /// <summary>
    /// The rows for the metrics: one per tenant with its own series, and one <see cref="TenantStatistics.OtherTenants"/>
    /// row for every other tenant together (its counters, and the items those tenants hold now), so the number of
    /// series never exceeds <see cref="FairShareSettings.TenantSeriesLimit"/> + 1. Empty while fair share was never used.
    /// </summary>
    public List<TenantStatistics> ReadSeries()
    {
        lock (SyncObj)
        {
            var queued = new Dictionary<TenantCounters, (int Queued, int Running)>();
            foreach (var lane in _queue.Lanes)
            {
                var counters = CountersOf(lane.Tenant);
                var (q, r) = queued.GetValueOrDefault(counters);
                queued[counters] = (q + lane.Items.Count + lane.Reserved, r + lane.Running);
            }

            var rows = new List<TenantStatistics>(_series.Count + 1);
            foreach (var counters in _series.Values.Append(_other))
            {
                var (q, r) = queued.GetValueOrDefault(counters);
                if (counters == _other && q + r + counters.Started + counters.Refused == 0)
                {
                    continue;
                }

                rows.Add(Row(counters.Tenant, counters, q, r, _settings.GetWeight(counters.Tenant)));
            }

            return rows;
        }
    }

    /// <summary>Checks the bookkeeping (Debug builds and tests).</summary>
    [Conditional("DEBUG")]
    public void AssertInvariants()
    {
        lock (SyncObj)
        {
            _queue.AssertInvariants();
            Debug.Assert(_deferred >= 0 && _deferred <= _queue.Count, "A deferred placeholder has its item in a lane.");
        }
    }

    /// <summary>
    /// Gets the placeholders deferred now: their items are out of the queue's slots but still held, so tenant items
    /// are admitted against the capacity less this (the queue's bound holds for what is held, not only what is in slots).
    /// </summary>
    public int Deferred => Volatile.Read(ref _deferred);

    /// <summary>Gets the items held in the lanes; for tests.</summary>
    internal int Count
    {
        get
        {
            lock (SyncObj)
            {
                return _queue.Count;
            }
        }
    }

    private static TenantStatistics Row(string tenant, TenantCounters counters, int queued, int running, int weight, bool pooled = false) =>
        pooled
            ? new TenantStatistics(tenant, weight, queued, running, 0, 0, 0, TimeSpan.Zero)
            : new TenantStatistics(tenant, weight, queued, running, counters.Completed, counters.Failed, counters.Refused,
                counters.Started == 0 ? TimeSpan.Zero : TimeSpan.FromTicks(counters.WaitTicks / counters.Started));

    private void Started(TenantEntry entry)
    {
        var counters = CountersOf(entry.Tenant);
        counters.Started++;
        entry.Series = counters.Tenant;
        var wait = _clock.Elapsed(entry.Item.EnqueuedTimestamp, _clock.Now());
        counters.WaitTicks += Math.Max(0, wait.Ticks);
    }

    /// <summary>A tenant's counters: its own while fewer than the series limit have their own, else the shared "other" ones.</summary>
    private TenantCounters CountersOf(string tenant)
    {
        if (_series.TryGetValue(tenant, out var counters))
        {
            return counters;
        }

        if (_series.Count >= _settings.TenantSeriesLimit)
        {
            return _other;
        }

        counters = new TenantCounters(tenant);
        _series.Add(tenant, counters);
        return counters;
    }

    /// <summary>One tenant's counters (or the shared ones of the tenants past the series limit); changed under the book's lock.</summary>
    private sealed class TenantCounters(string tenant)
    {
        public string Tenant { get; } = tenant;

        public long Completed { get; set; }

        public long Failed { get; set; }

        public long Refused { get; set; }

        public long Started { get; set; }

        public long WaitTicks { get; set; }
    }
}

/// <summary>What <see cref="TenantBook.ReserveOrSwapOldest"/> did with a new tenant item under DiscardOldest.</summary>
internal enum TenantRoom
{
    /// <summary>Room was reserved in the tenant's lane: the item goes on to be admitted.</summary>
    Reserved,

    /// <summary>The item took the place of the tenant's oldest queued item (evicted).</summary>
    Swapped,

    /// <summary>The tenant is at its bound with every item still on its way in: nothing to swap yet.</summary>
    Full,
}
