namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements of durable schedules, over the <c>schedules</c> table of a queue's schema (schema version 9). A
/// row's <c>next_tick</c> is the next tick not yet enqueued; a pass locks the due rows (<c>FOR UPDATE SKIP LOCKED</c>),
/// then enqueues the ticks of all of them and advances their <c>next_tick</c> in one statement
/// (<see cref="EnqueueAndAdvance"/>), and commits: two nodes never take the same row, a pass that fails enqueues
/// nothing and advances nothing, and a tick enqueued again (a row set back by a change) is held off by its idempotency
/// key.
/// </summary>
internal sealed class ScheduleSql
{
    /// <summary>The most rows one pass takes; the pass runs again at once when it took that many.</summary>
    public const int BatchSize = 500;

    /// <summary>The columns every read returns, in this order (see <see cref="DurableScheduler"/>'s reader).</summary>
    private const string Columns = """
        s.name, s.queue, s.cron, s.interval_ms, s.time_zone, s.missed_policy, s.max_catch_up, s.misfire_ms, s.paused,
        s.next_tick, s.last_tick, s.last_enqueued_at, s.last_item_id, s.enqueued, s.missed, s.code_definition IS NOT NULL,
        s.changed_at, s.changed_by, i.state
        """;

    /// <param name="schema">The queue's schema, unquoted.</param>
    /// <param name="orderingKeyLockId">The lock id of an ordering key of queue <c>$1</c>, as every enqueue takes it (see <see cref="StorageSql.OrderingKeyLockId"/>).</param>
    public ScheduleSql(string schema, Func<string, string> orderingKeyLockId)
    {
        var s = "\"" + schema + "\"";
        var table = s + ".schedules";
        var read = $"SELECT {Columns} FROM {table} s LEFT JOIN {s}.items i ON i.id = s.last_item_id";

        // $1 name, $2 queue, $3 cron, $4 interval_ms, $5 time_zone, $6 missed_policy, $7 max_catch_up, $8 misfire_ms,
        // $9 paused (first store only), $10 next_tick, $11 code_definition. A stored row changes only when the code's
        // definition differs from the one it last stored: otherwise runtime changes hold.
        Upsert = $"""
            INSERT INTO {table} AS t (name, queue, cron, interval_ms, time_zone, missed_policy, max_catch_up, misfire_ms, paused, next_tick, code_definition)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (name) DO UPDATE SET queue = excluded.queue, cron = excluded.cron, interval_ms = excluded.interval_ms,
                time_zone = excluded.time_zone, missed_policy = excluded.missed_policy, max_catch_up = excluded.max_catch_up,
                misfire_ms = excluded.misfire_ms, next_tick = excluded.next_tick, code_definition = excluded.code_definition,
                changed_at = now(), changed_by = NULL
            WHERE t.code_definition IS DISTINCT FROM excluded.code_definition
            RETURNING (xmax = 0) AS inserted
            """;

        // $1 queue, $2 the node's now.
        Due = $"""
            SELECT name, cron, interval_ms, time_zone, missed_policy, max_catch_up, misfire_ms, next_tick
            FROM {table}
            WHERE queue = $1 AND NOT paused AND next_tick <= $2
            ORDER BY next_tick
            LIMIT {BatchSize}
            FOR UPDATE SKIP LOCKED
            """;

        // The ticks of every row a pass took, and the rows' advance, in one statement. One element per tick: $2 its
        // schedule, $3 payload, $4 ordering key (null: none), $5 idempotency key; shared by all: $1 queue, $6
        // traceparent, $7 tracestate, $8 the channel that wakes the consumers (notified once, at commit, if anything was
        // inserted). One element per row: $9 name, $10 next tick, $11 the last tick planned (null: none), $12 ticks
        // missed. Each tick is inserted as a single enqueue with its idempotency key inserts it (due now, priority 0, no
        // tenant), after the locks of the ticks' ordering keys, taken in the order of their ids as a bulk enqueue takes
        // them; a tick whose key a row of the queue holds is not inserted. A row's last item is the id of its last tick's
        // row (inserted, or the one that held the key), its count of enqueued ticks grows by the ticks inserted. Returns,
        // per tick in order, that id and whether this statement inserted it. A key held by a row committed after the
        // statement's snapshot (by another transaction; the insert waited for it) gives a null id: the pass then rolls
        // back and runs again, with a snapshot that sees the row.
        EnqueueAndAdvance = $"""
            WITH ticks AS (
                SELECT t.schedule, t.payload, t.ordering_key, t.key, t.n
                FROM unnest($2::text[], $3::jsonb[], $4::text[], $5::text[]) WITH ORDINALITY AS t(schedule, payload, ordering_key, key, n)),
            locked AS (
                SELECT count(*) AS held FROM (
                    SELECT pg_advisory_xact_lock(k.lock_id) FROM (
                        SELECT DISTINCT {orderingKeyLockId("ordering_key")} AS lock_id FROM ticks
                        WHERE ordering_key IS NOT NULL ORDER BY lock_id) k) taken),
            inserted AS (
                INSERT INTO {s}.items (queue, payload, ordering_key, priority, run_at, state, traceparent, tracestate, tenant, idempotency_key)
                SELECT $1, t.payload, t.ordering_key, 0, now(), 0, $6, $7, NULL, t.key
                FROM locked CROSS JOIN ticks t
                WHERE locked.held >= 0
                ORDER BY t.n
                ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id, idempotency_key),
            outcome AS (
                SELECT t.schedule, t.n, i.id IS NOT NULL AS inserted,
                       coalesce(i.id, (SELECT e.id FROM {s}.items e WHERE e.queue = $1 AND e.idempotency_key = t.key)) AS id
                FROM ticks t LEFT JOIN inserted i ON i.idempotency_key = t.key),
            per_row AS (
                SELECT schedule, count(*) FILTER (WHERE inserted) AS enqueued, (array_agg(id ORDER BY n DESC))[1] AS last_id
                FROM outcome GROUP BY schedule),
            advanced AS (
                UPDATE {table} s SET next_tick = r.next_tick,
                    last_tick = coalesce(r.last_tick, s.last_tick),
                    last_enqueued_at = CASE WHEN r.last_tick IS NULL THEN s.last_enqueued_at ELSE now() END,
                    last_item_id = coalesce(p.last_id, s.last_item_id),
                    enqueued = s.enqueued + coalesce(p.enqueued, 0), missed = s.missed + r.missed
                FROM unnest($9::text[], $10::timestamptz[], $11::timestamptz[], $12::bigint[]) AS r(name, next_tick, last_tick, missed)
                    LEFT JOIN per_row p ON p.schedule = r.name
                WHERE s.name = r.name
                RETURNING s.name),
            notified AS (SELECT pg_notify($8, $1) WHERE EXISTS (SELECT 1 FROM inserted))
            SELECT o.id, o.inserted, (SELECT count(*) FROM advanced), (SELECT count(*) FROM notified)
            FROM outcome o ORDER BY o.n
            """;

        ListForQueue = read + " WHERE s.queue = $1 ORDER BY s.name";
        GetByName = read + " WHERE s.queue = $1 AND s.name = $2";

        // $1 name, $2 queue, $3 cron, $4 interval_ms, $5 time_zone, $6 missed_policy, $7 max_catch_up, $8 misfire_ms,
        // $9 paused, $10 next_tick, $11 changed_by.
        Insert = $"""
            INSERT INTO {table} (name, queue, cron, interval_ms, time_zone, missed_policy, max_catch_up, misfire_ms, paused, next_tick, changed_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (name) DO NOTHING
            """;

        // $1 queue, $2 name.
        Lock = $"SELECT cron, interval_ms, time_zone, paused FROM {table} WHERE queue = $1 AND name = $2 FOR UPDATE";

        // $1 queue, $2 name, $3 cron, $4 interval_ms, $5 time_zone, $6 next_tick, $7 changed_by.
        Change = $"""
            UPDATE {table} SET cron = $3, interval_ms = $4, time_zone = $5, next_tick = $6, changed_at = now(), changed_by = $7
            WHERE queue = $1 AND name = $2
            """;

        // $1 queue, $2 name, $3 paused, $4 next_tick (kept when null), $5 changed_by.
        SetPaused = $"""
            UPDATE {table} SET paused = $3, next_tick = coalesce($4, next_tick), changed_at = now(), changed_by = $5
            WHERE queue = $1 AND name = $2
            """;

        // $1 queue, $2 name, $3 missed_policy, $4 changed_by.
        SetMissedPolicy = $"""
            UPDATE {table} SET missed_policy = $3, changed_at = now(), changed_by = $4
            WHERE queue = $1 AND name = $2
            """;

        // $1 queue, $2 name, $3 item id.
        Triggered = $"""
            UPDATE {table} SET last_item_id = $3, last_enqueued_at = now(), enqueued = enqueued + 1
            WHERE queue = $1 AND name = $2
            """;

        Delete = $"DELETE FROM {table} WHERE queue = $1 AND name = $2";
    }

    public string Upsert { get; }

    public string Due { get; }

    public string EnqueueAndAdvance { get; }

    public string ListForQueue { get; }

    public string GetByName { get; }

    public string Insert { get; }

    public string Lock { get; }

    public string Change { get; }

    public string SetPaused { get; }

    public string SetMissedPolicy { get; }

    public string Triggered { get; }

    public string Delete { get; }

    /// <summary>The idempotency key of a tick: the schedule and the tick's scheduled instant (UTC, to the millisecond), never the node's now.</summary>
    public static string TickKey(string schedule, DateTimeOffset tick) =>
        "schedule:" + schedule + ":" + tick.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", System.Globalization.CultureInfo.InvariantCulture);
}
