namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements of durable schedules, over the <c>schedules</c> table of a queue's schema (schema version 9). A
/// row's <c>next_tick</c> is the next tick not yet enqueued; a pass locks the due rows (<c>FOR UPDATE SKIP LOCKED</c>),
/// enqueues their ticks and advances <c>next_tick</c> in one transaction, so two nodes never enqueue the same tick, and
/// a pass that fails enqueues nothing.
/// </summary>
internal sealed class ScheduleSql
{
    /// <summary>The most rows one pass takes; the pass runs again at once when it took that many.</summary>
    public const int BatchSize = 200;

    /// <summary>The columns every read returns, in this order (see <see cref="DurableScheduler"/>'s reader).</summary>
    private const string Columns = """
        s.name, s.queue, s.cron, s.interval_ms, s.time_zone, s.missed_policy, s.max_catch_up, s.misfire_ms, s.paused,
        s.next_tick, s.last_tick, s.last_enqueued_at, s.last_item_id, s.enqueued, s.missed, s.code_definition IS NOT NULL,
        s.changed_at, s.changed_by, i.state
        """;

    public ScheduleSql(string schema)
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

        // $1 name, $2 next_tick, $3 last tick enqueued (null: none), $4 its item id, $5 ticks enqueued, $6 ticks missed.
        Advance = $"""
            UPDATE {table} SET next_tick = $2,
                last_tick = coalesce($3, last_tick),
                last_enqueued_at = CASE WHEN $3::timestamptz IS NULL THEN last_enqueued_at ELSE now() END,
                last_item_id = coalesce($4, last_item_id),
                enqueued = enqueued + $5, missed = missed + $6
            WHERE name = $1
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

    public string Advance { get; }

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
