using System.Globalization;
using BoundedWork.Hosting;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements of the stored-item search and its bulk actions (<see cref="IStoredItemSearch"/>), built for one query.
/// </summary>
/// <remarks>
/// <b>Bounded pages.</b> A page reads the candidates of one state through that state's partial index, in the index's
/// order, from the cursor on, at most <see cref="ScanBudget"/> of them (the inner statement: its only conditions are
/// the queue, the state, the cursor and, where the index leads with that time, the change-time window); the filters
/// (key, enqueue time, error text, payload field) are then checked on those candidates alone. So a page examines at
/// most the budget's rows whatever the table holds; when the budget runs out before the page is full, the page ends
/// early with a cursor after the last candidate examined. The indexes: ready <c>items_ready</c> (queue, priority DESC,
/// run_at, id), scheduled <c>items_scheduled</c> (queue, run_at), running <c>items_running</c> (all of a queue's running
/// rows, sorted by id: as many as its nodes hold), finished <c>items_finished</c> (queue, state, finished_at), read
/// backwards. A ready cursor inside a priority is two ranges of the index (the rest of the priority, then the lower
/// priorities), each its own bounded scan. Ties of a scheduled or finished time (a bulk enqueue with one delay, an
/// outcome batch) are read whole to order them by id: the statement timeout (<see cref="PageTimeout"/>) bounds a
/// pathological one.
/// </remarks>
internal static class ItemSearchSql
{
    /// <summary>The most candidates one page examines.</summary>
    public const int ScanBudget = 5000;

    /// <summary>The longest last error a page returns, in characters.</summary>
    public const int MaxErrorLength = 4096;

    /// <summary>The statement timeout of one page or one batch.</summary>
    public static readonly TimeSpan PageTimeout = TimeSpan.FromSeconds(10);

    private const string Columns = "id, state, attempts, priority, ordering_key, enqueued_at, run_at, finished_at, last_error, tenant";

    public static short Code(StoredItemState state) => state switch
    {
        StoredItemState.Ready => StorageSql.Ready,
        StoredItemState.Scheduled => StorageSql.Scheduled,
        StoredItemState.Running => StorageSql.Running,
        StoredItemState.Completed => StorageSql.Completed,
        StoredItemState.DeadLetter => StorageSql.Dead,
        _ => StorageSql.Cancelled,
    };

    public static StoredItemState State(short code) => code switch
    {
        StorageSql.Ready => StoredItemState.Ready,
        StorageSql.Scheduled => StoredItemState.Scheduled,
        StorageSql.Running => StoredItemState.Running,
        StorageSql.Completed => StoredItemState.Completed,
        StorageSql.Dead => StoredItemState.DeadLetter,
        _ => StoredItemState.Cancelled,
    };

    /// <summary>
    /// One page: rows of kind 0 are the matching candidates in order (at most <paramref name="take"/>), then one row of
    /// kind 1: the last candidate examined (its key columns) and, in its last column, how many were examined (no row
    /// of kind 1 when none was). <paramref name="except"/> adds an action's own condition (items it would not change).
    /// </summary>
    public static NpgsqlCommand Page(StorageSql sql, string queue, StoredItemQuery query, ItemCursor? cursor, int take, StoredItemAction? except, NpgsqlConnection connection)
    {
        var command = new NpgsqlCommand { Connection = connection };
        string P(NpgsqlParameter parameter)
        {
            command.Parameters.Add(parameter);
            return "$" + command.Parameters.Count.ToString(CultureInfo.InvariantCulture);
        }

        var q = P(new NpgsqlParameter<string> { TypedValue = queue });
        var budget = P(new NpgsqlParameter<int> { TypedValue = ScanBudget });
        var state = Code(query.State);
        var items = sql.Items;
        var select = query.PayloadPath is null ? Columns : Columns + ", payload";
        var matched = new List<string>();
        string inner;
        switch (query.State)
        {
            case StoredItemState.Ready:
                const string ReadyOrder = "ORDER BY priority DESC, run_at, id";
                if (cursor is { } c)
                {
                    var priority = P(new NpgsqlParameter<short> { TypedValue = (short)c.Priority });
                    var at = P(Time(c.At));
                    var id = P(new NpgsqlParameter<long> { TypedValue = c.Id });
                    inner = $"""
                        SELECT * FROM (
                            (SELECT {select} FROM {items} WHERE queue = {q} AND state = 0 AND priority = {priority} AND (run_at, id) > ({at}, {id}) {ReadyOrder} LIMIT {budget})
                            UNION ALL
                            (SELECT {select} FROM {items} WHERE queue = {q} AND state = 0 AND priority < {priority} {ReadyOrder} LIMIT {budget})) u
                        {ReadyOrder} LIMIT {budget}
                        """;
                }
                else
                {
                    inner = $"SELECT {select} FROM {items} WHERE queue = {q} AND state = 0 {ReadyOrder} LIMIT {budget}";
                }

                AddWindow(matched, "run_at", query.ChangedSince, query.ChangedUntil, P);
                break;
            case StoredItemState.Scheduled:
                var scheduled = new List<string> { $"queue = {q}", "state = 5" };
                if (cursor is { } s)
                {
                    scheduled.Add($"(run_at, id) > ({P(Time(s.At))}, {P(new NpgsqlParameter<long> { TypedValue = s.Id })})");
                }

                AddWindow(scheduled, "run_at", query.ChangedSince, query.ChangedUntil, P);
                inner = $"SELECT {select} FROM {items} WHERE {string.Join(" AND ", scheduled)} ORDER BY run_at, id LIMIT {budget}";
                break;
            case StoredItemState.Running:
                // OFFSET 0: the running rows of the queue through their partial index, then sorted (never a walk of
                // the primary key filtered by state).
                var after = cursor is { } r ? $"WHERE id > {P(new NpgsqlParameter<long> { TypedValue = r.Id })}" : string.Empty;
                inner = $"SELECT * FROM (SELECT {select} FROM {items} WHERE queue = {q} AND state = 1 OFFSET 0) r {after} ORDER BY id LIMIT {budget}";
                break;
            default:
                var finished = new List<string> { $"queue = {q}", $"state = {state}" };
                if (cursor is { } f)
                {
                    finished.Add($"(finished_at, id) < ({P(Time(f.At))}, {P(new NpgsqlParameter<long> { TypedValue = f.Id })})");
                }

                AddWindow(finished, "finished_at", query.ChangedSince, query.ChangedUntil, P);
                inner = $"SELECT {select} FROM {items} WHERE {string.Join(" AND ", finished)} ORDER BY finished_at DESC, id DESC LIMIT {budget}";
                break;
        }

        if (query.OrderingKey is { } key)
        {
            matched.Add($"ordering_key = {P(new NpgsqlParameter<string> { TypedValue = key })}");
        }

        AddWindow(matched, "enqueued_at", query.EnqueuedSince, query.EnqueuedUntil, P);
        if (query.ErrorContains is { } error)
        {
            matched.Add($"strpos(lower(last_error), lower({P(new NpgsqlParameter<string> { TypedValue = error })})) > 0");
        }

        if (query.PayloadPath is not null)
        {
            var path = P(new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Text, TypedValue = query.PayloadPathSegments() });
            matched.Add($"payload #>> {path} = {P(new NpgsqlParameter<string> { TypedValue = query.PayloadEquals! })}");
        }

        if (except?.Kind == StoredItemActionKind.SetPriority)
        {
            matched.Add($"priority <> {P(new NpgsqlParameter<short> { TypedValue = (short)except.Priority!.Value })}");
        }
        else if (except?.Kind == StoredItemActionKind.SetRunAt)
        {
            matched.Add($"run_at <> {P(Time(except.RunAt!.Value))}");
        }

        var order = query.State switch
        {
            StoredItemState.Ready => "priority DESC, run_at, id",
            StoredItemState.Scheduled => "run_at, id",
            StoredItemState.Running => "id",
            _ => "finished_at DESC, id DESC",
        };
        var condition = matched.Count == 0 ? "true" : $"coalesce({string.Join(" AND ", matched)}, false)";
        var limit = P(new NpgsqlParameter<int> { TypedValue = take });
        command.CommandText = $"""
            /* BoundedWork item search */
            WITH c AS MATERIALIZED (
                SELECT id, state, attempts, priority, ordering_key, enqueued_at, run_at, finished_at, left(last_error, {MaxErrorLength}) AS last_error,
                       {condition} AS matched, row_number() OVER (ORDER BY {order}) AS n, tenant
                FROM ({inner}) x)
            SELECT * FROM (SELECT 0 AS kind, id, state, attempts, priority, ordering_key, enqueued_at, run_at, finished_at, last_error, n, tenant
                           FROM c WHERE matched ORDER BY n LIMIT {limit}) m
            UNION ALL
            SELECT * FROM (SELECT 1, id, state, attempts, priority, ordering_key, enqueued_at, run_at, finished_at, NULL, (SELECT count(*) FROM c), NULL
                           FROM c ORDER BY n DESC LIMIT 1) l
            """;
        return command;
    }

    /// <summary>
    /// One batch of an action on ids a page selected: $1 queue, $2 ids, $3 the selection's state, then the action's value
    /// and the wake-up channel. Each row is locked with SKIP LOCKED (a row a consumer is claiming now is skipped, and no
    /// claim waits for this) and its state is checked again under the lock. Returns how many changed and whether the
    /// consumers were woken. Requeues go through the dead-letter requeue instead (its key fences).
    /// </summary>
    public static NpgsqlCommand Batch(StorageSql sql, string queue, StoredItemAction action, long[] ids, NpgsqlConnection connection)
    {
        var command = new NpgsqlCommand { Connection = connection };
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = queue });
        command.Parameters.Add(new NpgsqlParameter<long[]> { NpgsqlDbType = NpgsqlDbType.Array | NpgsqlDbType.Bigint, TypedValue = ids });
        command.Parameters.Add(new NpgsqlParameter<short> { TypedValue = Code(action.Selection.State) });
        var items = sql.Items;
        string Locked(string also = "") =>
            $"ARRAY(SELECT id FROM {items} WHERE id = ANY($2) AND queue = $1 AND state = $3 {also} ORDER BY id FOR UPDATE SKIP LOCKED)";
        switch (action.Kind)
        {
            case StoredItemActionKind.Cancel:
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = sql.NotifyChannel });
                command.CommandText = $"""
                    WITH done AS (
                        UPDATE {items} i SET state = 4, finished_at = now(), last_error = 'cancelled by an operator (bulk action)'
                        WHERE i.id = ANY({Locked()})
                        RETURNING i.ordering_key IS NOT NULL AS ordered)
                    SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM (SELECT pg_notify($4, $1) WHERE EXISTS (SELECT 1 FROM done WHERE ordered)) w)
                    """;
                break;
            case StoredItemActionKind.Delete:
                command.CommandText = $"""
                    WITH done AS (DELETE FROM {items} WHERE id = ANY({Locked()}) RETURNING 1)
                    SELECT (SELECT count(*) FROM done), 0::bigint
                    """;
                break;
            case StoredItemActionKind.SetPriority:
                command.Parameters.Add(new NpgsqlParameter<short> { TypedValue = (short)action.Priority!.Value });
                command.CommandText = $"""
                    WITH done AS (UPDATE {items} SET priority = $4 WHERE id = ANY({Locked("AND priority <> $4")}) RETURNING 1)
                    SELECT (SELECT count(*) FROM done), 0::bigint
                    """;
                break;
            case StoredItemActionKind.SetRunAt:
                command.Parameters.Add(Time(action.RunAt!.Value));
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = sql.NotifyChannel });
                command.CommandText = $"""
                    WITH done AS (
                        UPDATE {items} SET run_at = $4, state = CASE WHEN $4 <= now() THEN 0 ELSE 5 END
                        WHERE id = ANY({Locked("AND run_at <> $4")})
                        RETURNING state)
                    SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM (SELECT pg_notify($5, $1) WHERE EXISTS (SELECT 1 FROM done WHERE state = 0)) w)
                    """;
                break;
            default:
                throw new ArgumentOutOfRangeException(nameof(action), action.Kind, "Requeues go through the dead-letter requeue.");
        }

        return command;
    }

    private static void AddWindow(List<string> conditions, string column, DateTimeOffset? since, DateTimeOffset? until, Func<NpgsqlParameter, string> p)
    {
        if (since is { } from)
        {
            conditions.Add($"{column} >= {p(Time(from))}");
        }

        if (until is { } to)
        {
            conditions.Add($"{column} < {p(Time(to))}");
        }
    }

    private static NpgsqlParameter<DateTimeOffset> Time(DateTimeOffset value) => new() { NpgsqlDbType = NpgsqlDbType.TimestampTz, TypedValue = value.ToUniversalTime() };
}

/// <summary>
/// Where a page of a search starts: after the item with these key values in its state's order (ready: priority, run_at,
/// id; scheduled: run_at, id; running: id; finished: finished_at, id). Written as <c>state.priority.ticks.id</c>.
/// </summary>
internal readonly record struct ItemCursor(short State, int Priority, DateTimeOffset At, long Id)
{
    public override string ToString() =>
        string.Create(CultureInfo.InvariantCulture, $"{State}.{Priority}.{At.UtcTicks}.{Id}");

    [System.Diagnostics.CodeAnalysis.SuppressMessage("Usage", "CA2208:Instantiate argument exceptions correctly", Justification = "Names the query's property, as every other check of the query does.")]
    public static ItemCursor Parse(string text, StoredItemState state)
    {
        var parts = text.Split('.');
        if (parts.Length == 4
            && short.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var code)
            && code == ItemSearchSql.Code(state)
            && int.TryParse(parts[1], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var priority)
            && priority is >= short.MinValue and <= short.MaxValue
            && long.TryParse(parts[2], NumberStyles.None, CultureInfo.InvariantCulture, out var ticks)
            && ticks <= DateTimeOffset.MaxValue.UtcTicks
            && long.TryParse(parts[3], NumberStyles.None, CultureInfo.InvariantCulture, out var id))
        {
            return new ItemCursor(code, priority, new DateTimeOffset(ticks, TimeSpan.Zero), id);
        }

        throw new ArgumentException(
            $"StoredItemQuery.Cursor '{(text.Length <= 64 ? text : text[..64] + "...")}' is not a cursor of this queue's {state} items: pass a page's NextCursor unchanged, with the same state.",
            nameof(StoredItemQuery.Cursor));
    }
}
