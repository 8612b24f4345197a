using System.Globalization;
using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The dead letters a queue keeps in its table (<see cref="IDeadLetterStore"/>): list (keyset pages), read, requeue
/// and purge.
/// </summary>
/// <remarks>
/// No state of its own: every answer is the database's. A requeue locks the selected items' ordering keys before its
/// snapshot is taken (two statements in one transaction), so a requeued item never runs beside a newer item of its key
/// (docs/durable-invariants.md, I1).
/// </remarks>
internal sealed class DeadLetterStore
{
    private readonly string _queue;
    private readonly NpgsqlDataSource _source;
    private readonly DeadLetterStatements _statements;
    private readonly string _notifyChannel;
    private readonly Action _requeued;

    /// <param name="queue">The queue's name.</param>
    /// <param name="source">The pool of the asynchronous API.</param>
    /// <param name="statements">The dead-letter statements.</param>
    /// <param name="notifyChannel">The channel requeued items are announced on.</param>
    /// <param name="requeued">Called when a requeue made items ready: this node claims them without waiting for its notification.</param>
    public DeadLetterStore(string queue, NpgsqlDataSource source, DeadLetterStatements statements, string notifyChannel, Action requeued)
    {
        _queue = queue;
        _source = source;
        _statements = statements;
        _notifyChannel = notifyChannel;
        _requeued = requeued;
    }

    public async Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(query);
        if (query.Limit is < 1 or > DeadLetterQuery.MaxLimit)
        {
            throw new ArgumentException($"DeadLetterQuery.Limit must be between 1 and {DeadLetterQuery.MaxLimit} (was {query.Limit}).", nameof(query));
        }

        (DateTimeOffset At, long Id)? after = query.Cursor is null ? null : ParseCursor(query.Cursor);
        var items = new List<StoredDeadLetter>(Math.Min(query.Limit + 1, 64));
        var connection = await _source.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = _statements.List(connection, new DeadLetterListParameters(_queue, query.Since, query.Until, after, query.Limit + 1));
            await using (command.ConfigureAwait(false))
            {
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        items.Add(DeadLetterStatements.Read(reader));
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
        var connection = await _source.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = _statements.Get(connection, _queue, itemId, maxPayloadLength);
            await using (command.ConfigureAwait(false))
            {
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    if (!await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        return null;
                    }

                    return DeadLetterStatements.ReadWithPayload(reader, maxPayloadLength);
                }
            }
        }
    }

    public async Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(selection);
        long requeued;
        var connection = await _source.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            // Two statements in one transaction: the keys' locks are held before the requeue's snapshot is taken.
            var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
            await using (transaction.ConfigureAwait(false))
            {
                long[] ids;
                var lockKeys = _statements.LockKeys(connection, transaction, _queue, selection);
                await using (lockKeys.ConfigureAwait(false))
                {
                    ids = (long[])(await lockKeys.ExecuteScalarAsync(cancellationToken).ConfigureAwait(false))!;
                }

                requeued = 0;
                if (ids.Length > 0)
                {
                    // The ids the locks were taken for, whatever the selection (a time window included).
                    var command = _statements.Requeue(connection, transaction, _queue, ids, _notifyChannel);
                    await using (command.ConfigureAwait(false))
                    {
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
            _requeued();
        }

        return (int)requeued;
    }

    public async Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(selection);
        var connection = await _source.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = _statements.Purge(connection, _queue, selection);
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
}
