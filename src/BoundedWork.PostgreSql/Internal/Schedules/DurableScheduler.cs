using System.Diagnostics;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The durable schedules of one queue on this node: stores the code's definitions at start, then every
/// <see cref="PollInterval"/> runs a pass that enqueues the due ticks (see <see cref="ScheduleSql"/> for why each tick
/// is enqueued once across the fleet without a leader), and serves the operators' reads and changes.
/// </summary>
/// <remarks>
/// A tick is due when its scheduled instant is at or before this node's clock. A node whose clock runs ahead enqueues a
/// tick early, one whose clock runs behind leaves it to the others; either way the tick is enqueued once, under the
/// idempotency key of its scheduled instant. A pass that fails (the database restarts) enqueues nothing and is tried at
/// the next poll; ticks it could not enqueue are on time while they are within the misfire threshold.
/// </remarks>
internal sealed class DurableScheduler : IAsyncDisposable
{
    private readonly PostgreSqlWorkQueue<ScheduledTick> _queue;
    private readonly ScheduleSql _sql;
    private readonly IReadOnlyList<DurableScheduleRegistration> _code;
    private readonly TimeProvider _clock;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stop = new();
    private Task _loop = Task.CompletedTask;
    private int _failures;

    public DurableScheduler(string queue, PostgreSqlWorkQueue<ScheduledTick> storage, IReadOnlyList<DurableScheduleRegistration> code, TimeProvider clock, ILogger logger)
    {
        Queue = queue;
        _queue = storage;
        _sql = new ScheduleSql(storage.StorageSchema, storage.OrderingKeyLockId);
        _code = code;
        _clock = clock;
        _logger = logger;
    }

    /// <summary>How often a pass looks for due ticks; a tick is enqueued at most this late (plus the pass's own time).</summary>
    internal static TimeSpan PollInterval { get; set; } = TimeSpan.FromMilliseconds(500);

    public string Queue { get; }

    public long Passes { get; private set; }

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        var connection = await _queue.OpenAsyncApiConnectionAsync().ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            foreach (var registration in _code)
            {
                if (registration.Name is null)
                {
                    continue;
                }

                var schedule = registration.Schedule!;
                var options = registration.Options!;
                var inserted = await ScalarAsync<bool?>(connection, null, _sql.Upsert, cancellationToken,
                    registration.Name, Queue, (object?)schedule.CronExpression ?? DBNull.Value,
                    schedule.Interval is { } interval ? (long)interval.TotalMilliseconds : DBNull.Value, schedule.TimeZone.Id,
                    (short)options.MissedTicks, options.MaxCatchUp, (long)options.MisfireThreshold.TotalMilliseconds, options.StartPaused,
                    Utc(schedule.GetNextOccurrence(_clock.GetUtcNow())), registration.CodeDefinition).ConfigureAwait(false);
                if (_logger.IsEnabled(LogLevel.Information))
                {
                    _logger.Stored(registration.Name, Queue, schedule.ToString(), inserted switch
                {
                    true => "stored",
                    false => "stored over the earlier definition (the code changed, so the code wins)",
                    null => "kept as stored (the same definition: runtime changes hold)",
                    });
                }
            }
        }

        _loop = Task.Run(() => LoopAsync(_stop.Token), CancellationToken.None);
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        try
        {
            await _loop.ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
        }

        _stop.Dispose();
    }

    private async Task LoopAsync(CancellationToken cancellationToken)
    {
        while (!cancellationToken.IsCancellationRequested)
        {
            try
            {
                while (await PassAsync(cancellationToken).ConfigureAwait(false) == ScheduleSql.BatchSize)
                {
                }

                _failures = 0;
            }
            catch (Exception ex) when (!cancellationToken.IsCancellationRequested)
            {
                _failures++;
                _logger.PassFailed(Queue, _failures, ex);
            }

            await Task.Delay(PollInterval, _clock, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>How many times a pass runs again when a tick's key was held by a row its statement could not see.</summary>
    private const int MaxPassAttempts = 3;

    /// <summary>For tests: runs in the pass's transaction after its ticks are enqueued and its rows advanced, before the commit.</summary>
    internal Func<NpgsqlConnection, Task>? BeforeCommit { get; set; }

    /// <summary>For tests: runs after the pass's commit, before its counters are recorded.</summary>
    internal Action? AfterCommit { get; set; }

    /// <summary>
    /// One pass: locks the due rows, enqueues the ticks of all of them and advances them in one statement, commits.
    /// Returns the rows taken.
    /// </summary>
    internal async Task<int> PassAsync(CancellationToken cancellationToken)
    {
        Passes++;
        for (var attempt = 1; ; attempt++)
        {
            if (await TryPassAsync(cancellationToken).ConfigureAwait(false) is { } taken)
            {
                return taken;
            }

            if (attempt == MaxPassAttempts)
            {
                throw new InvalidOperationException(
                    $"Durable schedules of queue '{Queue}': {attempt} times, the key of a tick was held by an item another transaction committed while the pass ran; the pass enqueued nothing and runs again at the next poll.");
            }
        }
    }

    /// <summary>One attempt of a pass; null when it rolled back because a tick's key was held by a row its statement could not see.</summary>
    private async Task<int?> TryPassAsync(CancellationToken cancellationToken)
    {
        var connection = await _queue.OpenAsyncApiConnectionAsync().ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
            await using (transaction.ConfigureAwait(false))
            {
                var now = _clock.GetUtcNow();
                var due = new List<(string Name, string? Cron, long? IntervalMs, string TimeZone, MissedTickPolicy Policy, int MaxCatchUp, long MisfireMs, DateTimeOffset NextTick)>();
                var select = new NpgsqlCommand(_sql.Due, connection, transaction);
                await using (select.ConfigureAwait(false))
                {
                    select.Parameters.Add(new() { Value = Queue });
                    select.Parameters.Add(new() { Value = now });
                    var reader = await select.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                    await using (reader.ConfigureAwait(false))
                    {
                        while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                        {
                            due.Add((reader.GetString(0), reader.IsDBNull(1) ? null : reader.GetString(1), reader.IsDBNull(2) ? null : reader.GetInt64(2),
                                reader.GetString(3), (MissedTickPolicy)reader.GetInt16(4), reader.GetInt32(5), reader.GetInt64(6),
                                reader.GetFieldValue<DateTimeOffset>(7)));
                        }
                    }
                }

                var batch = new TickBatch(due.Count);
                foreach (var row in due)
                {
                    RecurringSchedule schedule;
                    try
                    {
                        schedule = ToSchedule(row.Cron, row.IntervalMs, row.TimeZone);
                    }
                    catch (ArgumentException ex)
                    {
                        // Another node may read it (its time zone database knows the zone): leave the row as it is.
                        _logger.Unreadable(row.Name, Queue, ex.Message);
                        continue;
                    }

                    var plan = TickPlanner.PlanTicks(schedule, row.NextTick, now, row.Policy, row.MaxCatchUp, TimeSpan.FromMilliseconds(row.MisfireMs));
                    foreach (var tick in plan.Enqueue)
                    {
                        var (payload, orderingKey) = _queue.StoredRowOf(new ScheduledTick(row.Name, tick.ToUniversalTime()));
                        batch.AddTick(row.Name, tick, payload, orderingKey, ScheduleSql.TickKey(row.Name, tick));
                    }

                    if (plan.Missed > 0)
                    {
                        _logger.TicksMissed(row.Name, Queue, plan.Missed, row.Policy, plan.Enqueue.Count);
                    }

                    batch.AddRow(row.Name, plan.NextTick, plan.Enqueue.Count > 0 ? plan.Enqueue[^1] : null, plan.Missed);
                }

                if (batch.RowCount > 0 && !await EnqueueAndAdvanceAsync(connection, transaction, batch, cancellationToken).ConfigureAwait(false))
                {
                    return null; // disposing the transaction rolls it back
                }

                if (BeforeCommit is { } beforeCommit)
                {
                    await beforeCommit(connection).ConfigureAwait(false);
                }

                await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
                AfterCommit?.Invoke();
                for (var row = 0; row < batch.RowCount; row++)
                {
                    ScheduleMetrics.Enqueued(Queue, batch.Names[row], batch.Enqueued[row]);
                    ScheduleMetrics.Missed(Queue, batch.Names[row], batch.Missed[row]);
                }

                for (var tick = 0; tick < batch.TickCount; tick++)
                {
                    if (batch.Inserted[tick])
                    {
                        ScheduleMetrics.Lag(Queue, batch.TickSchedules[tick], now - batch.Ticks[tick]);
                    }
                }

                return due.Count;
            }
        }
    }

    /// <summary>
    /// Enqueues the batch's ticks and advances its rows in one statement (<see cref="ScheduleSql.EnqueueAndAdvance"/>);
    /// false when a tick's key was held by a row the statement could not see (the caller rolls back and runs again).
    /// </summary>
    private async Task<bool> EnqueueAndAdvanceAsync(NpgsqlConnection connection, NpgsqlTransaction transaction, TickBatch batch, CancellationToken cancellationToken)
    {
        var send = batch.TickCount > 0 ? DurableTracing.StartSend(Queue, batch.TickCount) : null;
        try
        {
            var command = new NpgsqlCommand(_sql.EnqueueAndAdvance, connection, transaction);
            await using (command.ConfigureAwait(false))
            {
                var activity = Activity.Current is { IdFormat: ActivityIdFormat.W3C } current ? current : null;
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = Queue });
                command.Parameters.Add(new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = [.. batch.TickSchedules] });
                command.Parameters.Add(new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Jsonb, TypedValue = [.. batch.Payloads] });
                command.Parameters.Add(new NpgsqlParameter<string?[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = [.. batch.OrderingKeys] });
                command.Parameters.Add(new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = [.. batch.Keys] });
                command.Parameters.Add(new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlDbType.Text, TypedValue = activity?.Id });
                command.Parameters.Add(new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlDbType.Text, TypedValue = activity?.TraceStateString });
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = _queue.StorageNotifyChannel });
                command.Parameters.Add(new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = [.. batch.Names] });
                command.Parameters.Add(new NpgsqlParameter<DateTime?[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.TimestampTz, TypedValue = [.. batch.NextTicks] });
                command.Parameters.Add(new NpgsqlParameter<DateTime?[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.TimestampTz, TypedValue = [.. batch.LastTicks] });
                command.Parameters.Add(new NpgsqlParameter<long[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Bigint, TypedValue = [.. batch.Missed] });
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    for (var tick = 0; await reader.ReadAsync(cancellationToken).ConfigureAwait(false); tick++)
                    {
                        if (reader.IsDBNull(0))
                        {
                            DurableTracing.StopSend(send, itemId: null, failure: null);
                            return false;
                        }

                        batch.Inserted[tick] = reader.GetBoolean(1);
                    }
                }
            }
        }
        catch (Exception ex)
        {
            DurableTracing.StopSend(send, itemId: null, ex);
            throw;
        }

        DurableTracing.StopSend(send, itemId: null, failure: null);
        batch.CountEnqueued();
        return true;
    }

    /// <summary>What one pass enqueues and advances, as the arrays of <see cref="ScheduleSql.EnqueueAndAdvance"/>: one element per tick, one per row.</summary>
    private sealed class TickBatch(int rows)
    {
        public List<string> TickSchedules { get; } = new(rows);

        public List<DateTimeOffset> Ticks { get; } = new(rows);

        public List<string> Payloads { get; } = new(rows);

        public List<string?> OrderingKeys { get; } = new(rows);

        public List<string> Keys { get; } = new(rows);

        /// <summary>Whether the statement inserted each tick (false: a row of the queue held its key).</summary>
        public List<bool> Inserted { get; } = new(rows);

        public List<string> Names { get; } = new(rows);

        /// <summary>Each row's next tick (null: it never ticks again).</summary>
        public List<DateTime?> NextTicks { get; } = new(rows);

        public List<DateTime?> LastTicks { get; } = new(rows);

        public List<long> Missed { get; } = new(rows);

        /// <summary>The ticks each row's statement inserted (filled by <see cref="CountEnqueued"/>).</summary>
        public List<long> Enqueued { get; } = new(rows);

        public int TickCount => Keys.Count;

        public int RowCount => Names.Count;

        public void AddTick(string schedule, DateTimeOffset tick, string payload, string? orderingKey, string key)
        {
            TickSchedules.Add(schedule);
            Ticks.Add(tick);
            Payloads.Add(payload);
            OrderingKeys.Add(orderingKey);
            Keys.Add(key);
            Inserted.Add(false);
        }

        public void AddRow(string name, DateTimeOffset? nextTick, DateTimeOffset? lastTick, long missed)
        {
            Names.Add(name);
            NextTicks.Add(nextTick?.UtcDateTime);
            LastTicks.Add(lastTick?.UtcDateTime);
            Missed.Add(missed);
        }

        public void CountEnqueued()
        {
            var byName = new Dictionary<string, long>(StringComparer.Ordinal);
            for (var tick = 0; tick < TickCount; tick++)
            {
                if (Inserted[tick])
                {
                    byName[TickSchedules[tick]] = byName.GetValueOrDefault(TickSchedules[tick]) + 1;
                }
            }

            Enqueued.Clear();
            foreach (var name in Names)
            {
                Enqueued.Add(byName.GetValueOrDefault(name));
            }
        }
    }

    public async Task<IReadOnlyList<DurableScheduleStatus>> ListAsync(CancellationToken cancellationToken)
    {
        var connection = await _queue.OpenAsyncApiConnectionAsync().ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            return await ReadAsync(connection, null, _sql.ListForQueue, cancellationToken, Queue).ConfigureAwait(false);
        }
    }

    public async Task<DurableScheduleStatus?> GetAsync(string name, CancellationToken cancellationToken)
    {
        var connection = await _queue.OpenAsyncApiConnectionAsync().ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            return (await ReadAsync(connection, null, _sql.GetByName, cancellationToken, Queue, name).ConfigureAwait(false)).SingleOrDefault();
        }
    }

    public async Task<bool> AddAsync(string name, RecurringSchedule schedule, DurableScheduleOptions options, string changedBy, CancellationToken cancellationToken)
    {
        var connection = await _queue.OpenAsyncApiConnectionAsync().ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var rows = await ExecuteAsync(connection, null, _sql.Insert, cancellationToken,
                name, Queue, (object?)schedule.CronExpression ?? DBNull.Value,
                schedule.Interval is { } interval ? (long)interval.TotalMilliseconds : DBNull.Value, schedule.TimeZone.Id,
                (short)options.MissedTicks, options.MaxCatchUp, (long)options.MisfireThreshold.TotalMilliseconds, options.StartPaused,
                Utc(schedule.GetNextOccurrence(_clock.GetUtcNow())), changedBy).ConfigureAwait(false);
            return rows == 1;
        }
    }

    /// <summary>Runs <paramref name="change"/> on the schedule's locked row; false when there is no such row on this queue.</summary>
    public async Task<bool> UpdateAsync(string name, Func<NpgsqlConnection, NpgsqlTransaction, (string? Cron, long? IntervalMs, string TimeZone, bool Paused), Task> change, CancellationToken cancellationToken)
    {
        var connection = await _queue.OpenAsyncApiConnectionAsync().ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
            await using (transaction.ConfigureAwait(false))
            {
                (string?, long?, string, bool)? row = null;
                var lockRow = new NpgsqlCommand(_sql.Lock, connection, transaction);
                await using (lockRow.ConfigureAwait(false))
                {
                    lockRow.Parameters.Add(new() { Value = Queue });
                    lockRow.Parameters.Add(new() { Value = name });
                    var reader = await lockRow.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                    await using (reader.ConfigureAwait(false))
                    {
                        if (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                        {
                            row = (reader.IsDBNull(0) ? null : reader.GetString(0), reader.IsDBNull(1) ? null : reader.GetInt64(1), reader.GetString(2), reader.GetBoolean(3));
                        }
                    }
                }

                if (row is not { } found)
                {
                    return false;
                }

                await change(connection, transaction, found).ConfigureAwait(false);
                await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
                return true;
            }
        }
    }

    public Task<bool> ChangeAsync(string name, RecurringSchedule schedule, string changedBy, CancellationToken cancellationToken) =>
        UpdateAsync(name, (connection, transaction, _) => ExecuteAsync(connection, transaction, _sql.Change, cancellationToken,
            Queue, name, (object?)schedule.CronExpression ?? DBNull.Value,
            schedule.Interval is { } interval ? (long)interval.TotalMilliseconds : DBNull.Value, schedule.TimeZone.Id,
            Utc(schedule.GetNextOccurrence(_clock.GetUtcNow())), changedBy), cancellationToken);

    public Task<bool> SetPausedAsync(string name, bool paused, string changedBy, CancellationToken cancellationToken) =>
        UpdateAsync(name, (connection, transaction, row) =>
        {
            // Resuming starts from the next tick after now: the ticks of the pause are not missed, they were paused.
            object next = DBNull.Value;
            if (!paused && row.Paused && TryToSchedule(row.Cron, row.IntervalMs, row.TimeZone) is { } schedule)
            {
                next = Utc(schedule.GetNextOccurrence(_clock.GetUtcNow()));
            }

            return ExecuteAsync(connection, transaction, _sql.SetPaused, cancellationToken, Queue, name, paused, next, changedBy);
        }, cancellationToken);

    public Task<bool> SetMissedTicksAsync(string name, MissedTickPolicy missedTicks, string changedBy, CancellationToken cancellationToken) =>
        UpdateAsync(name, (connection, transaction, _) => ExecuteAsync(connection, transaction, _sql.SetMissedPolicy, cancellationToken,
            Queue, name, (short)missedTicks, changedBy), cancellationToken);

    public async Task<long?> TriggerAsync(string name, CancellationToken cancellationToken)
    {
        long? id = null;
        var found = await UpdateAsync(name, async (connection, transaction, _) =>
        {
            id = await _queue.EnqueueAsync(new ScheduledTick(name, _clock.GetUtcNow().ToUniversalTime(), Triggered: true), transaction, cancellationToken).ConfigureAwait(false);
            await ExecuteAsync(connection, transaction, _sql.Triggered, cancellationToken, Queue, name, id.Value).ConfigureAwait(false);
        }, cancellationToken).ConfigureAwait(false);
        if (found)
        {
            ScheduleMetrics.Triggered(Queue, name);
        }

        return found ? id : null;
    }

    public async Task<bool> RemoveAsync(string name, CancellationToken cancellationToken)
    {
        var connection = await _queue.OpenAsyncApiConnectionAsync().ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            return await ExecuteAsync(connection, null, _sql.Delete, cancellationToken, Queue, name).ConfigureAwait(false) == 1;
        }
    }

    /// <summary>A time for a parameter: UTC (Npgsql writes only offset zero to timestamptz), or a null.</summary>
    private static object Utc(DateTimeOffset? time) => time is { } t ? t.ToUniversalTime() : DBNull.Value;

    internal static RecurringSchedule ToSchedule(string? cron, long? intervalMs, string timeZone) =>
        cron is not null ? RecurringSchedule.Cron(cron, timeZone) : RecurringSchedule.Every(TimeSpan.FromMilliseconds(intervalMs ?? 0));

    private static RecurringSchedule? TryToSchedule(string? cron, long? intervalMs, string timeZone)
    {
        try
        {
            return ToSchedule(cron, intervalMs, timeZone);
        }
        catch (ArgumentException)
        {
            return null;
        }
    }

    private static async Task<IReadOnlyList<DurableScheduleStatus>> ReadAsync(NpgsqlConnection connection, NpgsqlTransaction? transaction, string sql, CancellationToken cancellationToken, params object[] parameters)
    {
        var command = new NpgsqlCommand(sql, connection, transaction);
        await using (command.ConfigureAwait(false))
        {
            foreach (var parameter in parameters)
            {
                command.Parameters.Add(new() { Value = parameter });
            }

            var list = new List<DurableScheduleStatus>();
            var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
            await using (reader.ConfigureAwait(false))
            {
                while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                {
                    var cron = reader.IsDBNull(2) ? null : reader.GetString(2);
                    long? intervalMs = reader.IsDBNull(3) ? null : reader.GetInt64(3);
                    var zone = reader.GetString(4);
                    RecurringSchedule? schedule = null;
                    string? error = null;
                    try
                    {
                        schedule = ToSchedule(cron, intervalMs, zone);
                    }
                    catch (ArgumentException ex)
                    {
                        error = ex.Message;
                    }

                    long? lastItem = reader.IsDBNull(12) ? null : reader.GetInt64(12);
                    list.Add(new DurableScheduleStatus
                    {
                        Name = reader.GetString(0),
                        Queue = reader.GetString(1),
                        Schedule = schedule,
                        Definition = schedule?.ToString() ?? (cron is not null ? $"cron '{cron}' in {zone}" : $"every {TimeSpan.FromMilliseconds(intervalMs ?? 0)}"),
                        DefinitionError = error,
                        MissedTicks = (MissedTickPolicy)reader.GetInt16(5),
                        IsPaused = reader.GetBoolean(8),
                        NextRunAt = reader.IsDBNull(9) ? null : reader.GetFieldValue<DateTimeOffset>(9),
                        LastRunAt = reader.IsDBNull(10) ? null : reader.GetFieldValue<DateTimeOffset>(10),
                        LastEnqueuedAt = reader.IsDBNull(11) ? null : reader.GetFieldValue<DateTimeOffset>(11),
                        LastItemId = lastItem,
                        Enqueued = reader.GetInt64(13),
                        Missed = reader.GetInt64(14),
                        IsDefinedInCode = reader.GetBoolean(15),
                        ChangedAt = reader.GetFieldValue<DateTimeOffset>(16),
                        ChangedBy = reader.IsDBNull(17) ? null : reader.GetString(17),
                        LastOutcome = lastItem is null ? null : reader.IsDBNull(18) ? "gone" : reader.GetInt16(18) switch
                        {
                            StorageSql.Ready => "ready",
                            StorageSql.Running => "running",
                            StorageSql.Completed => "completed",
                            StorageSql.Dead => "dead",
                            StorageSql.Cancelled => "cancelled",
                            StorageSql.Scheduled => "scheduled",
                            var other => "state " + other,
                        },
                    });
                }
            }

            return list;
        }
    }

    private static async Task<int> ExecuteAsync(NpgsqlConnection connection, NpgsqlTransaction? transaction, string sql, CancellationToken cancellationToken, params object[] parameters)
    {
        var command = new NpgsqlCommand(sql, connection, transaction);
        await using (command.ConfigureAwait(false))
        {
            foreach (var parameter in parameters)
            {
                command.Parameters.Add(new() { Value = parameter });
            }

            return await command.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    private static async Task<TResult?> ScalarAsync<TResult>(NpgsqlConnection connection, NpgsqlTransaction? transaction, string sql, CancellationToken cancellationToken, params object[] parameters)
    {
        var command = new NpgsqlCommand(sql, connection, transaction);
        await using (command.ConfigureAwait(false))
        {
            foreach (var parameter in parameters)
            {
                command.Parameters.Add(new() { Value = parameter });
            }

            var value = await command.ExecuteScalarAsync(cancellationToken).ConfigureAwait(false);
            return value is null or DBNull ? default : (TResult)value;
        }
    }
}
