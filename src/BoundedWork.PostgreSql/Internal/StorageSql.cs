namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Every statement the PostgreSQL storage runs, for one schema. One table holds the items of every queue; a row's
/// <c>state</c> is its place in the life cycle:
/// <c>idempotency_key</c>, when a producer gave one, is unique per queue among the rows that exist: a second enqueue
/// with the key stores nothing until cleanup deletes the first row.
/// <list type="bullet">
/// <item><description>0 ready: waits for <c>run_at</c> (now, or a stored retry's backoff);</description></item>
/// <item><description>1 running: claimed by the node <c>lease_owner</c> until <c>lease_until</c>, which the node's heartbeat extends;</description></item>
/// <item><description>2 completed and 3 dead letter: kept until their retention ends.</description></item>
/// </list>
/// <c>attempts</c> counts deliveries: a claim adds one, a delivery handed back unrun (shutdown) takes it back. A node
/// finishes a delivery only while no later delivery exists (<c>id</c> and <c>attempts</c> match, state running, or
/// ready again after its lease expired), so a node whose item was claimed again cannot overwrite the newer
/// delivery's outcome.
/// </summary>
internal sealed class StorageSql
{
    /// <summary>The channel of the wake-up notifications; the payload is the queue's name.</summary>
    public const string NotifyChannel = "boundedwork";

    public const short Completed = 2;
    public const short Dead = 3;

    public StorageSql(string schema)
    {
        var s = "\"" + schema + "\"";
        Schema = schema;
        Items = s + ".items";
        SchemaVersion = s + ".schema_version";

        Migrations =
        [
            // Version 1: the items table and the indexes each statement below is written for.
            $"""
            CREATE TABLE {Items} (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                queue text NOT NULL,
                state smallint NOT NULL DEFAULT 0,
                payload jsonb NOT NULL,
                ordering_key text,
                enqueued_at timestamptz NOT NULL DEFAULT now(),
                run_at timestamptz NOT NULL DEFAULT now(),
                attempts integer NOT NULL DEFAULT 0,
                lease_owner text,
                lease_until timestamptz,
                finished_at timestamptz,
                last_error text
            ) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
            CREATE INDEX items_ready ON {Items} (queue, id) WHERE state = 0;
            CREATE INDEX items_running ON {Items} (queue, lease_until) WHERE state = 1;
            CREATE INDEX items_ordered ON {Items} (queue, ordering_key, id) WHERE state IN (0, 1) AND ordering_key IS NOT NULL;
            CREATE INDEX items_finished ON {Items} (queue, state, finished_at) WHERE state IN (2, 3);
            """,

            // Version 2: the producers' idempotency keys. A nullable column without a default is added without
            // rewriting the table; the unique index holds only the rows that have a key.
            $"""
            ALTER TABLE {Items} ADD COLUMN idempotency_key text;
            CREATE UNIQUE INDEX items_idempotency ON {Items} (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;
            """,
        ];

        // The insert and the wake-up in one statement: inside the caller's transaction, the notification is sent when
        // it commits. $4 is the channel.
        Enqueue = $"""
            WITH inserted AS (INSERT INTO {Items} (queue, payload, ordering_key) VALUES ($1, $2, $3) RETURNING id)
            SELECT id, pg_notify($4, $1) FROM inserted
            """;

        // The same with an idempotency key ($5): nothing is stored (and no one woken) when a row of the queue holds the
        // key. Returns the id of the row that holds it and whether this statement inserted it. A row that holds the key
        // but was committed after this statement's snapshot was taken (another transaction inserted the key; the
        // insert waited for it to commit) is not visible here: the id is then null, and the statement runs again.
        EnqueueIdempotent = $"""
            WITH inserted AS (
                INSERT INTO {Items} (queue, payload, ordering_key, idempotency_key) VALUES ($1, $2, $3, $5)
                ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id),
            notified AS (SELECT pg_notify($4, $1) FROM inserted)
            SELECT coalesce((SELECT id FROM inserted), (SELECT id FROM {Items} WHERE queue = $1 AND idempotency_key = $5)),
                   EXISTS (SELECT 1 FROM inserted),
                   (SELECT count(*) FROM notified)
            """;

        // The oldest ready items of the queue, skipping rows another node is claiming right now, and, for ordered
        // items, every item whose key has an older item that is not finished (ready, scheduled or running anywhere).
        Claim = $"""
            WITH next AS (
                SELECT c.id FROM {Items} c
                WHERE c.queue = $1 AND c.state = 0 AND c.run_at <= now()
                  AND (c.ordering_key IS NULL OR NOT EXISTS (
                      SELECT 1 FROM {Items} e
                      WHERE e.queue = c.queue AND e.ordering_key = c.ordering_key AND e.state IN (0, 1) AND e.id < c.id))
                ORDER BY c.id
                LIMIT $2
                FOR UPDATE SKIP LOCKED)
            UPDATE {Items} i SET state = 1, attempts = i.attempts + 1, lease_owner = $3, lease_until = now() + $4
            FROM next WHERE i.id = next.id
            RETURNING i.id, i.payload::text, i.attempts, i.enqueued_at, i.ordering_key IS NOT NULL
            """;

        Heartbeat = $"UPDATE {Items} SET lease_until = now() + $3 WHERE queue = $1 AND state = 1 AND lease_owner = $2";

        // Claims whose node stopped renewing its lease (crashed, hung, cut off) go back to ready; after as many
        // deliveries as the queue allows they become dead letters instead, so an item that kills nodes stops.
        ReapExpired = $"""
            UPDATE {Items} SET
                state = CASE WHEN attempts >= $2 THEN 3 ELSE 0 END,
                finished_at = CASE WHEN attempts >= $2 THEN now() END,
                last_error = CASE WHEN attempts >= $2 THEN 'lease of ' || lease_owner || ' expired on delivery ' || attempts ELSE last_error END,
                run_at = now(), lease_owner = NULL, lease_until = NULL
            WHERE queue = $1 AND state = 1 AND lease_until < now()
            RETURNING id, state, payload::text, attempts, enqueued_at, last_error
            """;

        // Every outcome kind of a batch in one statement (one round trip, one transaction), then one wake-up for every
        // node. Each kind takes the ids and attempts of its deliveries (an outcome lands only on its own delivery: the
        // row's attempts match and no later claim exists; a completion, retry or dead letter also lands on a row whose
        // lease expired and which went back to ready without being claimed again). A release (the delivery never ran)
        // makes the row ready at once and does not count the delivery. One statement, not a batch: Npgsql runs
        // synchronous batches with a ThreadPool task, and these writes must go on while the pool is starved.
        // $1/$2 completed, $3/$4 released, $5/$6 retried with $7 delays (ms) and $8 errors, $9/$10 dead with $11 errors,
        // $12 the channel, $13 the queue, $14 whether to wake the other nodes (see OutcomeWriter).
        WriteOutcomes = OutcomesStatement($"""
            UPDATE {Items} i SET state = 2, finished_at = now(), lease_owner = NULL, lease_until = NULL
            FROM unnest($1::bigint[], $2::integer[]) AS d(id, attempts)
            WHERE i.id = d.id AND i.attempts = d.attempts AND i.state IN (0, 1)
            RETURNING 1
            """);
        WriteOutcomesDeletingCompleted = OutcomesStatement($"""
            DELETE FROM {Items} i USING unnest($1::bigint[], $2::integer[]) AS d(id, attempts)
            WHERE i.id = d.id AND i.attempts = d.attempts AND i.state IN (0, 1)
            RETURNING 1
            """);

        // Each count through the partial index of its state, and the oldest ready item by id (ids follow enqueue
        // order), so reading the statistics costs what the unfinished items cost, not a scan of the whole table. The
        // completed count is an index-only count over the rows kept for their retention.
        Statistics = $"""
            SELECT (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 0 AND run_at <= now()),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 0 AND run_at > now()),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 1),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 3),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 2),
                   coalesce(extract(epoch FROM now() - (
                       SELECT enqueued_at FROM {Items} WHERE queue = $1 AND state = 0 AND run_at <= now() ORDER BY id LIMIT 1)), 0)::double precision
            """;

        // $2 state, $3 retention; deletes at most $4 rows, oldest first, skipping rows another node is deleting.
        Cleanup = $"""
            DELETE FROM {Items} WHERE id IN (
                SELECT id FROM {Items} WHERE queue = $1 AND state = $2 AND finished_at < now() - $3
                ORDER BY finished_at LIMIT $4 FOR UPDATE SKIP LOCKED)
            """;
    }

    public string Schema { get; }

    public string Items { get; }

    public string SchemaVersion { get; }

    /// <summary>Gets the schema's versions in order: element <c>i</c> migrates version <c>i</c> to <c>i + 1</c>.</summary>
    public IReadOnlyList<string> Migrations { get; }

    public string Enqueue { get; }

    public string EnqueueIdempotent { get; }

    public string Claim { get; }

    public string Heartbeat { get; }

    public string ReapExpired { get; }

    public string WriteOutcomes { get; }

    public string WriteOutcomesDeletingCompleted { get; }

    public string Statistics { get; }

    public string Cleanup { get; }

    private string OutcomesStatement(string completed) => $"""
        WITH done AS (
            {completed}),
        released AS (
            UPDATE {Items} i SET state = 0, attempts = i.attempts - 1, run_at = now(), lease_owner = NULL, lease_until = NULL
            FROM unnest($3::bigint[], $4::integer[]) AS d(id, attempts)
            WHERE i.id = d.id AND i.attempts = d.attempts AND i.state = 1
            RETURNING 1),
        retried AS (
            UPDATE {Items} i SET state = 0, run_at = now() + d.delay_ms * interval '1 millisecond', last_error = d.error,
                lease_owner = NULL, lease_until = NULL
            FROM unnest($5::bigint[], $6::integer[], $7::double precision[], $8::text[]) AS d(id, attempts, delay_ms, error)
            WHERE i.id = d.id AND i.attempts = d.attempts AND i.state IN (0, 1)
            RETURNING 1),
        dead AS (
            UPDATE {Items} i SET state = 3, finished_at = now(), last_error = d.error, lease_owner = NULL, lease_until = NULL
            FROM unnest($9::bigint[], $10::integer[], $11::text[]) AS d(id, attempts, error)
            WHERE i.id = d.id AND i.attempts = d.attempts AND i.state IN (0, 1)
            RETURNING 1),
        woken AS (SELECT pg_notify($12, $13) WHERE $14)
        SELECT (SELECT count(*) FROM done) + (SELECT count(*) FROM released) + (SELECT count(*) FROM retried) + (SELECT count(*) FROM dead),
               (SELECT count(*) FROM woken)
        """;
}
