using System.Buffers;
using System.Diagnostics;
using System.Text;
using System.Text.Json;
using BoundedWork.Hosting;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The producer side: every enqueue is one statement. In the node's own transaction the statement only inserts, and
/// the node's <see cref="Notifier"/> wakes the consumers once it has committed; in the caller's transaction (or on its
/// connection) the statement also notifies, and the notification goes out when the caller commits.
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    public bool TryEnqueue(T item)
    {
        var send = DurableTracing.StartSend(Name, 1);
        try
        {
            long id;
            using (var connection = _dataSource.OpenConnection())
            using (var insert = CreateInsertCommand(_sql.Enqueue, Serialize(item), OrderingKeyOf(item), StoredFields.Now, connection, transaction: null))
            {
                id = (long)insert.ExecuteScalar()!;
            }

            DurableTracing.StopSend(send, id, failure: null);
            Committed();
            return true;
        }
        catch (Exception ex) when (ex is NpgsqlException or InvalidOperationException or TimeoutException)
        {
            DurableTracing.StopSend(send, itemId: null, ex);
            Deliver(new DeadLetter<T>(Name, 0, item, DeadLetterReason.Rejected, null, ex, 0));
            return false;
        }
    }

    public async ValueTask EnqueueAsync(T item, CancellationToken cancellationToken = default) =>
        await EnqueueWithIdAsync(item, cancellationToken).ConfigureAwait(false);

    public async Task<long> EnqueueWithIdAsync(T item, CancellationToken cancellationToken = default) =>
        (await EnqueueOwnAsync(item, StoredFields.Now, cancellationToken).ConfigureAwait(false)).ItemId;

    public async Task<long> EnqueueAsync(T item, NpgsqlTransaction transaction, CancellationToken cancellationToken = default) =>
        (await InsertAsync(item, StoredFields.Now, ConnectionOf(transaction), transaction, notify: true, cancellationToken).ConfigureAwait(false)).ItemId;

    public async Task<long> EnqueueAsync(T item, NpgsqlConnection connection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(connection);
        return (await InsertAsync(item, StoredFields.Now, connection, transaction: null, notify: true, cancellationToken).ConfigureAwait(false)).ItemId;
    }

    public Task<EnqueueResult> EnqueueIdempotentAsync(T item, string idempotencyKey, CancellationToken cancellationToken = default)
    {
        ValidateIdempotencyKey(idempotencyKey);
        return EnqueueOwnAsync(item, StoredFields.Now with { IdempotencyKey = idempotencyKey }, cancellationToken);
    }

    public Task<EnqueueResult> EnqueueIdempotentAsync(T item, string idempotencyKey, NpgsqlTransaction transaction, CancellationToken cancellationToken = default)
    {
        ValidateIdempotencyKey(idempotencyKey);
        return InsertAsync(item, StoredFields.Now with { IdempotencyKey = idempotencyKey }, ConnectionOf(transaction), transaction, notify: true, cancellationToken);
    }

    public Task<EnqueueResult> EnqueueIdempotentAsync(T item, string idempotencyKey, NpgsqlConnection connection, CancellationToken cancellationToken = default)
    {
        ValidateIdempotencyKey(idempotencyKey);
        ArgumentNullException.ThrowIfNull(connection);
        return InsertAsync(item, StoredFields.Now with { IdempotencyKey = idempotencyKey }, connection, transaction: null, notify: true, cancellationToken);
    }

    public Task<EnqueueResult> EnqueueAsync(T item, EnqueueOptions options, CancellationToken cancellationToken = default) =>
        EnqueueOwnAsync(item, FieldsOf(options), cancellationToken);

    public Task<EnqueueResult> EnqueueAsync(T item, EnqueueOptions options, NpgsqlTransaction transaction, CancellationToken cancellationToken = default)
    {
        var fields = FieldsOf(options);
        return InsertAsync(item, fields, ConnectionOf(transaction), transaction, notify: true, cancellationToken);
    }

    public Task<EnqueueResult> EnqueueAsync(T item, EnqueueOptions options, NpgsqlConnection connection, CancellationToken cancellationToken = default)
    {
        var fields = FieldsOf(options);
        ArgumentNullException.ThrowIfNull(connection);
        return InsertAsync(item, fields, connection, transaction: null, notify: true, cancellationToken);
    }

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, CancellationToken cancellationToken = default) =>
        EnqueueManyCoreAsync(ItemsOf(items), StoredFields.Now, connection: null, transaction: null, cancellationToken);

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, EnqueueOptions options, CancellationToken cancellationToken = default) =>
        EnqueueManyCoreAsync(ItemsOf(items), ManyFieldsOf(options), connection: null, transaction: null, cancellationToken);

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, NpgsqlTransaction transaction, CancellationToken cancellationToken = default) =>
        EnqueueManyCoreAsync(ItemsOf(items), StoredFields.Now, ConnectionOf(transaction), transaction, cancellationToken);

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, EnqueueOptions options, NpgsqlTransaction transaction, CancellationToken cancellationToken = default) =>
        EnqueueManyCoreAsync(ItemsOf(items), ManyFieldsOf(options), ConnectionOf(transaction), transaction, cancellationToken);

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, NpgsqlConnection connection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(connection);
        return EnqueueManyCoreAsync(ItemsOf(items), StoredFields.Now, connection, transaction: null, cancellationToken);
    }

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, EnqueueOptions options, NpgsqlConnection connection, CancellationToken cancellationToken = default)
    {
        var fields = ManyFieldsOf(options);
        ArgumentNullException.ThrowIfNull(connection);
        return EnqueueManyCoreAsync(ItemsOf(items), fields, connection, transaction: null, cancellationToken);
    }

    /// <summary>Validates the options (the exception names the bad one) and turns them into what the row stores.</summary>
    private StoredFields FieldsOf(EnqueueOptions options)
    {
        EnqueueOptions.Validate(options, _options.TimeProvider);
        if (options.IdempotencyKey is { } key)
        {
            ValidateIdempotencyKey(key);
        }

        return new StoredFields((short)options.Priority, options.RunAt is { } runAt ? StoredRunAt(runAt) : null, options.Delay ?? TimeSpan.Zero, options.IdempotencyKey)
        {
            Tenant = options.Tenant, // validated with the options (EnqueueOptions.GetTenantError)
        };
    }

    /// <summary>
    /// A time to run at as the row stores it: a time already past runs now, and ranks by its time, so any time is
    /// kept, except that the earliest (<see cref="DateTimeOffset.MinValue"/>, the default) is stored one microsecond
    /// later: Npgsql writes it as <c>-infinity</c>, a time no statement can count a wait from.
    /// </summary>
    private static DateTimeOffset StoredRunAt(DateTimeOffset runAt) => runAt.UtcTicks < EarliestRunAt.UtcTicks ? EarliestRunAt : runAt;

    private StoredFields ManyFieldsOf(EnqueueOptions options)
    {
        var fields = FieldsOf(options);
        return fields.IdempotencyKey is null
            ? fields
            : throw new ArgumentException("EnqueueOptions.IdempotencyKey is for one item: a bulk enqueue cannot give one key to many items (enqueue them one by one, each with its key).", nameof(options));
    }

    /// <summary>Serializes the items and computes their ordering keys, before any I/O (a failure throws here, storing nothing).</summary>
    private (string[] Payloads, string?[] OrderingKeys) ItemsOf(IEnumerable<T> items)
    {
        ArgumentNullException.ThrowIfNull(items);
        var payloads = new List<string>(items.TryGetNonEnumeratedCount(out var count) ? count : 16);
        var keys = new List<string?>(payloads.Capacity);
        foreach (var item in items)
        {
            payloads.Add(Serialize(item));
            keys.Add(OrderingKeyOf(item));
        }

        return ([.. payloads], [.. keys]);
    }

    /// <summary>
    /// Inserts every item in one statement (payloads and ordering keys as arrays). In the node's own transaction
    /// (<paramref name="connection"/> null) the statement commits at once and the notifier wakes the consumers; on the
    /// caller's connection or transaction the statement notifies, once, at its commit.
    /// </summary>
    private async Task<IReadOnlyList<long>> EnqueueManyCoreAsync((string[] Payloads, string?[] OrderingKeys) items, StoredFields fields, NpgsqlConnection? connection, NpgsqlTransaction? transaction, CancellationToken cancellationToken)
    {
        if (items.Payloads.Length == 0)
        {
            return [];
        }

        var send = DurableTracing.StartSend(Name, items.Payloads.Length);
        long[] ids;
        try
        {
            ids = await InsertManyAsync(items, fields, connection, transaction, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            DurableTracing.StopSend(send, itemId: null, ex);
            throw;
        }

        DurableTracing.StopSend(send, itemId: null, failure: null);
        return ids.Length == items.Payloads.Length
            ? ids
            : throw new InvalidOperationException($"Work queue '{Name}' stored {ids.Length} rows for {items.Payloads.Length} items.");
    }

    private async Task<long[]> InsertManyAsync((string[] Payloads, string?[] OrderingKeys) items, StoredFields fields, NpgsqlConnection? connection, NpgsqlTransaction? transaction, CancellationToken cancellationToken)
    {
        var own = connection is null;
        connection ??= await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        long[] ids;
        try
        {
            var command = new NpgsqlCommand(_sql.EnqueueMany, connection, transaction);
            await using (command.ConfigureAwait(false))
            {
                AddSharedParameters(command,
                    new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Jsonb, TypedValue = items.Payloads },
                    new NpgsqlParameter<string?[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = items.OrderingKeys },
                    fields);
                command.Parameters.Add(new NpgsqlParameter<bool> { TypedValue = !own });
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = _sql.NotifyChannel });
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                    ids = reader.GetFieldValue<long[]>(0);
                }
            }
        }
        finally
        {
            if (own)
            {
                await connection.DisposeAsync().ConfigureAwait(false);
            }
        }

        if (own)
        {
            Committed();
        }

        return ids;
    }

    private NpgsqlConnection ConnectionOf(NpgsqlTransaction transaction)
    {
        ArgumentNullException.ThrowIfNull(transaction);
        return transaction.Connection
            ?? throw new InvalidOperationException($"The transaction given to work queue '{Name}' is already committed or rolled back.");
    }

    /// <summary>Something this node committed may be claimed: its own claim loop, and (through the notifier) every node, look.</summary>
    private void Committed()
    {
        _claimLoop.Wake();
        _notifier.Signal();
    }

    /// <summary>One item in the node's own transaction (the statement commits at once), then the wake-up.</summary>
    private async Task<EnqueueResult> EnqueueOwnAsync(T item, StoredFields fields, CancellationToken cancellationToken)
    {
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var result = await InsertAsync(item, fields, connection, transaction: null, notify: false, cancellationToken).ConfigureAwait(false);
            if (!result.IsDuplicate)
            {
                Committed();
            }

            return result;
        }
    }

    /// <summary>One item, with or without an idempotency key; <paramref name="notify"/>: the statement notifies (sent when the caller's transaction commits).</summary>
    private async Task<EnqueueResult> InsertAsync(T item, StoredFields fields, NpgsqlConnection connection, NpgsqlTransaction? transaction, bool notify, CancellationToken cancellationToken)
    {
        var send = DurableTracing.StartSend(Name, 1);
        EnqueueResult result;
        try
        {
            result = await InsertCoreAsync(item, fields, connection, transaction, notify, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            DurableTracing.StopSend(send, itemId: null, ex);
            throw;
        }

        DurableTracing.StopSend(send, result.ItemId, failure: null);
        return result;
    }

    private async Task<EnqueueResult> InsertCoreAsync(T item, StoredFields fields, NpgsqlConnection connection, NpgsqlTransaction? transaction, bool notify, CancellationToken cancellationToken)
    {
        if (fields.IdempotencyKey is { } key)
        {
            return await InsertIdempotentAsync(item, fields, key, connection, transaction, notify, cancellationToken).ConfigureAwait(false);
        }

        var insert = CreateInsertCommand(notify ? _sql.EnqueueNotifying : _sql.Enqueue, Serialize(item), OrderingKeyOf(item), fields, connection, transaction);
        await using (insert.ConfigureAwait(false))
        {
            if (notify)
            {
                insert.Parameters.Add(new NpgsqlParameter<string> { TypedValue = _sql.NotifyChannel });
            }

            return new EnqueueResult((long)(await insert.ExecuteScalarAsync(cancellationToken).ConfigureAwait(false))!, IsDuplicate: false);
        }
    }

    /// <summary>
    /// Inserts the item unless a row of the queue holds the key. The row that holds it may be invisible to the
    /// statement (another transaction committed it while the insert waited for it, after the statement's snapshot was
    /// taken): the statement then returns no id and runs again, with a new snapshot that sees the row (or, if cleanup
    /// deleted it meanwhile, stores the item: the key is free again).
    /// </summary>
    private async Task<EnqueueResult> InsertIdempotentAsync(T item, StoredFields fields, string idempotencyKey, NpgsqlConnection connection, NpgsqlTransaction? transaction, bool notify, CancellationToken cancellationToken)
    {
        var payload = Serialize(item);
        var orderingKey = OrderingKeyOf(item);
        for (var insert = 1; ; insert++)
        {
            var command = CreateInsertCommand(_sql.EnqueueIdempotent, payload, orderingKey, fields, connection, transaction);
            await using (command.ConfigureAwait(false))
            {
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = idempotencyKey });
                command.Parameters.Add(new NpgsqlParameter<bool> { TypedValue = notify });
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = _sql.NotifyChannel });
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                    if (!reader.IsDBNull(0))
                    {
                        return new EnqueueResult(reader.GetInt64(0), IsDuplicate: !reader.GetBoolean(1));
                    }
                }
            }

            if (insert == MaxIdempotentInserts)
            {
                throw new InvalidOperationException(
                    $"Work queue '{Name}' could not enqueue with idempotency key '{idempotencyKey}': {insert} times, an item that held the key was committed or deleted by another transaction while the insert ran.");
            }
        }
    }

    private static void ValidateIdempotencyKey(string idempotencyKey)
    {
        ArgumentException.ThrowIfNullOrEmpty(idempotencyKey);
        ValidateKey(idempotencyKey, "idempotency key", MaxIdempotencyKeyLength, nameof(idempotencyKey));
    }

    /// <summary>Throws unless PostgreSQL can store and index <paramref name="key"/>: short enough for a B-tree entry, no NUL, valid Unicode.</summary>
    private static void ValidateKey(string key, string what, int maxLength, string parameter)
    {
        if (key.Length > maxLength)
        {
            throw new ArgumentException($"The {what} must be at most {maxLength} characters (was {key.Length}).", parameter);
        }

        if (key.Contains('\0', StringComparison.Ordinal))
        {
            throw new ArgumentException($"The {what} must not contain a NUL character (PostgreSQL text cannot store it).", parameter);
        }

        for (var index = 0; index < key.Length;)
        {
            if (Rune.DecodeFromUtf16(key.AsSpan(index), out _, out var consumed) != OperationStatus.Done)
            {
                throw new ArgumentException($"The {what} must be valid Unicode text (a lone surrogate at index {index}).", parameter);
            }

            index += consumed;
        }
    }

    /// <summary>
    /// An insert's command with the parameters every enqueue statement shares: $1 queue, $2 payload, $3 ordering key,
    /// $4 priority, $5 run at, $6 delay, $7 traceparent, $8 tracestate, $9 tenant. The caller adds the statement's own. The trace
    /// context is the producer's current activity's, read here (on the producer's flow), when it has a W3C id.
    /// </summary>
    private NpgsqlCommand CreateInsertCommand(string sql, string payload, string? orderingKey, StoredFields fields, NpgsqlConnection connection, NpgsqlTransaction? transaction)
    {
        var command = new NpgsqlCommand(sql, connection, transaction);
        AddSharedParameters(command, new NpgsqlParameter<string> { NpgsqlDbType = NpgsqlDbType.Jsonb, TypedValue = payload },
            new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlDbType.Text, TypedValue = orderingKey }, fields);
        return command;
    }

    private void AddSharedParameters(NpgsqlCommand command, NpgsqlParameter payload, NpgsqlParameter orderingKey, StoredFields fields)
    {
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = Name });
        command.Parameters.Add(payload);
        command.Parameters.Add(orderingKey);
        command.Parameters.Add(new NpgsqlParameter<short> { TypedValue = fields.Priority });
        command.Parameters.Add(new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.TimestampTz, Value = fields.RunAt is { } runAt ? runAt.ToUniversalTime() : DBNull.Value });
        command.Parameters.Add(new NpgsqlParameter<TimeSpan> { NpgsqlDbType = NpgsqlDbType.Interval, TypedValue = fields.Delay });
        var activity = Activity.Current is { IdFormat: ActivityIdFormat.W3C } current ? current : null;
        command.Parameters.Add(new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlDbType.Text, TypedValue = activity?.Id });
        command.Parameters.Add(new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlDbType.Text, TypedValue = activity?.TraceStateString });
        command.Parameters.Add(new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlDbType.Text, TypedValue = fields.Tenant });
    }

    /// <summary>The item's ordering key as stored (see <see cref="ValidateKey"/>; the empty string is a key like any other).</summary>
    private string? OrderingKeyOf(T item)
    {
        if (_context.Options.OrderingKey?.Invoke(item) is not { } value || Convert.ToString(value, System.Globalization.CultureInfo.InvariantCulture) is not { } orderingKey)
        {
            return null;
        }

        ValidateKey(orderingKey, "ordering key (WorkQueueOptions.OrderingKey)", MaxOrderingKeyLength, nameof(item));
        return orderingKey;
    }

    private string Serialize(T item) => JsonSerializer.Serialize(item, _json);

    /// <summary>What an enqueue stores beside the item (and the producer's trace context): when it may run, its priority, its idempotency key and its tenant.</summary>
    private readonly record struct StoredFields(short Priority, DateTimeOffset? RunAt, TimeSpan Delay, string? IdempotencyKey)
    {
        /// <summary>Gets the items' tenant (null: none).</summary>
        public string? Tenant { get; init; }

        /// <summary>Gets the fields of a plain enqueue: due now, priority 0, no key.</summary>
        public static StoredFields Now => default;
    }
}
