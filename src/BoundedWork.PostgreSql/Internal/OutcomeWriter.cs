using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Writes the outcomes of a node's deliveries (completed, retry stored, dead letter, cancelled, released) to the table, batched:
/// one round trip carries every outcome that arrived while the previous one was in flight. A failed write is retried,
/// the same outcomes, until it succeeds or the node stops; an outcome that is never written leaves its item claimed
/// until the lease expires, after which it runs again (at least once). Runs on its own thread with synchronous I/O.
/// Every posted outcome is settled exactly once, through the <c>settled</c> callback: when its batch is written, or
/// when the writer gives up on it at a stop. The queue counts its item as held until then. When a written batch made
/// an item claimable for other nodes, the writer wakes them through the node's notifier, after the write committed.
/// </summary>
internal sealed class OutcomeWriter : IDisposable
{
    private const int MaxBatch = 2000;

    private readonly BlockingCollection<Outcome> _outcomes = new(new ConcurrentQueue<Outcome>());
    private readonly NpgsqlDataSource _dataSource;
    private readonly StorageSql _sql;
    private readonly string _queueName;
    private readonly bool _deleteCompleted;
    private readonly ILogger _logger;
    private readonly StorageHealth _health;
    private readonly TimeSpan _maxDelay;
    private readonly Action<int> _settled;
    private readonly Action _wakeOthers;

    public OutcomeWriter(NpgsqlDataSource dataSource, StorageSql sql, string queueName, bool deleteCompleted, ILogger logger, StorageHealth health, TimeSpan maxDelay, Action<int> settled, Action wakeOthers)
    {
        _wakeOthers = wakeOthers;
        _dataSource = dataSource;
        _sql = sql;
        _queueName = queueName;
        _deleteCompleted = deleteCompleted;
        _logger = logger;
        _health = health;
        _maxDelay = maxDelay;
        _settled = settled;
    }

    public void Post(StoredItem item, OutcomeKind kind, TimeSpan retryDelay = default, string? error = null)
    {
        try
        {
            // Only two outcomes can make an item claimable for another node: a release (the row is ready again) and
            // the end of an ordered item (the next of its key may run). Any other outcome wakes no one: the node's own
            // claim loop is woken when the batch is written (the settled callback), and notifying every node for
            // every batch would make each of them run an empty claim. (A cluster permit freed here is this node's own:
            // see ClusterPermits.)
            var wakesOthers = kind == OutcomeKind.Released || (item.IsOrdered && kind is OutcomeKind.Completed or OutcomeKind.Dead or OutcomeKind.Cancelled);
            _outcomes.Add(new Outcome(kind, item.Id, item.Attempts, retryDelay.TotalMilliseconds, error, wakesOthers));
        }
        catch (Exception ex) when (ex is InvalidOperationException or ObjectDisposedException)
        {
            // The writer has stopped (the node is stopping and its executor gave up at the deadline, or it is disposed).
            _settled(1);
            _logger.OutcomesLostAtStop(_queueName, 1);
        }
    }

    /// <summary>Writes outcomes until <see cref="Complete"/> is called and every posted outcome is written, or <paramref name="abandon"/> fires.</summary>
    public void Run(CancellationToken abandon)
    {
        var batch = new List<Outcome>();
        try
        {
            while (_outcomes.TryTake(out var first, Timeout.Infinite, abandon))
            {
                batch.Add(first);
                while (batch.Count < MaxBatch && _outcomes.TryTake(out var outcome))
                {
                    batch.Add(outcome);
                }

                WriteWithRetries(batch, abandon);
                if (batch.Exists(outcome => outcome.WakesOthers))
                {
                    _wakeOthers();
                }

                _settled(batch.Count);
                batch.Clear();
            }
        }
        catch (OperationCanceledException) when (abandon.IsCancellationRequested)
        {
            // Given up: the batch being written and every outcome still waiting.
            var lost = batch.Count;
            while (_outcomes.TryTake(out _))
            {
                lost++;
            }

            if (lost > 0)
            {
                _settled(lost);
                _logger.OutcomesLostAtStop(_queueName, lost);
            }
        }
    }

    /// <summary>No outcome is posted any more; <see cref="Run"/> ends once the posted ones are written.</summary>
    public void Complete() => _outcomes.CompleteAdding();

    private void WriteWithRetries(List<Outcome> batch, CancellationToken abandon)
    {
        var delay = TimeSpan.FromMilliseconds(100);
        while (true)
        {
            try
            {
                Write(batch);
                if (_health.Succeeded("writing outcomes"))
                {
                    _logger.StorageRecovered(_queueName, "writing outcomes");
                }

                return;
            }
            catch (Exception ex) when (ex is not OperationCanceledException)
            {
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

    private void Write(List<Outcome> outcomes)
    {
        var kinds = 0;
        foreach (var outcome in outcomes)
        {
            kinds |= 1 << (int)outcome.Kind;
        }

        long recorded;
        using (var connection = _dataSource.OpenConnection())
        using (var command = new NpgsqlCommand(_sql.WriteOutcomes(kinds, _deleteCompleted), connection))
        {
            // The parameters of each kind present, in the statement's order (see StorageSql.WriteOutcomes).
            for (var kind = OutcomeKind.Completed; kind <= OutcomeKind.Cancelled; kind++)
            {
                if ((kinds & (1 << (int)kind)) == 0)
                {
                    continue;
                }

                var selected = Select(outcomes, kind);
                AddIds(command, selected);
                if (kind == OutcomeKind.Retry)
                {
                    command.Parameters.Add(new NpgsqlParameter<double[]> { TypedValue = [.. selected.Select(outcome => outcome.DelayMilliseconds)] });
                }

                if (kind is OutcomeKind.Retry or OutcomeKind.Dead or OutcomeKind.Cancelled)
                {
                    AddErrors(command, selected);
                }
            }

            recorded = (long)command.ExecuteScalar()!;
        }

        var notRecorded = outcomes.Count - recorded;
        if (notRecorded > 0)
        {
            _logger.OutcomesNotRecorded(_queueName, (int)notRecorded);
        }
    }

    private static void AddIds(NpgsqlCommand command, List<Outcome> outcomes)
    {
        command.Parameters.Add(new NpgsqlParameter<long[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Bigint, TypedValue = [.. outcomes.Select(outcome => outcome.Id)] });
        command.Parameters.Add(new NpgsqlParameter<int[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Integer, TypedValue = [.. outcomes.Select(outcome => outcome.Attempts)] });
    }

    private static void AddErrors(NpgsqlCommand command, List<Outcome> outcomes) =>
        command.Parameters.Add(new NpgsqlParameter<string?[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = [.. outcomes.Select(outcome => outcome.Error)] });

    private static List<Outcome> Select(List<Outcome> outcomes, OutcomeKind kind) => [.. outcomes.Where(outcome => outcome.Kind == kind)];

    public void Dispose() => _outcomes.Dispose();

    private readonly record struct Outcome(OutcomeKind Kind, long Id, int Attempts, double DelayMilliseconds, string? Error, bool WakesOthers);
}
