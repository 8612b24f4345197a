using System.Threading.Channels;
using Microsoft.Extensions.Logging;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Writes the outcomes of a node's deliveries (completed, retry stored, dead letter, released) to the table, batched:
/// one round trip carries every outcome that arrived while the previous one was in flight. A failed write is retried,
/// the same outcomes, until it succeeds or the node stops; an outcome that is never written leaves its item claimed
/// until the lease expires, after which it runs again (at least once).
/// </summary>
internal sealed class OutcomeWriter
{
    private const int MaxBatch = 2000;

    private readonly Channel<Outcome> _outcomes = Channel.CreateUnbounded<Outcome>(new UnboundedChannelOptions { SingleReader = true });
    private readonly NpgsqlDataSource _dataSource;
    private readonly StorageSql _sql;
    private readonly string _queueName;
    private readonly bool _deleteCompleted;
    private readonly ILogger _logger;
    private readonly StorageHealth _health;
    private readonly TimeSpan _maxDelay;
    private readonly Action _written;
    private int _pending;

    public OutcomeWriter(NpgsqlDataSource dataSource, StorageSql sql, string queueName, bool deleteCompleted, ILogger logger, StorageHealth health, TimeSpan maxDelay, Action written)
    {
        _dataSource = dataSource;
        _sql = sql;
        _queueName = queueName;
        _deleteCompleted = deleteCompleted;
        _logger = logger;
        _health = health;
        _maxDelay = maxDelay;
        _written = written;
    }

    public enum Kind
    {
        Completed,
        Retry,
        Dead,
        Released,
    }

    /// <summary>Gets the number of outcomes not yet written.</summary>
    public int Pending => Volatile.Read(ref _pending);

    public void Post(StoredItem item, Kind kind, TimeSpan retryDelay = default, string? error = null)
    {
        Interlocked.Increment(ref _pending);
        if (!_outcomes.Writer.TryWrite(new Outcome(kind, item.Id, item.Attempts, retryDelay.TotalMilliseconds, error)))
        {
            Interlocked.Decrement(ref _pending);
            _logger.OutcomesLostAtStop(_queueName, 1);
        }
    }

    /// <summary>Writes outcomes until <see cref="Complete"/> is called and every posted outcome is written, or <paramref name="abandon"/> fires.</summary>
    public async Task RunAsync(CancellationToken abandon)
    {
        var batch = new List<Outcome>();
        var reader = _outcomes.Reader;
        try
        {
            while (await reader.WaitToReadAsync(abandon).ConfigureAwait(false))
            {
                while (batch.Count < MaxBatch && reader.TryRead(out var outcome))
                {
                    batch.Add(outcome);
                }

                await WriteWithRetriesAsync(batch, abandon).ConfigureAwait(false);
                Interlocked.Add(ref _pending, -batch.Count);
                batch.Clear();
                _written();
            }
        }
        catch (OperationCanceledException) when (abandon.IsCancellationRequested)
        {
            var lost = Pending;
            if (lost > 0)
            {
                _logger.OutcomesLostAtStop(_queueName, lost);
            }
        }
    }

    /// <summary>No outcome is posted any more; <see cref="RunAsync"/> ends once the posted ones are written.</summary>
    public void Complete() => _outcomes.Writer.TryComplete();

    private async Task WriteWithRetriesAsync(List<Outcome> batch, CancellationToken abandon)
    {
        var delay = TimeSpan.FromMilliseconds(100);
        while (true)
        {
            try
            {
                await WriteAsync(batch, abandon).ConfigureAwait(false);
                if (_health.Succeeded("writing outcomes"))
                {
                    _logger.StorageRecovered(_queueName, "writing outcomes");
                }

                return;
            }
            catch (Exception ex) when (ex is not OperationCanceledException || !abandon.IsCancellationRequested)
            {
                if (_health.Failed("writing outcomes", ex))
                {
                    _logger.StorageUnavailable(_queueName, "writing outcomes", delay, ex);
                }

                await Task.Delay(delay, abandon).ConfigureAwait(false);
                delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, _maxDelay.Ticks));
            }
        }
    }

    private async Task WriteAsync(List<Outcome> outcomes, CancellationToken cancellationToken)
    {
        var batch = new NpgsqlBatch();
        await using (batch.ConfigureAwait(false))
        {
            AddIdsCommand(batch, _deleteCompleted ? _sql.CompleteAndDelete : _sql.Complete, outcomes, Kind.Completed);
            AddIdsCommand(batch, _sql.Release, outcomes, Kind.Released);
            if (Select(outcomes, Kind.Retry) is { Count: > 0 } retries)
            {
                var command = Ids(_sql.Retry, retries);
                command.Parameters.Add(new NpgsqlParameter<double[]> { TypedValue = [.. retries.Select(outcome => outcome.DelayMilliseconds)] });
                command.Parameters.Add(new NpgsqlParameter<string?[]> { TypedValue = [.. retries.Select(outcome => outcome.Error)] });
                batch.BatchCommands.Add(command);
            }

            if (Select(outcomes, Kind.Dead) is { Count: > 0 } dead)
            {
                var command = Ids(_sql.Kill, dead);
                command.Parameters.Add(new NpgsqlParameter<string?[]> { TypedValue = [.. dead.Select(outcome => outcome.Error)] });
                batch.BatchCommands.Add(command);
            }

            // A finished or released item may let another wait no more (the next item of its ordering key, a freed
            // claim): wake every node's claim loop once the outcomes commit.
            var notify = new NpgsqlBatchCommand("SELECT pg_notify($1, $2)");
            notify.Parameters.Add(new NpgsqlParameter<string> { TypedValue = StorageSql.NotifyChannel });
            notify.Parameters.Add(new NpgsqlParameter<string> { TypedValue = _queueName });
            batch.BatchCommands.Add(notify);

            var connection = await _dataSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
            await using (connection.ConfigureAwait(false))
            {
                batch.Connection = connection;
                await batch.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
            }

            var recorded = 0;
            for (var i = 0; i < batch.BatchCommands.Count - 1; i++)
            {
                recorded += batch.BatchCommands[i].RecordsAffected;
            }

            var notRecorded = outcomes.Count - recorded;
            if (notRecorded > 0)
            {
                _logger.OutcomesNotRecorded(_queueName, notRecorded);
            }
        }
    }

    private static void AddIdsCommand(NpgsqlBatch batch, string text, List<Outcome> outcomes, Kind kind)
    {
        if (Select(outcomes, kind) is { Count: > 0 } selected)
        {
            batch.BatchCommands.Add(Ids(text, selected));
        }
    }

    private static NpgsqlBatchCommand Ids(string text, List<Outcome> outcomes)
    {
        var command = new NpgsqlBatchCommand(text);
        command.Parameters.Add(new NpgsqlParameter<long[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Bigint, TypedValue = [.. outcomes.Select(outcome => outcome.Id)] });
        command.Parameters.Add(new NpgsqlParameter<int[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Integer, TypedValue = [.. outcomes.Select(outcome => outcome.Attempts)] });
        return command;
    }

    private static List<Outcome>? Select(List<Outcome> outcomes, Kind kind)
    {
        List<Outcome>? selected = null;
        foreach (var outcome in outcomes)
        {
            if (outcome.Kind == kind)
            {
                (selected ??= []).Add(outcome);
            }
        }

        return selected;
    }

    private readonly record struct Outcome(Kind Kind, long Id, int Attempts, double DelayMilliseconds, string? Error);
}
