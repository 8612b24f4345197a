using System.Globalization;
using System.Security.Cryptography;
using System.Text;
using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The search over the stored items and its bulk actions (<see cref="IStoredItemSearch"/>); the statements and why
/// each page is bounded are in <see cref="ItemSearchSql"/>.
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T> : IStoredItemSearch
{
    /// <summary>The most items one batch of an action changes (one short statement).</summary>
    internal const int ActionBatch = 500;

    string IStoredItemSearch.QueueName => Name;

    public async Task<StoredItemPage> SearchItemsAsync(StoredItemQuery query, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(query);
        query.Validate();
        ItemCursor? cursor = query.Cursor is null ? null : ItemCursor.Parse(query.Cursor, query.State);
        var page = await ReadItemPageAsync(query, cursor, query.Limit + 1, except: null, cancellationToken).ConfigureAwait(false);
        if (page.Matches.Count > query.Limit)
        {
            page.Matches.RemoveAt(page.Matches.Count - 1);
            return new StoredItemPage(page.Matches.ConvertAll(m => m.Item), page.Matches[^1].Cursor.ToString(), page.Examined);
        }

        return new StoredItemPage(page.Matches.ConvertAll(m => m.Item), page.Next?.ToString(), page.Examined);
    }

    public async Task<StoredItemActionPreview> PreviewItemActionAsync(StoredItemAction action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        action.Validate();
        long count = 0;
        ItemCursor? cursor = null;
        do
        {
            var page = await ReadItemPageAsync(action.Selection, cursor, ItemSearchSql.ScanBudget, action, cancellationToken).ConfigureAwait(false);
            count += page.Matches.Count;
            cursor = page.Next;
        }
        while (cursor is not null && count < int.MaxValue);

        var total = (int)Math.Min(count, int.MaxValue);
        return new StoredItemActionPreview(total, string.Create(CultureInfo.InvariantCulture, $"{total}.{ActionHash(action)}"));
    }

    public async Task<StoredItemActionResult> ApplyItemActionAsync(StoredItemAction action, string confirmToken, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        ArgumentNullException.ThrowIfNull(confirmToken);
        action.Validate();
        var dot = confirmToken.IndexOf('.', StringComparison.Ordinal);
        if (dot <= 0
            || !int.TryParse(confirmToken.AsSpan(0, dot), NumberStyles.None, CultureInfo.InvariantCulture, out var confirmed)
            || !string.Equals(confirmToken[(dot + 1)..], ActionHash(action), StringComparison.Ordinal))
        {
            throw new ArgumentException(
                "The confirmation token is not that of a dry run of this action on this selection: run the dry run (PreviewItemActionAsync) of the same action and pass its ConfirmToken.",
                nameof(confirmToken));
        }

        int applied = 0, skipped = 0;
        ItemCursor? cursor = null;
        if (confirmed == 0)
        {
            return new StoredItemActionResult(0, 0, StoppedAtConfirmedCount: false);
        }

        while (applied + skipped < confirmed)
        {
            var take = Math.Min(ActionBatch, confirmed - applied - skipped);
            var page = await ReadItemPageAsync(action.Selection, cursor, take, action, cancellationToken).ConfigureAwait(false);
            if (page.Matches.Count > 0)
            {
                var ids = page.Matches.ConvertAll(m => m.Item.ItemId).ToArray();
                var changed = await ApplyBatchAsync(action, ids, cancellationToken).ConfigureAwait(false);
                applied += changed;
                skipped += ids.Length - changed;
            }

            cursor = page.Matches.Count == take ? page.Matches[^1].Cursor : page.Next;
            if (cursor is null)
            {
                return new StoredItemActionResult(applied, skipped, StoppedAtConfirmedCount: false);
            }
        }

        // The count is reached: is there more? One page of the rest, to say so.
        var rest = await ReadItemPageAsync(action.Selection, cursor, 1, action, cancellationToken).ConfigureAwait(false);
        return new StoredItemActionResult(applied, skipped, StoppedAtConfirmedCount: rest.Matches.Count > 0 || rest.Next is not null);
    }

    private async Task<int> ApplyBatchAsync(StoredItemAction action, long[] ids, CancellationToken cancellationToken)
    {
        if (action.Kind == StoredItemActionKind.Requeue)
        {
            return await RequeueDeadLettersAsync(DeadLetterSelection.ByIds(ids), cancellationToken).ConfigureAwait(false);
        }

        long changed, woken;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = ItemSearchSql.Batch(_sql, Name, action, ids, connection);
            await using (command.ConfigureAwait(false))
            {
                command.CommandTimeout = (int)ItemSearchSql.PageTimeout.TotalSeconds;
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                    (changed, woken) = (reader.GetInt64(0), reader.GetInt64(1));
                }
            }
        }

        if (woken > 0)
        {
            _claimLoop.Wake();
        }

        return (int)changed;
    }

    /// <summary>One page of candidates: the matching ones (at most <paramref name="take"/>) and, when the scan budget ran out, the cursor after the last one examined.</summary>
    private async Task<ItemPage> ReadItemPageAsync(StoredItemQuery query, ItemCursor? cursor, int take, StoredItemAction? except, CancellationToken cancellationToken)
    {
        var matches = new List<(StoredItemInfo Item, ItemCursor Cursor)>(Math.Min(take, 64));
        ItemCursor? last = null;
        var examined = 0;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = ItemSearchSql.Page(_sql, Name, query, cursor, take, except, connection);
            await using (command.ConfigureAwait(false))
            {
                command.CommandTimeout = (int)ItemSearchSql.PageTimeout.TotalSeconds;
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        var state = reader.GetInt16(2);
                        var item = new StoredItemInfo
                        {
                            ItemId = reader.GetInt64(1),
                            State = ItemSearchSql.State(state),
                            Attempts = reader.GetInt32(3),
                            Priority = reader.GetInt16(4),
                            OrderingKey = reader.IsDBNull(5) ? null : reader.GetString(5),
                            EnqueuedAt = reader.GetFieldValue<DateTimeOffset>(6),
                            RunAt = reader.GetFieldValue<DateTimeOffset>(7),
                            FinishedAt = reader.IsDBNull(8) ? null : reader.GetFieldValue<DateTimeOffset>(8),
                            LastError = reader.IsDBNull(9) ? null : reader.GetString(9),
                            Tenant = reader.IsDBNull(11) ? null : reader.GetString(11),
                        };
                        var at = state is StorageSql.Completed or StorageSql.Dead or StorageSql.Cancelled ? item.FinishedAt!.Value : item.RunAt;
                        var position = new ItemCursor(state, item.Priority, at, item.ItemId);
                        if (reader.GetInt32(0) == 0)
                        {
                            matches.Add((item, position));
                        }
                        else
                        {
                            last = position;
                            examined = (int)reader.GetInt64(10);
                        }
                    }
                }
            }
        }

        return new ItemPage(matches, examined, examined >= ItemSearchSql.ScanBudget ? last : null);
    }

    /// <summary>A hash of the action and its selection (not its page size or cursor), in the queue: what a confirmation token names.</summary>
    private string ActionHash(StoredItemAction action)
    {
        var s = action.Selection;
        var text = new StringBuilder();
        void Add(object? value)
        {
            var written = value switch
            {
                null => "-",
                DateTimeOffset time => time.UtcTicks.ToString(CultureInfo.InvariantCulture),
                IFormattable formattable => formattable.ToString(null, CultureInfo.InvariantCulture),
                _ => value.ToString() ?? "-",
            };
            text.Append(written.Length.ToString(CultureInfo.InvariantCulture)).Append(':').Append(written).Append('|');
        }

        Add(_sql.Schema);
        Add(Name);
        Add(action.Kind.ToString());
        Add(action.Priority);
        Add(action.RunAt);
        Add(s.State.ToString());
        Add(s.OrderingKey);
        Add(s.EnqueuedSince);
        Add(s.EnqueuedUntil);
        Add(s.ChangedSince);
        Add(s.ChangedUntil);
        Add(s.ErrorContains);
        Add(s.PayloadPath);
        Add(s.PayloadEquals);
        return Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(text.ToString())), 0, 12);
    }

    private sealed record ItemPage(List<(StoredItemInfo Item, ItemCursor Cursor)> Matches, int Examined, ItemCursor? Next);
}
