using BoundedWork.Hosting;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements of the dead letters kept in the table, each with its text, its parameters by name (a record bound in
/// the text's <c>$n</c> order) and the row it reads. The texts are built by <see cref="StorageSql"/> (its comments hold
/// the reasoning): <see cref="StorageSql.ListDeadLetters"/>, <see cref="StorageSql.GetDeadLetter"/>, and the
/// statements over a <see cref="DeadLetterSelection"/> (<see cref="StorageSql.LockDeadLetterKeys"/>,
/// <see cref="StorageSql.RequeueDeadLetters"/>, <see cref="StorageSql.PurgeDeadLetters"/>).
/// </summary>
internal sealed class DeadLetterStatements(StorageSql sql)
{
    private const int Id = 0;
    private const int Attempts = 1;
    private const int LastError = 2;
    private const int EnqueuedAt = 3;
    private const int DeadAt = 4;
    private const int Priority = 5;
    private const int OrderingKey = 6;
    private const int TraceParent = 7;
    private const int TraceState = 8;
    private const int Payload = 9;
    private const int PayloadLength = 10;

    /// <summary>Creates the page read: <c>$1</c> queue, <c>$2</c> since, <c>$3</c> until, <c>$4</c>/<c>$5</c> the cursor, <c>$6</c> how many rows.</summary>
    public NpgsqlCommand List(NpgsqlConnection connection, in DeadLetterListParameters parameters) => new(sql.ListDeadLetters, connection)
    {
        Parameters =
        {
            new NpgsqlParameter<string> { TypedValue = parameters.Queue },
            Timestamp(parameters.Since),
            Timestamp(parameters.Until),
            Timestamp(parameters.After?.At),
            new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.Bigint, Value = parameters.After is { } cursor ? cursor.Id : DBNull.Value },
            new NpgsqlParameter<int> { TypedValue = parameters.Limit },
        },
    };

    /// <summary>Creates the read of one dead letter: <c>$1</c> queue, <c>$2</c> item, <c>$3</c> the most payload characters to read.</summary>
    public NpgsqlCommand Get(NpgsqlConnection connection, string queue, long item, int maxPayloadLength) => new(sql.GetDeadLetter, connection)
    {
        Parameters =
        {
            new NpgsqlParameter<string> { TypedValue = queue },
            new NpgsqlParameter<long> { TypedValue = item },
            new NpgsqlParameter<int> { TypedValue = maxPayloadLength },
        },
    };

    /// <summary>Creates the lock of the selected dead letters' keys (its one row: their ids).</summary>
    public NpgsqlCommand LockKeys(NpgsqlConnection connection, NpgsqlTransaction transaction, string queue, DeadLetterSelection selection) =>
        Selection(sql.LockDeadLetterKeys, connection, transaction, queue, selection.ItemIds?.ToArray(), selection.Since, selection.Until);

    /// <summary>Creates the requeue of the dead letters <paramref name="ids"/> (their keys locked), waking the nodes on <paramref name="channel"/> (its one row: how many).</summary>
    public NpgsqlCommand Requeue(NpgsqlConnection connection, NpgsqlTransaction transaction, string queue, long[] ids, string channel)
    {
        var command = Selection(sql.RequeueDeadLetters, connection, transaction, queue, ids, since: null, until: null);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = channel });
        return command;
    }

    /// <summary>Creates the purge of the selected dead letters (affects: how many).</summary>
    public NpgsqlCommand Purge(NpgsqlConnection connection, string queue, DeadLetterSelection selection) =>
        Selection(sql.PurgeDeadLetters, connection, null, queue, selection.ItemIds?.ToArray(), selection.Since, selection.Until);

    /// <summary>Reads a listed row.</summary>
    public static StoredDeadLetter Read(NpgsqlDataReader reader) => new()
    {
        ItemId = reader.GetInt64(Id),
        Attempts = reader.GetInt32(Attempts),
        LastError = reader.IsDBNull(LastError) ? null : reader.GetString(LastError),
        EnqueuedAt = reader.GetFieldValue<DateTimeOffset>(EnqueuedAt),
        DeadAt = reader.GetFieldValue<DateTimeOffset>(DeadAt),
        Priority = reader.GetInt16(Priority),
        OrderingKey = reader.IsDBNull(OrderingKey) ? null : reader.GetString(OrderingKey),
        TraceParent = reader.IsDBNull(TraceParent) ? null : reader.GetString(TraceParent),
        TraceState = reader.IsDBNull(TraceState) ? null : reader.GetString(TraceState),
    };

    /// <summary>Reads the row of <see cref="Get"/>: the dead letter with its payload, cut at <paramref name="maxPayloadLength"/> characters.</summary>
    public static StoredDeadLetter ReadWithPayload(NpgsqlDataReader reader, int maxPayloadLength)
    {
        var length = reader.GetInt32(PayloadLength);
        return Read(reader) with { Payload = reader.GetString(Payload), PayloadLength = length, IsPayloadTruncated = length > maxPayloadLength };
    }

    private static NpgsqlParameter Timestamp(DateTimeOffset? value) =>
        new() { NpgsqlDbType = NpgsqlDbType.TimestampTz, Value = value is { } at ? at.ToUniversalTime() : DBNull.Value };

    /// <summary>A statement over a selection: <c>$1</c> queue, <c>$2</c> ids (null: all), <c>$3</c> since, <c>$4</c> until.</summary>
    private static NpgsqlCommand Selection(string text, NpgsqlConnection connection, NpgsqlTransaction? transaction, string queue, long[]? ids, DateTimeOffset? since, DateTimeOffset? until) =>
        new(text, connection, transaction)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = queue },
                new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Bigint, Value = (object?)ids ?? DBNull.Value },
                Timestamp(since),
                Timestamp(until),
            },
        };
}

/// <summary>The dead-letter page read's parameters: the queue, the time window, the cursor (the last row of the previous page), and how many rows to read.</summary>
internal readonly record struct DeadLetterListParameters(string Queue, DateTimeOffset? Since, DateTimeOffset? Until, (DateTimeOffset At, long Id)? After, int Limit);
