using System.Diagnostics;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The claim loop: on its own thread, it books room in the node's room, takes cluster permits for it, runs one claim
/// statement, and hands what it claimed to the node (held, then started or reserved). It owns the claim cadence (claim
/// again at once while claims come back full, back off after empty claims, else wait for a wake-up, the poll interval
/// or the next due item), the wake-ups, and the lease reaper's schedule. See docs/durable-invariants.md, I4 and I5.
/// While its claims come back full (a backlog), it carries the outcomes posted meanwhile: its next claim writes them in
/// its own transaction and claims the room they free (one commit for both), and the outcome writer waits meanwhile.
/// </summary>
/// <remarks>
/// <para>
/// <b>State.</b> <c>_wake</c>: the pending wake-up (any number of <see cref="Wake"/> calls during a claim leave one);
/// <c>_booked</c>: the room its claim in flight booked in the <see cref="NodeRoom"/> (zero between claims);
/// <c>_claimed</c>: the items it claimed and started (a statistic); <c>_carrying</c>: whether it carries the posted
/// outcomes with its claims (the claim thread's own; the outcome writer defers while it is set); <c>_waitingForOutcomes</c>:
/// set (1) while it carries, has no room, and waits: a posted outcome wakes it (<see cref="Posted"/>); set (2) while it
/// carries and waits for its items still to finish (held, outcome not posted) to fall to <c>_lowWater</c>: the outcome
/// that brings them there wakes it.
/// </para>
/// <para>
/// <b>Invariant.</b> <c>0 &lt;= booked &lt;= MaxClaimBatch</c>, and <c>booked</c> is zero whenever the loop waits: the
/// room it books for a claim goes back, claim failed or not, before it waits (I5). The permits it takes for a claim go
/// to the claimed items that hold them or back to the permits before the claim returns (I4). Every claimed row is held
/// by the node (<see cref="IClaimLoopHost.Hold"/>) before it is started or reserved.
/// </para>
/// <para>
/// <b>Lock.</b> None: its state is the claim thread's own (<c>_claimed</c> is read with interlocked operations, the
/// wake-up is a kernel event). It takes the room's lock and the permits' lock, never both at once, and neither is held
/// while its statement runs.
/// </para>
/// </remarks>
internal sealed class ClaimLoop : IDisposable
{
    /// <summary>The most items one claim asks for.</summary>
    public const int MaxClaimBatch = 500;

    /// <summary>The loop's name in the storage health and its log events.</summary>
    public const string LoopName = "claiming";

    /// <summary>The shortest wait for a scheduled item's time: its time as the database reported it, rounded up to this.</summary>
    private static readonly TimeSpan MinScheduleWait = TimeSpan.FromMilliseconds(1);

    private readonly IClaimLoopHost _host;
    private readonly ClaimLoopSettings _settings;
    private readonly NodeRoom _room;
    private readonly ClusterPermits _permits;
    private readonly ClaimStatements _claims;
    private readonly NpgsqlDataSource _dataSource;
    private readonly ILogger _logger;
    private readonly OutcomeWriter? _outcomes;
    private readonly WakeSignal _wake = new();
    private int _booked;
    private long _claimed;
    private long _carried;
    private long _fairClaims;
    private bool _carrying;
    private int _waitingForOutcomes;
    private int _lowWater;

    public ClaimLoop(IClaimLoopHost host, ClaimLoopSettings settings, NodeRoom room, ClusterPermits permits, ClaimStatements claims, NpgsqlDataSource dataSource, ILogger logger, OutcomeWriter? outcomes = null)
    {
        _outcomes = outcomes;
        _host = host;
        _settings = settings;
        _room = room;
        _permits = permits;
        _claims = claims;
        _dataSource = dataSource;
        _logger = logger;
    }

    /// <summary>
    /// Gets or sets a test hook: runs on the claim thread after a claim took its permits and read the per-key limit and
    /// the settings version, before its statement runs (null: none).
    /// </summary>
    internal Action? BeforeClaimStatement { get; set; }

    /// <summary>
    /// Gets or sets a test hook: runs on the claim thread after a claim's transaction committed, before its rows are
    /// handed to the node, with how many rows it read (null: none). A hook that throws is an answer lost after the
    /// commit: the rows stay leased to the node, unheld, until their lease ends and they are reaped.
    /// </summary>
    internal Action<int>? AfterClaimCommit { get; set; }

    /// <summary>Gets how many items the loop claimed and started (or reserved).</summary>
    public long ClaimedCount => Interlocked.Read(ref _claimed);

    /// <summary>Gets how many of the loop's claims were fair claims (a statistic for tests).</summary>
    public long FairClaims => Interlocked.Read(ref _fairClaims);

    /// <summary>Gets how many of the loop's claims carried outcomes (a statistic for tests and benchmarks).</summary>
    public long CarriedClaims => Interlocked.Read(ref _carried);

    /// <summary>Wakes the loop: it claims again as soon as its claim in flight (if any) is done.</summary>
    public void Wake() => _wake.Set();

    /// <summary>An outcome was posted: wakes the loop if it waits for one to carry (it carries outcomes and has no room).</summary>
    public void Posted()
    {
        var waiting = Volatile.Read(ref _waitingForOutcomes);
        if (waiting == 1 || (waiting == 2 && Unfinished() <= Volatile.Read(ref _lowWater)))
        {
            _wake.Set();
        }
    }

    /// <summary>Runs the loop on the calling thread until <paramref name="cancellationToken"/> fires.</summary>
    public void Run(CancellationToken cancellationToken)
    {
        try
        {
            Claim(cancellationToken);
        }
        finally
        {
            Carry(false); // the writer writes whatever is posted from now on
        }
    }

    private void Claim(CancellationToken cancellationToken)
    {
        var failureDelay = TimeSpan.FromMilliseconds(100);
        var reap = new LoopSchedule(_settings.TimeProvider, ReapInterval(), dueNow: true);
        var emptyClaims = 0;
        while (!cancellationToken.IsCancellationRequested)
        {
            // The node claims up to what it may hold (as without limits), within its free cluster permits and tokens.
            // (Room taken: a hand-off in the outcome writer's transaction may claim meanwhile, see NodeRoom.) Carrying
            // outcomes, the claim writes them in its transaction: the room of their items counts as free (settling).
            var handOff = false;
            var riders = _carrying ? _outcomes!.TakeRiders(out handOff) : null;
            if (_carrying && handOff)
            {
                Carry(false); // a final outcome of a keyed item: the writer's hand-off writes it (and the rest, from now on)
            }

            var wanted = _room.Book(MaxClaimBatch, settling: riders?.Count ?? 0);
            Volatile.Write(ref _booked, Math.Max(wanted, 0));
            var claim = default(ClaimSummary);
            try
            {
                if (reap.IsDue)
                {
                    _host.ReapExpiredLeases();
                    reap.Restart();
                }

                _host.Apply(_permits.Rebalance()); // free permits to reserved items; a lapsed or shrunk grant's reserve released
                if (wanted > 0 && !_permits.NoIdleWorkerToClaimFor(_host.WorkerCount))
                {
                    claim = ClaimUnderPermits(wanted, ref riders);
                }
                else
                {
                    _permits.NothingRequested();
                }

                if (riders is not null)
                {
                    // No room for them after all (the limit was lowered): the writer writes them.
                    _outcomes!.RidersFailed(riders, attempted: false);
                    riders = null;
                    Carry(false);
                }

                _host.Succeeded(LoopName);
                failureDelay = TimeSpan.FromMilliseconds(100);
            }
            catch (Exception ex)
            {
                if (riders is not null)
                {
                    _outcomes!.RidersFailed(riders, attempted: true); // written by the writer, with its retries
                }

                Carry(false);
                Unbook(wanted);
                failureDelay = _host.Failed(LoopName, ex, failureDelay, cancellationToken);
                continue;
            }

            Unbook(wanted);

            var requested = claim.Requested;
            var full = requested > 0 && claim.Claimed == requested && requested == wanted;
            if (full || (requested > 0 && (claim.Promoted > 0 || (claim.More && claim.Claimed > 0))))
            {
                // There may be more, or scheduled items just became ready: claim again at once; a full claim carries the
                // outcomes posted meanwhile with the next one, once the node's items still to finish fall to its low water.
                Carry(_carrying || full);
                if (full && _carrying && !_permits.IsLimited)
                {
                    WaitForLowWater(cancellationToken);
                }

                continue;
            }

            if (_carrying && wanted <= 0)
            {
                // A backlog, and every held item still to run: the next posted outcome frees room, claim with it then.
                // (Marked before looking, so that an outcome posted after the look wakes the wait.)
                Interlocked.Exchange(ref _waitingForOutcomes, 1);
                if (!_outcomes!.HasPending)
                {
                    Debug.Assert(Volatile.Read(ref _booked) == 0, "I5: the claim loop waits with room booked");
                    _wake.Wait(_settings.PollInterval, cancellationToken);
                }

                Volatile.Write(ref _waitingForOutcomes, 0);
                continue;
            }

            Carry(false);

            emptyClaims = requested > 0 && claim.Claimed == 0 ? emptyClaims + 1 : 0;
            if (emptyClaims >= 2)
            {
                // Notified again and again, and another node took the items each time: wait a little before
                // answering the next notification (wake-ups meanwhile are kept), so that several nodes do not all
                // run an empty claim for every item, and the notifications of a burst are answered by one claim.
                var backoff = TimeSpan.FromMilliseconds(Math.Min(1 << Math.Min(emptyClaims - 2, 4), 16) * (0.5 + Random.Shared.NextDouble()));
                cancellationToken.WaitHandle.WaitOne(backoff);
            }

            // Until woken, the poll interval, or the time the next scheduled item falls due (as the last claim saw it;
            // a delayed item enqueued since then by another node wakes this one with its notification).
            var wait = _settings.PollInterval;
            if (claim.NextDue is { } nextDue && nextDue < wait)
            {
                wait = nextDue > MinScheduleWait ? nextDue : MinScheduleWait;
            }

            Debug.Assert(Volatile.Read(ref _booked) == 0, "I5: the claim loop waits with room booked");
            _wake.Wait(wait, cancellationToken);
        }
    }

    /// <summary>The node's items still to finish: held, their outcome not posted (running, or claimed and not started).</summary>
    private int Unfinished() => _room.Held - _outcomes!.PendingCount;

    /// <summary>
    /// Carrying a backlog: waits until the node's items still to finish fall to its low water (a quarter of its room, and
    /// at least twice its workers: those running and as many more to start, so that the workers do not run dry while the
    /// claim runs), at most the poll interval, so that the next claim takes nearly a full batch. Booked is zero meanwhile (I5).
    /// </summary>
    private void WaitForLowWater(CancellationToken cancellationToken)
    {
        var lowWater = Math.Max(2 * _host.WorkerCount, _room.Limit / 4);
        Volatile.Write(ref _lowWater, lowWater);
        Interlocked.Exchange(ref _waitingForOutcomes, 2); // marked before looking: an outcome posted after the look wakes the wait
        var start = Stopwatch.GetTimestamp();
        while (!cancellationToken.IsCancellationRequested && Unfinished() > lowWater)
        {
            var left = _settings.PollInterval - Stopwatch.GetElapsedTime(start);
            if (left <= TimeSpan.Zero)
            {
                break;
            }

            Debug.Assert(Volatile.Read(ref _booked) == 0, "I5: the claim loop waits with room booked");
            _wake.Wait(left, cancellationToken);
        }

        Volatile.Write(ref _waitingForOutcomes, 0);
    }

    /// <summary>Checks the loop's invariant (in Debug builds): called by the stress tests, from any thread.</summary>
    [Conditional("DEBUG")]
    public void AssertInvariants()
    {
        var booked = Volatile.Read(ref _booked);
        Debug.Assert(booked is >= 0 and <= MaxClaimBatch, "I5: the claim loop's booked room out of range");
        Debug.Assert(Interlocked.Read(ref _claimed) >= 0, "the claim loop's claimed count below zero");
    }

    public void Dispose() => _wake.Dispose();

    private TimeSpan ReapInterval() => TimeSpan.FromTicks(Math.Min(_settings.PollInterval.Ticks, _settings.LeaseDuration.Ticks / 4));

    /// <summary>Starts or ends carrying the posted outcomes with the claims (the writer waits while the loop carries).</summary>
    private void Carry(bool carrying)
    {
        if (_outcomes is null || carrying == _carrying)
        {
            return;
        }

        _carrying = carrying;
        _outcomes.Defer(carrying, Posted);
    }

    private void Unbook(int wanted)
    {
        Volatile.Write(ref _booked, 0);
        _room.Unbook(wanted);
    }

    /// <summary>
    /// Claims up to <paramref name="wanted"/> items (what the node may hold now) under its cluster permits: takes the
    /// free local permits and whole tokens, then runs the plain claim (or, for a queue with <c>max_running_per_key</c>
    /// above one, the keyed claim) for that many, with no lock. With nothing to take, the plain claim runs for none, to
    /// count what waits and to see the settings version. Either claim runs under the version its permits and M were
    /// read under (<see cref="PermitTake"/>); finds another: claims nothing, and the cluster loop renews the grant now.
    /// </summary>
    private ClaimSummary ClaimUnderPermits(int wanted, ref OutcomeWriter.Riders? riders)
    {
        // Under a start rate or fair share, no more than the idle workers: every item claimed starts at once (and, under
        // a rate, spends its token then; under fair share, no item waits on this node behind items claimed ahead).
        var take = _permits.Take(_permits.StartRoom(wanted, _host.WorkerCount));
        if (take.LapsedNow)
        {
            _logger.PermitGrantLapsed(_settings.Queue, _settings.NodeHeartbeatInterval * 3);
            _host.Apply(_permits.Rebalance()); // the lapsed grant's reserve goes back to ready
        }

        // The running limit binds: up to one more item per permit held, kept unstarted until a permit frees (the
        // plain claim only: the keyed claim's per-key count is the statement's own).
        var perKey = take.PerKey;
        // (None under fair share, with or without a per-tenant start rate: every item claimed starts at once, see StartRoom.)
        var room = perKey <= 1 && !take.FairShare ? _permits.ReserveSlots(wanted, take.Count) : 0;

        var claimed = new List<StoredItem>(Math.Min(take.Count, 64));
        var summary = default(ClaimSummary);
        var keyed = take.Count > 0 && perKey > 1;
        var fair = take.Count > 0 && !keyed && take.FairShare;
        var read = false;
        try
        {
            BeforeClaimStatement?.Invoke();
            using var connection = _dataSource.OpenConnection();
            // Carried outcomes are written first, in the claim's transaction (each statement sent on its own, as the
            // writer's hand-off does): the claim sees their rows settled, and one commit ends both.
            // A plain claim carries the outcomes in its own statement (one round trip, one commit; its snapshot does not
            // see them settled, see StorageSql.ClaimCarrying). The per-key and fair claims write them first in the claim's
            // transaction, so that their per-key and per-tenant counts see those rows settled; a fair claim runs in a
            // transaction anyway: its lock, then the claim (see FairClaimStatement).
            var carriedInStatement = riders is not null && !keyed && !fair;
            using var transaction = (riders is null || carriedInStatement) && !fair ? null : connection.BeginTransaction();
            var recorded = 0L;
            if (riders is not null && !carriedInStatement)
            {
                using var write = _outcomes!.RiderCommand(riders, connection, transaction!);
                recorded = OutcomeStatement.ExecuteRecorded(write);
            }

            if (fair)
            {
                // Fair share: the queue's fair claims take turns (the lock, held until the commit, then the claim).
                _claims.Fair.Lock(connection, transaction!, _settings.Queue);
                using var fairClaim = _claims.Fair.Command(connection, transaction!, new PlainClaimParameters(_settings.Queue, take.Count + room, _settings.Node, _settings.LeaseDuration, take.Version, take.Bound ? wanted : 0), take.TenantRated);
                using var fairReader = fairClaim.ExecuteReader();
                summary = ClaimReader.Read<FairClaimRow>(fairReader, _host, claimed);
                Interlocked.Increment(ref _fairClaims);
            }
            else if (carriedInStatement)
            {
                using var command = _outcomes!.CarryingClaimCommand(riders!, connection, new PlainClaimParameters(_settings.Queue, take.Count + room, _settings.Node, _settings.LeaseDuration, take.Version, take.Bound ? wanted : 0));
                using var reader = command.ExecuteReader();
                summary = ClaimReader.Read<CarryingClaimRow>(reader, _host, claimed);
                recorded = summary.Recorded;
            }
            else
            {
                using var command = keyed
                    ? _claims.Keyed.Command(connection, new KeyedClaimParameters(_settings.Queue, take.Count + room, _settings.Node, _settings.LeaseDuration, perKey, take.Version))
                    : _claims.Plain.Command(connection, new PlainClaimParameters(_settings.Queue, take.Count + room, _settings.Node, _settings.LeaseDuration, take.Version, take.Bound ? wanted : 0));
                using var reader = command.ExecuteReader();

                // The claimed rows (the plain claim's carry their place in the claim order: the reserve starts them in it),
                // and the summary: promotions, the next wake-up, the version and what waits (or what the per-key rule held).
                summary = keyed
                    ? ClaimReader.Read<KeyedClaimRow>(reader, _host, claimed)
                    : ClaimReader.Read<PlainClaimRow>(reader, _host, claimed);
            }

            transaction?.Commit();
            AfterClaimCommit?.Invoke(claimed.Count);
            read = true;
            if (riders is not null)
            {
                var written = riders;
                riders = null;
                _outcomes!.RidersWritten(written, recorded); // settled: their room is what this claim booked
                Interlocked.Increment(ref _carried);
            }
        }
        finally
        {
            // A claim that failed after reading some rows hands none of them to the executor: every permit (and the
            // claim tokens taken with them) goes back. (If it committed, those rows are leased to this node but not held:
            // not renewed, they are reaped.)
            _permits.Return(take.Count - (read ? Math.Min(claimed.Count, take.Count) : 0), take.Rated);
            _permits.ReserveSlotsDone(room);
        }

        var (waiting, oldestWait) = (summary.Waiting, summary.OldestWaitSeconds);
        var nextDue = summary.NextDue;
        if (claimed.Count > take.Count)
        {
            // The first items in the claim order (highest priority, then earliest due, then oldest) hold the permits; the
            // rest go to the reserve, held by the node but not started, and kept in that order.
            claimed.Sort(StoredItem.CompareClaimOrder);
            var reserved = claimed.GetRange(take.Count, claimed.Count - take.Count);
            claimed.RemoveRange(take.Count, reserved.Count);
            StorageMetrics.Claimed.Add(reserved.Count, StorageMetrics.QueueTag(_settings.Queue));
            foreach (var item in reserved)
            {
                _host.Hold(item);
            }

            _host.Apply(_permits.Reserve(reserved));
        }

        if (summary.Version is long seen && _permits.Stale(take.Version, seen, out var renew))
        {
            // The settings changed since the permits were taken (or were never read): the claim took nothing, and what it
            // counted as waiting was under other limits (not reported). Unless a renewal meanwhile caught up, renew now.
            if (renew)
            {
                _host.RenewGrantNow();
            }

            Submit(claimed);
            return summary with { Claimed = claimed.Count, Requested = 0 };
        }

        if (keyed && take.Bound && claimed.Count == take.Count)
        {
            // The keyed claim does not count the ready items; it found all its permits let it take: the node had room
            // for the items its permits held back (how long they waited is not known here).
            waiting = wanted - take.Count;
        }

        waiting = take.Bound ? Math.Min(waiting, wanted - take.Count) : 0;
        oldestWait = take.Bound ? oldestWait : 0;
        var limit = _permits.Allowed is int allowed && _permits.InUse >= allowed ? "max_running" : "starts_per_second";
        if (summary.HeldByKey > 0)
        {
            // Ready items the node had permits for that the per-key rule held back (their keys run M items): they wait
            // for a permit of their key.
            limit = waiting > 0 ? limit : "max_running_per_key";
            waiting += summary.HeldByKey;
            oldestWait = Math.Max(oldestWait, summary.OldestHeldByKeySeconds);
        }

        _permits.Claimed(claimed.Count, waiting, oldestWait);
        if (waiting > 0)
        {
            StorageMetrics.ClusterLimitedClaims.Add(1, StorageMetrics.QueueTag(_settings.Queue), new("boundedwork.storage.cluster.limit", limit));
            if (_permits.ShouldRenewEarly(_settings.NodeHeartbeatInterval / 10))
            {
                _host.RenewGrantNow(); // short of permits: ask for more now, not at the next heartbeat
            }

            // Under a start rate, wake when the next token is due (rounded up to the wait's millisecond, so as not to wake
            // just before it), not at the next poll; a token that came while the statement ran is claimed at once.
            if (take.RateBound && _permits.TimeToNextToken() is { } token && (nextDue is null || token < nextDue))
            {
                nextDue = TimeSpan.FromMilliseconds(Math.Ceiling(token.TotalMilliseconds));
            }
        }

        Submit(claimed);
        return summary with { Claimed = claimed.Count, Requested = take.Count, NextDue = nextDue };
    }

    /// <summary>Hands claimed (committed) deliveries to the node, in the claim order (id order for a keyed claim's items): each held, then started.</summary>
    private void Submit(List<StoredItem> claimed)
    {
        if (claimed.Count == 0)
        {
            return;
        }

        StorageMetrics.Claimed.Add(claimed.Count, StorageMetrics.QueueTag(_settings.Queue));
        Interlocked.Add(ref _claimed, claimed.Count);
        claimed.Sort(StoredItem.CompareClaimOrder);
        foreach (var item in claimed)
        {
            // The delivery's span is current while the item is submitted, so the item (and its handler) runs inside
            // it on the worker. Refused (the executor is shutting down): the OnRejected hook releases the row at once.
            _host.Hold(item);
            _host.Execute(item);
        }
    }
}

/// <summary>What the claim loop claims with: the queue, this node (the lease owner), and the queue's intervals.</summary>
internal sealed record ClaimLoopSettings(string Queue, string Node, TimeSpan PollInterval, TimeSpan LeaseDuration, TimeSpan NodeHeartbeatInterval, TimeProvider TimeProvider);

/// <summary>What the claim loop asks of the node it claims for: the steps of an item's life that are the node's.</summary>
internal interface IClaimLoopHost : IStoredItemOwner
{
    /// <summary>Gets the executor's current worker count.</summary>
    int WorkerCount { get; }

    /// <summary>Returns to ready the rows whose node stopped renewing its lease.</summary>
    void ReapExpiredLeases();

    /// <summary>Counts a claimed item as held by the node (room, lease, key).</summary>
    void Hold(StoredItem item);

    /// <summary>Hands a held delivery to the executor.</summary>
    void Execute(StoredItem item);

    /// <summary>Starts the reserved items that got a permit and releases those the reserve gave up.</summary>
    void Apply((List<StoredItem> Start, List<StoredItem> Release) reserve);

    /// <summary>Asks the cluster loop to renew the node's permit grant now.</summary>
    void RenewGrantNow();

    /// <summary>The loop's storage work succeeded (a recovery is logged).</summary>
    void Succeeded(string loop);

    /// <summary>The loop's storage work failed: reports it and waits; returns the next delay.</summary>
    TimeSpan Failed(string loop, Exception error, TimeSpan delay, CancellationToken cancellationToken);
}
