using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Writes the outcomes of a node's deliveries (completed, retry stored, dead letter, cancelled, released) to the table, batched:
/// one round trip carries every outcome that arrived while the previous one was in flight. A failed write is retried,
/// the same outcomes, until it succeeds or the node stops; an outcome that is never written leaves its item claimed
/// until the lease expires, after which it runs again (at least once). Runs on its own thread with synchronous I/O.
/// Every posted outcome is settled exactly once, through the <c>settled</c> callback (with its delivery): when its batch
/// is written, or when the writer gives up on it at a stop. Outcomes are written for the node's own deliveries only
/// (its lease owner and each delivery's token), so a batch written again after a lost answer changes nothing another
/// delivery holds. The queue counts its item as held until then. When a written batch made
/// an item claimable for other nodes, the writer wakes them through the node's notifier, after the write committed.
/// Under a per-key limit above one, a batch with final outcomes of keyed items also claims the next items of those keys
/// in its own transaction (<see cref="IOutcomeHandOff"/>); the node starts them after the commit.
/// While the claim loop claims back to back (a backlog), the outcomes ride with its claims instead (<see cref="Defer"/>,
/// <see cref="TakeRiders"/>): one transaction writes them and claims as many items as they free, and this writer waits.
/// </summary>
internal sealed class OutcomeWriter : IDisposable
{
    private const int MaxBatch = 2000;

    private readonly BlockingCollection<Outcome> _outcomes = new(new ConcurrentQueue<Outcome>());
    private readonly NpgsqlDataSource _dataSource;
    private readonly OutcomeStatement _statement;
    private readonly CarryingClaimStatement _carrying;
    private readonly string _queueName;
    private readonly string _leaseOwner;
    private readonly ILogger _logger;
    private readonly StorageHealth _health;
    private readonly TimeSpan _maxDelay;
    private readonly Action<IReadOnlyList<HeldDelivery>> _settled;
    private readonly Action _wakeOthers;
    private readonly IOutcomeHandOff? _handOff;
    private readonly ManualResetEventSlim _resumed = new(true);
    private Action? _carrier;

    public OutcomeWriter(NpgsqlDataSource dataSource, StorageSql sql, string queueName, string leaseOwner, bool deleteCompleted, ILogger logger, StorageHealth health, TimeSpan maxDelay, Action<IReadOnlyList<HeldDelivery>> settled, Action wakeOthers, IOutcomeHandOff? handOff = null)
    {
        _leaseOwner = leaseOwner;
        _handOff = handOff;
        _wakeOthers = wakeOthers;
        _dataSource = dataSource;
        _statement = new OutcomeStatement(sql.Items, deleteCompleted);
        _carrying = new CarryingClaimStatement(sql, _statement);
        _queueName = queueName;
        _logger = logger;
        _health = health;
        _maxDelay = maxDelay;
        _settled = settled;
    }

    /// <summary>Gets or sets a test's fault after a hand-off's commit: what it throws is taken for a lost answer (the write is retried).</summary>
    internal Action? AfterHandOffCommit { get; set; }

    public void Post(StoredItem item, OutcomeKind kind, TimeSpan retryDelay = default, string? error = null)
    {
        try
        {
            // Only two outcomes can make an item claimable for another node: a release (the row is ready again) and
            // the end of an ordered item (the next of its key may run). Any other outcome wakes no one: the node's own
            // claim loop is woken when the batch is written (the settled callback), and notifying every node for
            // every batch would make each of them run an empty claim. (A cluster permit freed here is this node's own:
            // see ClusterPermits.)
            // A final outcome of a keyed item frees a place of its key: the hand-off may fill it (its Key is set).
            var final = item.IsOrdered && kind is OutcomeKind.Completed or OutcomeKind.Dead or OutcomeKind.Cancelled;
            _outcomes.Add(new Outcome(kind, item.Id, item.Delivery, retryDelay.TotalMilliseconds, error, kind == OutcomeKind.Released || final, final ? item.OrderingKey : null));
        }
        catch (Exception ex) when (ex is InvalidOperationException or ObjectDisposedException)
        {
            // The writer has stopped (the node is stopping and its executor gave up at the deadline, or it is disposed).
            _settled([new HeldDelivery(item.Id, item.Delivery)]);
            _logger.OutcomesLostAtStop(_queueName, 1);
        }
    }

    /// <summary>Writes outcomes until <see cref="Complete"/> is called and every posted outcome is written, or <paramref name="abandon"/> fires.</summary>
    public void Run(CancellationToken abandon)
    {
        var batch = new List<Outcome>();
        try
        {
            while (true)
            {
                // The batch may start with the releases of items handed off while the node stopped (see below).
                if (batch.Count == 0)
                {
                    // While the claim loop carries the outcomes with its claims, they are its to write.
                    _resumed.Wait(abandon);
                    if (!_outcomes.TryTake(out var first, Timeout.Infinite, abandon))
                    {
                        break;
                    }

                    if (!_resumed.IsSet && Requeue(first))
                    {
                        // Taken just as the claim loop began to carry: it is the claim's to write (and the loop is woken).
                        Volatile.Read(ref _carrier)?.Invoke();
                        continue;
                    }

                    batch.Add(first);
                }

                while (batch.Count < MaxBatch && _outcomes.TryTake(out var outcome))
                {
                    batch.Add(outcome);
                }

                var written = WriteWithRetries(batch, abandon);
                if (written.WakeOthers)
                {
                    _wakeOthers();
                }

                _settled(Settled(batch));
                batch.Clear();
                foreach (var item in written.NotStarted)
                {
                    // Handed off after the node began to stop: held, never started; released by the next write.
                    batch.Add(new Outcome(OutcomeKind.Released, item.Id, item.Delivery, 0, null, WakesOthers: true, Key: null));
                }
            }
        }
        catch (OperationCanceledException) when (abandon.IsCancellationRequested)
        {
            // Given up: the batch being written and every outcome still waiting.
            while (_outcomes.TryTake(out var outcome))
            {
                batch.Add(outcome);
            }

            if (batch.Count > 0)
            {
                _settled(Settled(batch));
                _logger.OutcomesLostAtStop(_queueName, batch.Count);
            }
        }
    }

    /// <summary>No outcome is posted any more; <see cref="Run"/> ends once the posted ones are written.</summary>
    public void Complete()
    {
        _outcomes.CompleteAdding();
        _resumed.Set(); // a claim loop that never stopped carrying (its stop given up) defers to this writer no longer
    }

    /// <summary>Gets whether outcomes are posted and not yet taken by a write (or a claim).</summary>
    public bool HasPending => PendingCount > 0;

    /// <summary>Gets how many outcomes are posted and not yet taken by a write (or a claim).</summary>
    public int PendingCount => _outcomes.Count;

    /// <summary>
    /// The claim loop carries the posted outcomes with its claims (<see langword="true"/>: this writer takes none until
    /// called again with <see langword="false"/>, except a batch it had already begun) or leaves them to this writer.
    /// <paramref name="carrier"/> is called when an outcome this writer took meanwhile is handed back to the claim loop.
    /// </summary>
    public void Defer(bool deferred, Action? carrier = null)
    {
        if (deferred)
        {
            Volatile.Write(ref _carrier, carrier);
            _resumed.Reset();
            if (_outcomes.IsAddingCompleted)
            {
                _resumed.Set(); // completed meanwhile: the writer writes what is left
            }
        }
        else
        {
            _resumed.Set();
        }
    }

    /// <summary>
    /// Takes the outcomes posted so far for the claim loop's next claim (null: none). An outcome for the hand-off (a final
    /// outcome of a keyed item) is left to this writer (<paramref name="handOff"/> is then true), unless the writer no
    /// longer takes outcomes back. Every batch returned is ended exactly once: <see cref="RidersWritten"/> after the
    /// claim's commit, or <see cref="RidersFailed"/>.
    /// </summary>
    public Riders? TakeRiders(out bool handOff)
    {
        handOff = false;
        List<Outcome>? taken = null;
        while ((taken?.Count ?? 0) < MaxBatch && _outcomes.TryTake(out var outcome))
        {
            if (outcome.Key is not null && _handOff is not null && Requeue(outcome))
            {
                handOff = true;
                break;
            }

            (taken ??= []).Add(outcome);
        }

        return taken is null ? null : new Riders(taken);
    }

    /// <summary>The command that writes <paramref name="riders"/> in the claim's <paramref name="transaction"/>.</summary>
    public NpgsqlCommand RiderCommand(Riders riders, NpgsqlConnection connection, NpgsqlTransaction transaction) =>
        _statement.Command(connection, transaction, Parameters(riders.Outcomes));

    /// <summary>The plain claim that writes <paramref name="riders"/> in its own statement (one round trip, one commit).</summary>
    public NpgsqlCommand CarryingClaimCommand(Riders riders, NpgsqlConnection connection, in PlainClaimParameters claim) =>
        _carrying.Command(connection, claim, Parameters(riders.Outcomes));

    /// <summary>The claim that carried <paramref name="riders"/> committed: they are settled, and other nodes woken if they free items.</summary>
    public void RidersWritten(Riders riders, long recorded)
    {
        if (_health.Succeeded("writing outcomes"))
        {
            _logger.StorageRecovered(_queueName, "writing outcomes");
        }

        Recorded(riders.Outcomes, recorded, again: false);
        if (riders.Outcomes.Exists(outcome => outcome.WakesOthers))
        {
            _wakeOthers();
        }

        _settled(Settled(riders.Outcomes));
    }

    /// <summary>
    /// The claim that carried <paramref name="riders"/> failed (or was not run): this writer writes them, with its retries;
    /// <paramref name="attempted"/>: the claim's transaction may have committed (its answer lost), so they are written again.
    /// </summary>
    public void RidersFailed(Riders riders, bool attempted)
    {
        List<Outcome>? lost = null;
        foreach (var outcome in riders.Outcomes)
        {
            if (!Requeue(outcome with { Again = attempted }))
            {
                (lost ??= []).Add(outcome);
            }
        }

        if (lost is not null)
        {
            _settled(Settled(lost));
            _logger.OutcomesLostAtStop(_queueName, lost.Count);
        }
    }

    /// <summary>Posts <paramref name="outcome"/> again; false if the writer takes no more outcomes (it is stopping).</summary>
    private bool Requeue(Outcome outcome)
    {
        try
        {
            return _outcomes.TryAdd(outcome);
        }
        catch (Exception ex) when (ex is InvalidOperationException or ObjectDisposedException)
        {
            return false;
        }
    }

    private Written WriteWithRetries(List<Outcome> batch, CancellationToken abandon)
    {
        var delay = TimeSpan.FromMilliseconds(100);
        var again = false; // a write failed: it may have committed, and its answer been lost
        while (true)
        {
            try
            {
                var written = Write(batch, again); // (outcomes marked Again are counted apart: see Recorded)
                if (_health.Succeeded("writing outcomes"))
                {
                    _logger.StorageRecovered(_queueName, "writing outcomes");
                }

                return written;
            }
            catch (Exception ex) when (ex is not OperationCanceledException)
            {
                again = true;
                if (_health.Failed("writing outcomes", ex))
                {
                    _logger.StorageUnavailable(_queueName, "writing outcomes", delay, ex);
                }

                if (abandon.WaitHandle.WaitOne(delay))
                {
                    abandon.ThrowIfCancellationRequested();
                }

                delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, _maxDelay.Ticks));
            }
        }
    }

    private Written Write(List<Outcome> outcomes, bool again)
    {
        var finished = 0;
        foreach (var outcome in outcomes)
        {
            finished += outcome.Key is null ? 0 : 1;
        }

        var plan = finished == 0 || _handOff is null
            ? null
            : _handOff.Begin([.. outcomes.Where(outcome => outcome.Key is not null).Select(outcome => outcome.Key!).Distinct(StringComparer.Ordinal)], finished, outcomes.Count);
        if (plan is not null)
        {
            return WriteHandingOff(outcomes, plan, again);
        }

        long recorded;
        using (var connection = _dataSource.OpenConnection())
        using (var command = _statement.Command(connection, null, Parameters(outcomes)))
        {
            recorded = OutcomeStatement.ExecuteRecorded(command);
        }

        Recorded(outcomes, recorded, again);
        return new Written(outcomes.Exists(outcome => outcome.WakesOthers), []);
    }

    /// <summary>
    /// Writes the outcomes and, in the same transaction, the hand-off's claim, which sees the outcome statement's
    /// changes (two statements and the commit: three round trips, none of them through the ThreadPool). The claimed
    /// items are handed to the node only once the transaction has committed; on any failure the plan's room and permits
    /// go back.
    /// </summary>
    private Written WriteHandingOff(List<Outcome> outcomes, HandOffPlan plan, bool again)
    {
        long recorded;
        var claimed = new List<StoredItem>();
        try
        {
            // Two statements in an explicit transaction, each sent on its own: Npgsql writes the statements after the
            // first of a synchronous batch from the ThreadPool, which would stall this thread while the pool is starved.
            using var connection = _dataSource.OpenConnection();
            using var transaction = connection.BeginTransaction();
            using (var write = _statement.Command(connection, transaction, Parameters(outcomes)))
            {
                recorded = OutcomeStatement.ExecuteRecorded(write);
            }

            using (var claim = _handOff!.Command(plan, connection, transaction))
            using (var reader = claim.ExecuteReader())
            {
                while (reader.Read())
                {
                    claimed.Add(_handOff.Read(reader));
                }
            }

            // An error at the commit (a deferred check) is thrown here, and nothing was claimed.
            transaction.Commit();
            AfterHandOffCommit?.Invoke();
        }
        catch
        {
            _handOff!.Failed(plan);
            throw;
        }

        var notStarted = _handOff.Committed(plan, claimed);
        Recorded(outcomes, recorded, again);

        // Other nodes are woken only for a release, or a key whose finished items the hand-off did not all replace.
        var wake = outcomes.Exists(outcome => outcome.Kind == OutcomeKind.Released)
            || notStarted.Count > 0
            || outcomes.Where(outcome => outcome.Key is not null).GroupBy(outcome => outcome.Key!, StringComparer.Ordinal)
                .Any(key => key.Count() > claimed.Count(item => string.Equals(item.OrderingKey, key.Key, StringComparison.Ordinal)));
        return new Written(wake, notStarted);
    }

    /// <summary>
    /// Logs the outcomes that changed nothing. Written <paramref name="again"/> after a failed write, or marked
    /// <see cref="Outcome.Again"/> (a claim carried them and failed), they may be the ones that write or claim recorded
    /// (it committed, and its answer was lost): the statement cannot tell them apart from outcomes of deliveries that
    /// were no longer this node's claims, so the log says either for as many as may have been recorded, and the rest
    /// are outcomes not recorded.
    /// </summary>
    private void Recorded(List<Outcome> outcomes, long recorded, bool again)
    {
        var notRecorded = outcomes.Count - recorded;
        var mayHaveBeenRecorded = again ? outcomes.Count : outcomes.Count(static outcome => outcome.Again);
        var writtenAgain = Math.Min(notRecorded, mayHaveBeenRecorded);
        if (writtenAgain > 0)
        {
            _logger.OutcomesWrittenAgain(_queueName, (int)writtenAgain);
        }

        if (notRecorded > writtenAgain)
        {
            _logger.OutcomesNotRecorded(_queueName, (int)(notRecorded - writtenAgain));
        }
    }

    /// <summary>The outcome statement's parameters for <paramref name="outcomes"/>: the rows of each kind present.</summary>
    private OutcomeParameters Parameters(List<Outcome> outcomes) => new(
        _leaseOwner,
        Rows(outcomes, OutcomeKind.Completed),
        Rows(outcomes, OutcomeKind.Released),
        Rows(outcomes, OutcomeKind.Retry),
        Rows(outcomes, OutcomeKind.Dead),
        Rows(outcomes, OutcomeKind.Cancelled),
        Rows(outcomes, OutcomeKind.Snoozed));

    private static OutcomeRows? Rows(List<Outcome> outcomes, OutcomeKind kind)
    {
        var selected = Select(outcomes, kind);
        if (selected.Count == 0)
        {
            return null;
        }

        return new OutcomeRows(
            [.. selected.Select(outcome => outcome.Id)],
            [.. selected.Select(outcome => outcome.Delivery)],
            kind is OutcomeKind.Retry or OutcomeKind.Snoozed ? [.. selected.Select(outcome => outcome.DelayMilliseconds)] : null,
            kind is OutcomeKind.Retry or OutcomeKind.Dead or OutcomeKind.Cancelled ? [.. selected.Select(outcome => outcome.Error)] : null);
    }

    private static List<Outcome> Select(List<Outcome> outcomes, OutcomeKind kind) => [.. outcomes.Where(outcome => outcome.Kind == kind)];

    private static HeldDelivery[] Settled(List<Outcome> outcomes) => [.. outcomes.Select(outcome => new HeldDelivery(outcome.Id, outcome.Delivery))];

    public void Dispose()
    {
        _outcomes.Dispose();
        _resumed.Dispose();
    }

    /// <summary>Outcomes the claim loop took to write in its claim's transaction (<see cref="TakeRiders"/>).</summary>
    internal sealed class Riders(List<Outcome> outcomes)
    {
        /// <summary>Gets how many outcomes ride.</summary>
        public int Count => Outcomes.Count;

        internal List<Outcome> Outcomes { get; } = outcomes;
    }

    /// <summary>One outcome; <see cref="Key"/> is set for a final outcome of a keyed item (the hand-off's keys); <see cref="Again"/>: a claim that carried it failed, and may have committed.</summary>
    internal readonly record struct Outcome(OutcomeKind Kind, long Id, long Delivery, double DelayMilliseconds, string? Error, bool WakesOthers, string? Key, bool Again = false);

    /// <summary>A written batch: whether to wake the other nodes, and the items handed off that the node did not start (to release).</summary>
    private readonly record struct Written(bool WakeOthers, List<StoredItem> NotStarted);
}
