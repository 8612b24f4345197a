using System.Globalization;
using BoundedWork.Hosting;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The dead letters kept in the table (<see cref="IDeadLetterStore"/>): list, read, requeue and purge.</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    public async Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(query);
        if (query.Limit is < 1 or > DeadLetterQuery.MaxLimit)
        {
            throw new ArgumentException($"DeadLetterQuery.Limit must be between 1 and {DeadLetterQuery.MaxLimit} (was {query.Limit}).", nameof(query));
        }

        (DateTimeOffset At, long Id)? after = query.Cursor is null ? null : ParseCursor(query.Cursor);
        var items = new List<StoredDeadLetter>(Math.Min(query.Limit + 1, 64));
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = new NpgsqlCommand(_sql.ListDeadLetters, connection)
            {
                Parameters =
                {
                    new NpgsqlParameter<string> { TypedValue = Name },
                    Timestamp(query.Since),
                    Timestamp(query.Until),
                    Timestamp(after?.At),
                    new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.Bigint, Value = after is { } cursor ? cursor.Id : DBNull.Value },
                    new NpgsqlParameter<int> { TypedValue = query.Limit + 1 },
                },
            };
            await using (command.ConfigureAwait(false))
            {
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        items.Add(ReadDeadLetter(reader));
                    }
                }
            }
        }

        if (items.Count <= query.Limit)
        {
            return new DeadLetterPage(items, null);
        }

        items.RemoveAt(items.Count - 1);
        var last = items[^1];
        return new DeadLetterPage(items, FormatCursor(last.DeadAt, last.ItemId));
    }

    public async Task<StoredDeadLetter?> GetDeadLetterAsync(long itemId, int maxPayloadLength, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxPayloadLength, 1);
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = new NpgsqlCommand(_sql.GetDeadLetter, connection)
            {
                Parameters =
                {
                    new NpgsqlParameter<string> { TypedValue = Name },
                    new NpgsqlParameter<long> { TypedValue = itemId },
                    new NpgsqlParameter<int> { TypedValue = maxPayloadLength },
                },
            };
            await using (command.ConfigureAwait(false))
            {
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    if (!await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        return null;
                    }

                    var length = reader.GetInt32(10);
                    return ReadDeadLetter(reader) with { Payload = reader.GetString(9), PayloadLength = length, IsPayloadTruncated = length > maxPayloadLength };
                }
            }
        }
    }

    public async Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(selection);
        long requeued;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            // Two statements in one transaction: the keys' locks are held before the requeue's snapshot is taken.
            var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
            await using (transaction.ConfigureAwait(false))
            {
                long[] ids;
                var lockKeys = SelectionCommand(_sql.LockDeadLetterKeys, selection, connection);
                await using (lockKeys.ConfigureAwait(false))
                {
                    lockKeys.Transaction = transaction;
                    ids = (long[])(await lockKeys.ExecuteScalarAsync(cancellationToken).ConfigureAwait(false))!;
                }

                requeued = 0;
                if (ids.Length > 0)
                {
                    var command = SelectionCommand(_sql.RequeueDeadLetters, selection, connection);
                    await using (command.ConfigureAwait(false))
                    {
                        // The ids the locks were taken for, whatever the selection (a time window included).
                        command.Transaction = transaction;
                        command.Parameters[1].Value = ids;
                        command.Parameters[2].Value = DBNull.Value;
                        command.Parameters[3].Value = DBNull.Value;
                        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = _sql.NotifyChannel });
                        var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                        await using (reader.ConfigureAwait(false))
                        {
                            await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                            requeued = reader.GetInt64(0);
                        }
                    }
                }

                await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
            }
        }

        if (requeued > 0)
        {
            _claimLoop.Wake();
        }

        return (int)requeued;
    }

    public async Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(selection);
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = SelectionCommand(_sql.PurgeDeadLetters, selection, connection);
            await using (command.ConfigureAwait(false))
            {
                return await command.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
            }
        }
    }

    /// <summary>A dead-letter cursor: when the last item of a page became a dead letter (UTC ticks, microsecond-exact) and its id.</summary>
    private static string FormatCursor(DateTimeOffset deadAt, long id) =>
        string.Create(CultureInfo.InvariantCulture, $"{deadAt.UtcTicks}.{id}");

    private static (DateTimeOffset At, long Id) ParseCursor(string cursor)
    {
        var dot = cursor.IndexOf('.', StringComparison.Ordinal);
        return dot > 0
            && long.TryParse(cursor.AsSpan(0, dot), NumberStyles.None, CultureInfo.InvariantCulture, out var ticks)
            && ticks <= DateTimeOffset.MaxValue.UtcTicks
            && long.TryParse(cursor.AsSpan(dot + 1), NumberStyles.None, CultureInfo.InvariantCulture, out var id)
            ? (new DateTimeOffset(ticks, TimeSpan.Zero), id)
            : throw new ArgumentException($"DeadLetterQuery.Cursor '{cursor}' is not a cursor of this queue's dead letters: pass a page's NextCursor unchanged.", nameof(cursor));
    }

    private static NpgsqlParameter Timestamp(DateTimeOffset? value) =>
        new() { NpgsqlDbType = NpgsqlDbType.TimestampTz, Value = value is { } at ? at.ToUniversalTime() : DBNull.Value };

    private static StoredDeadLetter ReadDeadLetter(NpgsqlDataReader reader) => new()
    {
        ItemId = reader.GetInt64(0),
        Attempts = reader.GetInt32(1),
        LastError = reader.IsDBNull(2) ? null : reader.GetString(2),
        EnqueuedAt = reader.GetFieldValue<DateTimeOffset>(3),
        DeadAt = reader.GetFieldValue<DateTimeOffset>(4),
        Priority = reader.GetInt16(5),
        OrderingKey = reader.IsDBNull(6) ? null : reader.GetString(6),
        TraceParent = reader.IsDBNull(7) ? null : reader.GetString(7),
        TraceState = reader.IsDBNull(8) ? null : reader.GetString(8),
    };

    /// <summary>A requeue or purge statement's command: $1 queue, $2 ids (null: all), $3 since, $4 until.</summary>
    private NpgsqlCommand SelectionCommand(string sql, DeadLetterSelection selection, NpgsqlConnection connection) => new(sql, connection)
    {
        Parameters =
        {
            new NpgsqlParameter<string> { TypedValue = Name },
            new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Bigint, Value = selection.ItemIds is { } ids ? ids.ToArray() : DBNull.Value },
            Timestamp(selection.Since),
            Timestamp(selection.Until),
        },
    };
}
