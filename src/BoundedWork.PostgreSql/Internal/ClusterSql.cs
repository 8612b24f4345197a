using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements of the cluster: a queue's fleet-wide settings (<c>queue_settings</c>, one row per queue, absent until
/// the first change: defaults) and its consuming nodes (<c>nodes</c>, one row per node and queue, kept by the node's
/// heartbeat and left out of every view once <c>expires_at</c> has passed). Both tables come with schema version 4
/// (<see cref="StorageSql"/>).
/// </summary>
/// <remarks>
/// A settings change is one transaction on one connection: <see cref="EnsureSettings"/> (so that there is a row to
/// lock), <see cref="LockSettings"/> (<c>FOR UPDATE</c>: concurrent changes queue up behind it, each reading what the
/// previous one wrote, so none is lost), the change and its validation in the caller, then <see cref="WriteSettings"/>,
/// which bumps the version and notifies the schema's <see cref="StorageSql.SettingsChannel"/> in the same transaction: the nodes
/// hear of it only once it is committed. A change that does not validate rolls back, the inserted row with it.
/// </remarks>
internal sealed class ClusterSql
{
    /// <summary>The settings columns, in the order <c>ReadSettings</c> reads them.</summary>
    private const string SettingsColumns = "s.workers_per_node, s.max_running, s.max_running_per_key, s.starts_per_second, s.start_burst, s.version, s.updated_at, s.updated_by, "
        + PauseColumns + ", " + FairShareColumns;

    /// <summary>The queue's fair share, after the pause (ordinals 13 to 18, see <see cref="ClusterSettingsRules.Read"/>): on or off, the default weight, the weights (JSON), the per-tenant bound, the per-tenant start rate and burst.</summary>
    private const string FairShareColumns = "s.fair_share, s.tenant_default_weight, s.tenant_weights::text, s.max_running_per_tenant, s.tenant_starts_per_second, s.tenant_start_burst";

    /// <summary>
    /// The queue's pause, after the settings (ordinals 8 to 12, see <see cref="ReadPause"/>): its reason, since, until
    /// and by, and the seconds left until its end on the database's clock (null: no end).
    /// </summary>
    private const string PauseColumns = "s.paused_reason, s.paused_at, s.paused_until, s.paused_by, extract(epoch FROM s.paused_until - now())::double precision";

    public ClusterSql(StorageSql sql)
    {
        var settings = sql.QueueSettings;
        var nodes = sql.Nodes;

        ReadSettings = $"SELECT {SettingsColumns} FROM {settings} s WHERE s.queue = $1";

        EnsureSettings = $"INSERT INTO {settings} (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING";

        LockSettings = $"SELECT {SettingsColumns} FROM {settings} s WHERE s.queue = $1 FOR UPDATE";

        // $2..$6 the new values, $7 who changed them, $8 the channel, $9..$12 the fair share (on, default weight,
        // weights as JSON, per-tenant bound), $13..$14 the per-tenant start rate and burst (the tenants' buckets, rows of
        // tenant_tokens, are the fair claim's to keep: a changed rate or burst binds from the next claim). The bucket's state (tokens, tokens_at) is the
        // claim's to keep, except that the stored tokens never exceed the new burst (start_burst, or its default
        // ceil(rate), at least 1): a lowered burst binds at once, in the row too, not only at the next claim.
        WriteSettings = $"""
            WITH written AS (
                UPDATE {settings} SET workers_per_node = $2, max_running = $3, max_running_per_key = $4, starts_per_second = $5,
                    start_burst = $6, tokens = least(tokens, coalesce($6::double precision, greatest(ceil($5::double precision), 1))),
                    fair_share = $9, tenant_default_weight = $10, tenant_weights = $11::jsonb, max_running_per_tenant = $12,
                    tenant_starts_per_second = $13, tenant_start_burst = $14,
                    version = version + 1, updated_at = now(), updated_by = $7
                WHERE queue = $1
                RETURNING version, updated_at),
            notified AS (SELECT pg_notify($8, $1) FROM written)
            SELECT version, updated_at, (SELECT count(*) FROM notified) FROM written
            """;

        // The heartbeat: this node's row written (inserted, or updated in place) with expires_at = now() + $7, and, in
        // the same round trip, the queue's settings (a row of nulls when there is none: defaults), so a node that
        // missed a notification finds the change by its version at its next beat. Parameters: $1 queue, $2 node,
        // $3 host, $4 process id, $5 version, $6 started at, $7 time to live, $8 worker count, $9 in flight,
        // $10 completed, $11 failed, $12 waiting for a permit, $13 oldest permit wait (seconds), $14 starts in the last
        // second, $15 settings version applied, $16 pinned locally, $17 handlers running.
        Beat = $"""
            WITH beat AS (
                INSERT INTO {nodes} AS n (queue, node, host, process_id, version, started_at, last_seen, expires_at, worker_count, in_flight,
                    completed, failed, waiting_for_permit, oldest_permit_wait, starts_last_second, settings_version, pinned_locally, handlers_running)
                VALUES ($1, $2, $3, $4, $5, $6, now(), now() + $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
                ON CONFLICT (queue, node) DO UPDATE SET
                    host = excluded.host, process_id = excluded.process_id, version = excluded.version, started_at = excluded.started_at,
                    last_seen = excluded.last_seen, expires_at = excluded.expires_at, worker_count = excluded.worker_count,
                    in_flight = excluded.in_flight, completed = excluded.completed, failed = excluded.failed,
                    waiting_for_permit = excluded.waiting_for_permit, oldest_permit_wait = excluded.oldest_permit_wait,
                    starts_last_second = excluded.starts_last_second, settings_version = excluded.settings_version,
                    pinned_locally = excluded.pinned_locally, handlers_running = excluded.handlers_running
                RETURNING 1)
            SELECT {SettingsColumns}, (SELECT count(*) FROM beat)
            FROM (SELECT 1) AS one LEFT JOIN {settings} s ON s.queue = $1
            """;

        // A fleet-wide pause of the queue, written like a settings change (after EnsureSettings, in its transaction):
        // the version bumped and the nodes notified on commit. $2 reason, $3 duration in ms (null: until resumed), $4 by,
        // $5 the settings channel. Returns since, until and the new version.
        PauseQueue = $"""
            WITH written AS (
                UPDATE {settings} SET paused_reason = $2, paused_at = now(),
                    paused_until = now() + $3::double precision * interval '1 millisecond', paused_by = $4,
                    version = version + 1, updated_at = now(), updated_by = $4
                WHERE queue = $1
                RETURNING paused_at, paused_until, version),
            notified AS (SELECT pg_notify($5, $1) FROM written)
            SELECT paused_at, paused_until, version, (SELECT count(*) FROM notified) FROM written
            """;

        // Ends the queue's pause (a row without one is left as it is): the version bumped, the nodes notified on both
        // channels ($3 settings, $4 wake-up). $2 by. Returns the pause that was there (reason, since, until, by) and
        // whether it was still in force.
        ResumeQueue = $"""
            WITH old AS (
                SELECT queue, paused_reason, paused_at, paused_until, paused_by FROM {settings}
                WHERE queue = $1 AND paused_reason IS NOT NULL FOR UPDATE),
            written AS (
                UPDATE {settings} s SET paused_reason = NULL, paused_at = NULL, paused_until = NULL, paused_by = NULL,
                    version = s.version + 1, updated_at = now(), updated_by = $2
                FROM old WHERE s.queue = old.queue
                RETURNING old.paused_reason, old.paused_at, old.paused_until, old.paused_by, (old.paused_until IS NULL OR old.paused_until > now()) AS in_force),
            notified AS (SELECT pg_notify($3, $1), pg_notify($4, $1) FROM written)
            SELECT paused_reason, paused_at, paused_until, paused_by, in_force, (SELECT count(*) FROM notified) FROM written
            """;

        // A key's pause: the queue's ended key pauses deleted, then the key's row written (replaced if it was paused)
        // unless $6 keys are already paused ($6: the most a queue may have). $2 key, $3 reason, $4 duration in ms (null:
        // until resumed), $5 by. Returns since and until, or no row when the limit was reached.
        PauseKey = $"""
            WITH expired AS (DELETE FROM {sql.PausedKeys} WHERE queue = $1 AND paused_until <= now() RETURNING 1),
            written AS (
                INSERT INTO {sql.PausedKeys} AS p (queue, ordering_key, reason, paused_at, paused_until, paused_by)
                SELECT $1, $2, $3, now(), now() + $4::double precision * interval '1 millisecond', $5
                WHERE EXISTS (SELECT 1 FROM {sql.PausedKeys} WHERE queue = $1 AND ordering_key = $2)
                   OR (SELECT count(*) FROM {sql.PausedKeys} WHERE queue = $1 AND (paused_until IS NULL OR paused_until > now())) < $6
                ON CONFLICT (queue, ordering_key) DO UPDATE SET reason = excluded.reason, paused_at = excluded.paused_at,
                    paused_until = excluded.paused_until, paused_by = excluded.paused_by
                RETURNING paused_at, paused_until)
            SELECT paused_at, paused_until, (SELECT count(*) FROM expired) FROM written
            """;

        // Ends a key's pause and wakes the nodes ($3 the wake-up channel). Returns the pause that was there and whether
        // it was still in force.
        ResumeKey = $"""
            WITH deleted AS (
                DELETE FROM {sql.PausedKeys} WHERE queue = $1 AND ordering_key = $2
                RETURNING reason, paused_at, paused_until, paused_by, (paused_until IS NULL OR paused_until > now()) AS in_force),
            notified AS (SELECT pg_notify($3, $1) FROM deleted)
            SELECT reason, paused_at, paused_until, paused_by, in_force, (SELECT count(*) FROM notified) FROM deleted
            """;

        // The pauses in force: the queue's (one row or none), then its paused keys by key (at most $2), each with the
        // database's clock.
        ReadPauses = $"""
            SELECT NULL::text AS ordering_key, paused_reason, paused_at, paused_until, paused_by, now() FROM {settings}
            WHERE queue = $1 AND paused_reason IS NOT NULL AND (paused_until IS NULL OR paused_until > now())
            UNION ALL
            (SELECT ordering_key, reason, paused_at, paused_until, paused_by, now() FROM {sql.PausedKeys}
             WHERE queue = $1 AND (paused_until IS NULL OR paused_until > now())
             ORDER BY ordering_key COLLATE "C" LIMIT $2)
            """;

        // A node that stops cleanly leaves at once.
        Leave = $"DELETE FROM {nodes} WHERE queue = $1 AND node = $2";

        // Cleanup: rows of nodes that stopped beating (killed, cut off) once they expired. A live node whose row goes
        // (it was late) writes it again at its next beat.
        DeleteExpiredNodes = $"DELETE FROM {nodes} WHERE queue = $1 AND expires_at < now()";

        // The live nodes, by name (byte order, whatever the database's collation).
        LiveNodes = $"""
            SELECT node, host, process_id, version, started_at, last_seen, worker_count, in_flight, completed, failed,
                   settings_version, pinned_locally, waiting_for_permit, oldest_permit_wait, starts_last_second,
                   granted_running, running_in_use, handlers_running
            FROM {nodes}
            WHERE queue = $1 AND expires_at > now()
            ORDER BY node COLLATE "C"
            """;
    }

    public string ReadSettings { get; }

    public string EnsureSettings { get; }

    public string LockSettings { get; }

    public string WriteSettings { get; }

    public string Beat { get; }

    public string Leave { get; }

    public string PauseQueue { get; }

    public string ResumeQueue { get; }

    public string PauseKey { get; }

    public string ResumeKey { get; }

    public string ReadPauses { get; }

    /// <summary>
    /// Reads the queue's pause from the columns <see cref="PauseColumns"/> at <paramref name="first"/>: the pause in
    /// force (none once its end has passed on the database's clock) and the time left until its end.
    /// </summary>
    public static (WorkQueuePause? Pause, TimeSpan? Left) ReadPause(NpgsqlDataReader reader, int first = 8)
    {
        if (reader.IsDBNull(first))
        {
            return (null, null);
        }

        TimeSpan? left = reader.IsDBNull(first + 4) ? null : TimeSpan.FromSeconds(reader.GetDouble(first + 4));
        if (left is { } l && l <= TimeSpan.Zero)
        {
            return (null, null); // ended by itself
        }

        return (new WorkQueuePause
        {
            Reason = reader.GetString(first),
            Since = reader.IsDBNull(first + 1) ? default : reader.GetFieldValue<DateTimeOffset>(first + 1),
            Until = reader.IsDBNull(first + 2) ? null : reader.GetFieldValue<DateTimeOffset>(first + 2),
            By = reader.IsDBNull(first + 3) ? null : reader.GetString(first + 3),
        }, left);
    }

    public string DeleteExpiredNodes { get; }

    public string LiveNodes { get; }
}
