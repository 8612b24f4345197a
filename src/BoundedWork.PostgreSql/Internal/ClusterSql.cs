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
    private const string SettingsColumns = "s.workers_per_node, s.max_running, s.max_running_per_key, s.starts_per_second, s.start_burst, s.version, s.updated_at, s.updated_by";

    public ClusterSql(StorageSql sql)
    {
        var settings = sql.QueueSettings;
        var nodes = sql.Nodes;

        ReadSettings = $"SELECT {SettingsColumns} FROM {settings} s WHERE s.queue = $1";

        EnsureSettings = $"INSERT INTO {settings} (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING";

        LockSettings = $"SELECT {SettingsColumns} FROM {settings} s WHERE s.queue = $1 FOR UPDATE";

        // $2..$6 the new values, $7 who changed them, $8 the channel. The bucket's state (tokens, tokens_at) is the
        // claim's to keep, except that the stored tokens never exceed the new burst (start_burst, or its default
        // ceil(rate), at least 1): a lowered burst binds at once, in the row too, not only at the next claim.
        WriteSettings = $"""
            WITH written AS (
                UPDATE {settings} SET workers_per_node = $2, max_running = $3, max_running_per_key = $4, starts_per_second = $5,
                    start_burst = $6, tokens = least(tokens, coalesce($6::double precision, greatest(ceil($5::double precision), 1))),
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

    public string DeleteExpiredNodes { get; }

    public string LiveNodes { get; }
}
