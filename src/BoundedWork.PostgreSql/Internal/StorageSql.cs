namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Every statement the PostgreSQL storage runs, for one schema. One table holds the items of every queue; a row's
/// <c>state</c> is its place in the life cycle:
/// <list type="bullet">
/// <item><description>5 scheduled: waits for <c>run_at</c> (a delayed enqueue, or a stored retry's backoff); the claim statement makes it ready once that time has come;</description></item>
/// <item><description>0 ready: claimed highest <c>priority</c> first, then by <c>run_at</c> (when it became due), then by <c>id</c> (enqueue order);</description></item>
/// <item><description>1 running: claimed by the node <c>lease_owner</c> until <c>lease_until</c>, which the node's heartbeat extends;
/// <c>cancel_requested_at</c> set when someone asked to cancel it while it ran;</description></item>
/// <item><description>2 completed, 3 dead letter and 4 cancelled: finished, kept until their retention ends.</description></item>
/// </list>
/// <c>attempts</c> counts deliveries: a claim adds one, a delivery handed back unrun (shutdown) takes it back. The
/// retries an item has left are counted from <c>attempt_base</c> (the attempts it had when a dead letter was requeued;
/// zero otherwise), so a requeued item gets the queue's retries again while its attempt numbers go on. <c>delivery</c>
/// is the token of the row's last claim: every claim sets a new one (and a requeue of a dead letter), nothing takes it
/// back. A node finishes or renews a delivery only while it is still its own (<c>id</c> and <c>delivery</c> match and
/// the row is running with the node as <c>lease_owner</c>, or, for a final outcome or a retry, ready again after the
/// reaper took its expired lease back), so an outcome written again after a lost answer, or by a node whose item was
/// claimed again, cannot touch the newer delivery.
/// <c>idempotency_key</c>, when a producer gave one, is unique per queue among the rows that exist: a second enqueue
/// with the key stores nothing until cleanup deletes the first row. <c>traceparent</c> and <c>tracestate</c> are the
/// producer's W3C trace context at enqueue; nothing changes them afterwards.
/// </summary>
/// <remarks>
/// <b>Plan shapes.</b> The table grows and shrinks by orders of magnitude between two analyzes (a bulk insert, a drain),
/// and PostgreSQL keeps a prepared statement's generic plan, made with the statistics of the moment, until an analyze.
/// A plan made while the table was small (a sequential scan, a hash join over the whole table: the cheapest then)
/// would read all of it on every call once it is large. So every statement here leaves the planner one good path:
/// rows are reached by id through the primary key (<c>id = ANY(array)</c>, never a join the planner could turn around),
/// or through the partial index of their state, whose predicate the statement's conditions imply; key checks stay
/// per-row index probes (<c>OFFSET 0</c> keeps a <c>NOT EXISTS</c> from becoming a join); and the queue's sessions turn
/// sequential scans off, the one path left besides those.
/// <para>
/// <b>Key order.</b> The claims decide a keyed item's turn by id: no older unfinished item of its key. That is sound
/// only if an item's older items of its key are visible whenever it is, that is if a key's ids follow the commit order
/// of their producers. An id is drawn at insert, not at commit, so two producers of one key in overlapping transactions
/// (the caller's own, or two enqueues at once) could commit the newer id first; a claim would take it without seeing
/// the older one, and then the older one too once committed: out of order, and (with a claim in flight) more than the
/// key's limit running. So every enqueue of a keyed item first takes a transaction-scoped advisory lock on (schema,
/// queue, key), held until its transaction ends, and only then draws the row's id: the inserted row is built from the
/// row of the subquery that takes the lock, so the executor cannot draw the id (a default of the row) before that
/// subquery has produced its row (the subquery is not flattened: its output calls a volatile function). Producers of
/// one key then run their insert-to-commit spans one after another: a key's ids follow its commit order, and a
/// producer that draws an id has seen every earlier producer of the key commit (or roll back). Unkeyed items take no
/// lock. A bulk enqueue takes its keys' locks in lock-id order. A transaction that enqueues keys k1 then k2 while
/// another enqueues k2 then k1 can deadlock; PostgreSQL detects it and aborts one of them.
/// </para>
/// </remarks>
internal sealed class StorageSql
{
    /// <summary>The longest channel name PostgreSQL takes, in bytes (an identifier: <c>NAMEDATALEN</c> - 1).</summary>
    public const int MaxChannelLength = 63;

    public const short Ready = 0;
    public const short Running = 1;
    public const short Completed = 2;
    public const short Dead = 3;
    public const short Cancelled = 4;
    public const short Scheduled = 5;

    /// <summary>The most scheduled rows one claim statement makes ready; the claim loop runs again at once while there are more.</summary>
    public const int MaxPromotions = 1000;

    public StorageSql(string schema)
    {
        var s = "\"" + schema + "\"";
        Schema = schema;
        Items = s + ".items";
        SchemaVersion = s + ".schema_version";
        QueueSettings = s + ".queue_settings";
        Nodes = s + ".nodes";
        PausedKeys = s + ".paused_keys";
        TenantTokens = s + ".tenant_tokens";
        TenantVtime = s + ".tenant_vtime";
        QueueVtime = s + ".queue_vtime";
        NotifyChannel = ChannelName("boundedwork", schema);
        CancelChannel = ChannelName("boundedwork_cancel", schema);
        SettingsChannel = ChannelName("boundedwork_settings", schema);

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

            // Version 3: scheduled items (state 5) out of the ready index, priorities, trace context, cancellation
            // (state 4), and requeued dead letters. The columns are added without rewriting the table (a constant
            // default, or none); stored retries waiting for their time move to state 5; the partial indexes whose
            // states or order changed are built again.
            $"""
            ALTER TABLE {Items}
                ADD COLUMN priority smallint NOT NULL DEFAULT 0,
                ADD COLUMN traceparent text,
                ADD COLUMN tracestate text,
                ADD COLUMN attempt_base integer NOT NULL DEFAULT 0,
                ADD COLUMN cancel_requested_at timestamptz;
            UPDATE {Items} SET state = 5 WHERE state = 0 AND run_at > now();
            DROP INDEX {s}.items_ready;
            CREATE INDEX items_ready ON {Items} (queue, priority DESC, run_at, id) WHERE state = 0;
            CREATE INDEX items_scheduled ON {Items} (queue, run_at) WHERE state = 5;
            DROP INDEX {s}.items_ordered;
            CREATE INDEX items_ordered ON {Items} (queue, ordering_key, id) WHERE state IN (0, 1, 5) AND ordering_key IS NOT NULL;
            CREATE INDEX items_ordered_running ON {Items} (queue, ordering_key) WHERE state = 1 AND ordering_key IS NOT NULL;
            DROP INDEX {s}.items_finished;
            CREATE INDEX items_finished ON {Items} (queue, state, finished_at) WHERE state IN (2, 3, 4);
            """,

            // Version 4: the cluster. A queue's fleet-wide settings (the truth for every node, read at start and on
            // each notification; the limits are read by the claim statement itself), with the state of its shared
            // start-rate bucket; and the consuming nodes, one row per node and queue, written by its heartbeat and
            // left out once expires_at has passed.
            $"""
            CREATE TABLE {QueueSettings} (
                queue text PRIMARY KEY,
                workers_per_node integer CHECK (workers_per_node > 0),
                max_running integer CHECK (max_running > 0),
                max_running_per_key integer NOT NULL DEFAULT 1 CHECK (max_running_per_key > 0),
                starts_per_second double precision CHECK (starts_per_second > 0),
                start_burst integer CHECK (start_burst > 0),
                tokens double precision,
                tokens_at timestamptz,
                version bigint NOT NULL DEFAULT 0,
                updated_at timestamptz,
                updated_by text
            );
            CREATE TABLE {Nodes} (
                queue text NOT NULL,
                node text NOT NULL,
                host text NOT NULL,
                process_id integer NOT NULL,
                version text NOT NULL,
                started_at timestamptz NOT NULL DEFAULT now(),
                last_seen timestamptz NOT NULL DEFAULT now(),
                expires_at timestamptz NOT NULL,
                worker_count integer NOT NULL DEFAULT 0,
                in_flight bigint NOT NULL DEFAULT 0,
                completed bigint NOT NULL DEFAULT 0,
                failed bigint NOT NULL DEFAULT 0,
                waiting_for_permit bigint NOT NULL DEFAULT 0,
                oldest_permit_wait double precision NOT NULL DEFAULT 0,
                starts_last_second double precision NOT NULL DEFAULT 0,
                settings_version bigint NOT NULL DEFAULT 0,
                pinned_locally boolean NOT NULL DEFAULT false,
                PRIMARY KEY (queue, node)
            );
            """,

            // Version 5: cluster permits leased to nodes (see ClusterPermits), and the indexes of the per-key claim
            // (KeyedClaimSql). Each node's row holds its grant of the queue's running permits and its share of the start
            // rate, written only by the node itself in a short transaction that locks the queue's settings row; its
            // lease_owner names the items it claims, so the running rows of nodes without a live grant can be counted.
            // The columns have constant defaults: no rewrite.
            $"""
            ALTER TABLE {Nodes}
                ADD COLUMN lease_owner text,
                ADD COLUMN permit_demand integer NOT NULL DEFAULT 0,
                ADD COLUMN granted_running integer NOT NULL DEFAULT 0,
                ADD COLUMN running_in_use integer NOT NULL DEFAULT 0,
                ADD COLUMN granted_rate double precision NOT NULL DEFAULT 0,
                ADD COLUMN granted_burst integer NOT NULL DEFAULT 0;
            """ + KeyedClaimSql.Migration(Items),

            // Version 6: the delivery token. Every claim sets it to a new value (one more than the row's last), and
            // nothing else does but a requeue of a dead letter, so (id, delivery) names one claim of an item, which
            // attempts cannot (a release takes its attempt back, and the next claim has the same number). The outcome
            // statements and the heartbeat match it with the lease owner. A constant default: no rewrite.
            $"""
            ALTER TABLE {Items} ADD COLUMN delivery bigint NOT NULL DEFAULT 0;
            """,

            // Version 7: times no statement can count from. Earlier versions stored RunAt = default(DateTimeOffset) as
            // -infinity, which failed every statistics read and every claim that left such an item waiting; an
            // enqueue now stores the earliest time one microsecond later, and so does this repair of the rows stored
            // before (they keep their place: they still rank first of their priority). Through the ready and
            // scheduled indexes' states; a stored time of +infinity could not be written (the enqueue refuses it).
            $"""
            UPDATE {Items} SET run_at = '0001-01-01 00:00:00.000001+00' WHERE run_at = '-infinity' AND state IN (0, 1, 5);
            UPDATE {Items} SET enqueued_at = '0001-01-01 00:00:00.000001+00' WHERE enqueued_at = '-infinity';
            """,

            // Version 8: the handlers each node runs now (of its items in state running, those whose handler has started
            // and not ended; the rest are held in its reserve or have their outcome being written), written by its
            // heartbeat. A constant default: no rewrite.
            $"""
            ALTER TABLE {Nodes} ADD COLUMN handlers_running integer NOT NULL DEFAULT 0;
            """,

            // Version 9: durable recurring schedules (see Schedules/ScheduleSql): one row per schedule of the schema,
            // its next tick advanced in the transaction that enqueues the tick, so each tick is enqueued once.
            $"""
            CREATE TABLE {s}.schedules (
                name text PRIMARY KEY,
                queue text NOT NULL,
                cron text,
                interval_ms bigint,
                time_zone text NOT NULL DEFAULT 'UTC',
                missed_policy smallint NOT NULL DEFAULT 0,
                max_catch_up integer NOT NULL DEFAULT 10,
                misfire_ms bigint NOT NULL DEFAULT 60000,
                paused boolean NOT NULL DEFAULT false,
                next_tick timestamptz,
                last_tick timestamptz,
                last_enqueued_at timestamptz,
                last_item_id bigint,
                enqueued bigint NOT NULL DEFAULT 0,
                missed bigint NOT NULL DEFAULT 0,
                code_definition text,
                changed_at timestamptz NOT NULL DEFAULT now(),
                changed_by text
            );
            CREATE INDEX schedules_due ON {s}.schedules (queue, next_tick) WHERE NOT paused;
            """,

            // Version 10: fleet-wide pauses. A queue's pause is four columns of its settings row (changed like its
            // limits: versioned, announced, audited); a key's pause is a row of paused_keys. The claims read both, so
            // a pause binds every claim that starts after it committed, on every node. Nullable columns: no rewrite.
            $"""
            ALTER TABLE {QueueSettings}
                ADD COLUMN paused_reason text,
                ADD COLUMN paused_at timestamptz,
                ADD COLUMN paused_until timestamptz,
                ADD COLUMN paused_by text;
            CREATE TABLE {PausedKeys} (
                queue text NOT NULL,
                ordering_key text NOT NULL,
                reason text NOT NULL,
                paused_at timestamptz NOT NULL DEFAULT now(),
                paused_until timestamptz,
                paused_by text,
                PRIMARY KEY (queue, ordering_key)
            );
            """,

            // Version 11: fair share across tenants (see FairClaimSql). An item's tenant (null: none), and two indexes
            // that hold only tenant items, so a queue without tenants writes no more index entries than before: the
            // ready items of each tenant in claim order (the fair claim's lanes, and the skip scan that finds the
            // tenants with ready items), and the running items of each tenant (the per-tenant count and bound). The
            // queue's fair-share settings are columns of its settings row, changed like its limits. Nullable columns or
            // constant defaults: no rewrite.
            $"""
            ALTER TABLE {Items} ADD COLUMN tenant text;
            CREATE INDEX items_ready_tenant ON {Items} (queue, tenant, priority DESC, run_at, id) WHERE state = 0 AND tenant IS NOT NULL;
            CREATE INDEX items_running_tenant ON {Items} (queue, tenant) WHERE state = 1 AND tenant IS NOT NULL;
            ALTER TABLE {QueueSettings}
                ADD COLUMN fair_share boolean NOT NULL DEFAULT false,
                ADD COLUMN tenant_default_weight integer NOT NULL DEFAULT 1 CHECK (tenant_default_weight > 0),
                ADD COLUMN tenant_weights jsonb,
                ADD COLUMN max_running_per_tenant integer CHECK (max_running_per_tenant > 0);
            """,

            // Version 12: a start rate per tenant (see FairClaimSql): two settings columns, and each tenant's token
            // bucket, a row written only by the fair claims of its queue (under their lock) when the tenant's items are
            // claimed. No row: a full bucket. Nullable columns and a new table: no rewrite.
            $"""
            ALTER TABLE {QueueSettings}
                ADD COLUMN tenant_starts_per_second double precision CHECK (tenant_starts_per_second > 0 AND tenant_starts_per_second < 'Infinity'),
                ADD COLUMN tenant_start_burst integer CHECK (tenant_start_burst > 0);
            CREATE TABLE {TenantTokens} (
                queue text NOT NULL,
                tenant text NOT NULL,
                tokens double precision NOT NULL,
                tokens_at timestamptz NOT NULL,
                PRIMARY KEY (queue, tenant)
            );
            """,

            // Version 13: fair share by service received (see FairClaimSql): each tenant's virtual time (its starts,
            // each 1 / its weight) and each queue's virtual clock, rows written only by the fair claims of the queue
            // (under their lock) and removed by its cleanup when they mean what no row means. New tables: no rewrite.
            $"""
            CREATE TABLE {TenantVtime} (
                queue text NOT NULL,
                tenant text NOT NULL,
                vtime double precision NOT NULL,
                PRIMARY KEY (queue, tenant)
            );
            CREATE TABLE {QueueVtime} (
                queue text PRIMARY KEY,
                vtime double precision NOT NULL
            );
            """,
        ];

        // An item's row from the enqueue's parameters: $1 queue, $2 payload, $3 ordering key, $4 priority, $5 run_at
        // (null: now plus $6), $6 delay, $7 traceparent, $8 tracestate, $9 tenant. Due now (or earlier): ready; later:
        // scheduled.
        const string Due = "coalesce($5::timestamptz, now() + $6::interval)";

        // The lock id of an ordering key of queue $1 in this schema, and the statement's call that takes its lock until
        // the transaction ends. Two keys whose ids collide only share a lock: their producers wait for each other.
        var seed = $"hashtextextended('{schema.Replace("'", "''", StringComparison.Ordinal)}.' || $1::text, 0)";
        string KeyLockId(string key) => $"hashtextextended({key}, {seed})";
        string KeyLock(string key) => $"pg_advisory_xact_lock({KeyLockId(key)})";
        _keyLockSeed = seed;

        // A keyed item's row is inserted only once its producer holds its key's lock (see KeyOrder in the remarks): the
        // subquery `locked` takes it (pg_advisory_xact_lock is strict: no key, no lock) and the inserted row is built
        // from the subquery's row (its queue), so the row's id, drawn with the row, is drawn after the lock is held.
        var insert = $"""
            INSERT INTO {Items} (queue, payload, ordering_key, priority, run_at, state, traceparent, tracestate, tenant)
            SELECT locked.queue, $2, $3, $4, {Due}, CASE WHEN {Due} > now() THEN 5 ELSE 0 END, $7, $8, $9
            FROM (SELECT $1::text AS queue, {KeyLock("$3::text")} AS held) locked
            """;

        // In the enqueuing node's own transaction: the insert alone; the node's notifier wakes the consumers once the
        // insert has committed (see Notifier).
        Enqueue = insert + " RETURNING id";

        // In the caller's transaction: the insert and the wake-up in one statement; the notification is sent when the
        // caller's transaction commits. $10 is the channel.
        EnqueueNotifying = $"""
            WITH inserted AS ({insert} RETURNING id)
            SELECT id, pg_notify($10, $1) FROM inserted
            """;

        // The same with an idempotency key ($10): nothing is stored (and no one woken) when a row of the queue holds the
        // key. Returns the id of the row that holds it and whether this statement inserted it. A row that holds the key
        // but was committed after this statement's snapshot was taken (another transaction inserted the key; the
        // insert waited for it to commit) is not visible here: the id is then null, and the statement runs again.
        // $11 says whether to notify (in the caller's transaction), $12 is the channel.
        EnqueueIdempotent = $"""
            WITH inserted AS (
                INSERT INTO {Items} (queue, payload, ordering_key, priority, run_at, state, traceparent, tracestate, tenant, idempotency_key)
                SELECT locked.queue, $2, $3, $4, {Due}, CASE WHEN {Due} > now() THEN 5 ELSE 0 END, $7, $8, $9, $10
                FROM (SELECT $1::text AS queue, {KeyLock("$3::text")} AS held) locked
                ON CONFLICT (queue, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id),
            notified AS (SELECT pg_notify($12, $1) FROM inserted WHERE $11)
            SELECT coalesce((SELECT id FROM inserted), (SELECT id FROM {Items} WHERE queue = $1 AND idempotency_key = $10)),
                   EXISTS (SELECT 1 FROM inserted),
                   (SELECT count(*) FROM notified)
            """;

        // Many items in one statement: $2 and $3 are arrays of payloads and ordering keys, one element per item; the
        // other parameters as for one item, shared by all. Rows are inserted in the arrays' order, so their ids
        // (returned in ascending order) follow the items' order. The locks of all the items' keys are taken first, in
        // the order of their lock ids (two bulk enqueues of overlapping keys take them in the same order: no deadlock),
        // by an aggregate every row is joined with, so before the first row's id is drawn. $9 the tenant of every item,
        // $10 says whether to notify (once), $11 is the channel.
        EnqueueMany = $"""
            WITH inserted AS (
                INSERT INTO {Items} (queue, payload, ordering_key, priority, run_at, state, traceparent, tracestate, tenant)
                SELECT $1, u.payload, u.ordering_key, $4, {Due}, CASE WHEN {Due} > now() THEN 5 ELSE 0 END, $7, $8, $9
                FROM (SELECT count(*) AS held FROM (
                          SELECT pg_advisory_xact_lock(k.lock_id) FROM (
                              SELECT DISTINCT {KeyLockId("key")} AS lock_id FROM unnest($3::text[]) AS key
                              WHERE key IS NOT NULL ORDER BY lock_id) k) taken) locked
                CROSS JOIN unnest($2::jsonb[], $3::text[]) WITH ORDINALITY AS u(payload, ordering_key, n)
                WHERE locked.held >= 0
                ORDER BY u.n
                RETURNING id),
            notified AS (SELECT pg_notify($11, $1) WHERE $10)
            SELECT coalesce(array_agg(id ORDER BY id), ARRAY[]::bigint[]), (SELECT count(*) FROM notified) FROM inserted
            """;

        // The settings version the claim checks: the node claims only under the settings its permits were granted for.
        var settingsVersion = _settingsVersion = $"coalesce((SELECT s.version FROM {QueueSettings} s WHERE s.queue = $1), 0)";

        // Nothing is claimed while the queue is paused fleet-wide (one probe of the settings' primary key), and no item
        // of a paused key (one probe of paused_keys per keyed candidate): see QueuePausedNow and KeyPausedNow.
        // First, scheduled items whose time has come become ready (at most MaxPromotions; they are claimed by the next
        // claim, as this statement's snapshot predates them). Then the ready items of the queue, highest priority
        // first, then by due time and enqueue order, skipping rows another node is claiming right now, and, for
        // ordered items, every item whose key has an older item that is not finished (ready, scheduled or running
        // anywhere) or a running item at all (a requeued dead letter is older than the items of its key that ran
        // meanwhile). Nothing is claimed unless the queue's settings version is still $5, the one the node's cluster
        // permits were granted under (one probe of the settings' primary key per statement): a change of the limits
        // binds every claim that starts after it committed. Two row types in one result, each with columns of its own (see
        // ClaimRows): the claimed rows (summary false; their key and delivery token last of the item's columns), and one
        // summary row (summary true, the item's columns null): how many scheduled items became ready, the seconds until
        // the next scheduled item is due (null if none), the settings version, and, of the first $6 ready items in claim
        // order (the node's idle capacity that its permits held back; zero: not counted), how many this claim did not
        // take and how long the oldest of them has waited since it became due. The summary is computed in the claim's own
        // snapshot (the promotions it made, the items it left), so it stays in the statement: no second round trip. Written for plans that stay good whatever
        // the statistics (see PlanShapes): rows are updated by id = ANY(ARRAY(...)), and the key checks stay index
        // probes per candidate (OFFSET 0 keeps PostgreSQL from turning them into joins).
        // The claim's CTEs (after its WITH), shared with ClaimCarrying, which puts the carried outcomes' CTEs before them.
        string ClaimCtes(string? carriedFirst) => $"""
            promoted AS (
                UPDATE {Items} SET state = 0 WHERE id = ANY(ARRAY(
                    SELECT id FROM {Items} WHERE queue = $1 AND state = 5 AND run_at <= now()
                    ORDER BY run_at LIMIT {MaxPromotions} FOR UPDATE SKIP LOCKED))
                RETURNING 1),
            next AS (
                SELECT c.id FROM {Items} c
                WHERE c.queue = $1 AND c.state = 0 AND c.run_at <= now(){carriedFirst}
                  AND (c.ordering_key IS NULL OR (
                      NOT EXISTS (
                          SELECT 1 FROM {Items} e
                          WHERE e.queue = c.queue AND e.ordering_key = c.ordering_key AND e.state IN (0, 1, 5) AND e.id < c.id
                          OFFSET 0)
                      AND NOT EXISTS (
                          SELECT 1 FROM {Items} r
                          WHERE r.queue = c.queue AND r.ordering_key = c.ordering_key AND r.state = 1
                          OFFSET 0)))
                  AND {settingsVersion} = $5::bigint
                  AND NOT {QueuePausedNow("$1")}
                  AND (c.ordering_key IS NULL OR NOT {KeyPausedNow("$1", "c.ordering_key")})
                ORDER BY c.priority DESC, c.run_at, c.id
                LIMIT $2
                FOR UPDATE SKIP LOCKED),
            {ClaimedPeekWaiting("next")}
            """;
        var claimCtes = ClaimCtes(carriedFirst: null);
        _claimCtesCarrying = recorded => ClaimCtes($"\n      AND ({recorded}) >= 0");
        Claim = "WITH " + claimCtes + "\n" + ClaimResult(settingsVersion);

        // Renews the leases of the deliveries this node holds ($4 ids, $5 their delivery tokens), and returns those of
        // its items someone asked to cancel (the listener normally hears of them at once; this catches a notification
        // missed while it reconnected). Only the deliveries it holds: a row leased to it by a claim or outcome whose
        // answer it never got (an orphan) is not renewed, and the reaper returns it to ready once its lease expires.
        Heartbeat = $"""
            WITH renewed AS (
                UPDATE {Items} i SET lease_until = now() + $3
                WHERE i.id = ANY($4::bigint[]) AND i.queue = $1 AND i.state = 1 AND i.lease_owner = $2
                  AND i.delivery = ($5::bigint[])[array_position($4::bigint[], i.id)]
                RETURNING i.id, i.cancel_requested_at)
            SELECT id FROM renewed WHERE cancel_requested_at IS NOT NULL
            """;

        // Claims whose node stopped renewing its lease (crashed, hung, cut off) go back to ready, keeping their place;
        // after as many deliveries as the queue allows they become dead letters instead, so an item that kills nodes
        // stops; one whose cancellation was asked is cancelled.
        ReapExpired = $"""
            UPDATE {Items} SET
                state = CASE WHEN cancel_requested_at IS NOT NULL THEN 4 WHEN attempts - attempt_base >= $2 THEN 3 ELSE 0 END,
                finished_at = CASE WHEN cancel_requested_at IS NOT NULL OR attempts - attempt_base >= $2 THEN now() END,
                last_error = CASE
                    WHEN cancel_requested_at IS NOT NULL THEN 'cancelled: the lease of ' || lease_owner || ' expired on delivery ' || attempts
                    WHEN attempts - attempt_base >= $2 THEN 'lease of ' || lease_owner || ' expired on delivery ' || attempts
                    ELSE last_error END,
                lease_owner = NULL, lease_until = NULL
            WHERE queue = $1 AND state = 1 AND lease_until < now()
            RETURNING id, state, payload::text, attempts, enqueued_at, last_error
            """;

        // Each count through the partial index of its state, and the earliest due time of a ready item (how long the
        // longest-waiting ready item has waited since it became due), index-only like the counts, so reading the
        // statistics costs what the unfinished items cost, not a scan of the whole table. The completed and cancelled
        // counts are index-only counts over the rows kept for their retention. Ready rows not yet due are only written
        // by nodes of an earlier version: counted as scheduled.
        Statistics = $"""
            SELECT (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 0 AND run_at <= now()),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 5)
                       + (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 0 AND run_at > now()),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 1),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 3),
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 2),
                   coalesce(extract(epoch FROM now() - (
                       SELECT min(run_at) FROM {Items} WHERE queue = $1 AND state = 0 AND run_at <= now())), 0)::double precision,
                   (SELECT count(*) FROM {Items} WHERE queue = $1 AND state = 4)
            """;

        // The busiest tenants of queue $1 by ready and running items, the first $2 each in a row of its own and the rest
        // in one row with a null tenant, busiest first. Each count is an index-only scan of the partial index that holds
        // only tenant items of its state (items_ready_tenant, items_running_tenant, schema version 11), grouped in the
        // index's order: it reads one index entry per ready or running tenant item, nothing of a queue without tenants.
        TenantStatistics = $"""
            WITH per AS (
                SELECT tenant, sum(ready)::bigint AS ready, sum(running)::bigint AS running FROM (
                    SELECT tenant, count(*) AS ready, 0::bigint AS running FROM {Items}
                    WHERE queue = $1 AND state = 0 AND tenant IS NOT NULL AND run_at <= now() GROUP BY tenant
                    UNION ALL
                    SELECT tenant, 0::bigint, count(*) FROM {Items}
                    WHERE queue = $1 AND state = 1 AND tenant IS NOT NULL GROUP BY tenant) counts
                GROUP BY tenant),
            ranked AS (SELECT tenant, ready, running, row_number() OVER (ORDER BY ready + running DESC, tenant) AS n FROM per),
            series AS (SELECT CASE WHEN n <= $2::integer THEN tenant END AS series, ready, running, n FROM ranked)
            SELECT series, sum(ready)::bigint, sum(running)::bigint FROM series GROUP BY series ORDER BY min(n)
            """;

        // Cancels item $2 of queue $1, whatever its state, under the row's lock (so a claim or an outcome racing with it
        // is either before or after, never half-seen): a ready or scheduled item is cancelled ($3 its last_error) and
        // wakes the nodes ($4) if it held an ordering key; a running item gets cancel_requested_at and a notification
        // on $5 (id:queue) to the node that runs it. Returns the state found (null: no such item in the queue).
        Cancel = $"""
            WITH target AS (
                SELECT id, state FROM {Items} WHERE queue = $1 AND id = $2 FOR UPDATE),
            cancelled AS (
                UPDATE {Items} i SET state = 4, finished_at = now(), last_error = $3
                WHERE i.queue = $1 AND i.id = $2 AND (SELECT state FROM target) IN (0, 5)
                RETURNING i.ordering_key IS NOT NULL AS ordered),
            requested AS (
                UPDATE {Items} i SET cancel_requested_at = coalesce(i.cancel_requested_at, now())
                WHERE i.queue = $1 AND i.id = $2 AND (SELECT state FROM target) = 1
                RETURNING i.id),
            woken AS (SELECT pg_notify($4, $1) FROM cancelled WHERE ordered),
            signalled AS (SELECT pg_notify($5, $2::text || ':' || $1) FROM requested)
            SELECT (SELECT state FROM target), (SELECT count(*) FROM woken), (SELECT count(*) FROM signalled)
            """;

        // The dead letters of queue $1 that a selection takes: $2 ids (null: all), dead at or after $3, before $4 (each
        // null for no bound). Served by items_finished (queue, state, finished_at).
        const string Selected = """
            queue = $1 AND state = 3
              AND ($2::bigint[] IS NULL OR id = ANY($2::bigint[]))
              AND ($3::timestamptz IS NULL OR finished_at >= $3::timestamptz)
              AND ($4::timestamptz IS NULL OR finished_at < $4::timestamptz)
            """;

        // A page of the dead letters of queue $1, the most recent first: dead at or after $2 and before $3 (each null for
        // no bound), after the cursor ($4 dead at, $5 id) when there is one, at most $6 rows (the caller asks for one
        // more than it shows, to know whether there is a next page).
        ListDeadLetters = $"""
            SELECT id, attempts, last_error, enqueued_at, finished_at, priority, ordering_key, traceparent, tracestate
            FROM {Items}
            WHERE queue = $1 AND state = 3
              AND ($2::timestamptz IS NULL OR finished_at >= $2::timestamptz)
              AND ($3::timestamptz IS NULL OR finished_at < $3::timestamptz)
              AND ($4::timestamptz IS NULL OR (finished_at, id) < ($4::timestamptz, $5::bigint))
            ORDER BY finished_at DESC, id DESC
            LIMIT $6
            """;

        // One dead letter with the first $3 characters of its payload and the payload's length.
        GetDeadLetter = $"""
            SELECT id, attempts, last_error, enqueued_at, finished_at, priority, ordering_key, traceparent, tracestate,
                   left(payload::text, $3), length(payload::text)
            FROM {Items} WHERE queue = $1 AND id = $2 AND state = 3
            """;

        // Requeue: ready now, as new deliveries (the retries left are counted from the attempts so far; a new delivery
        // token, so an outcome of the delivery that made it a dead letter, written again, does not land), keeping id,
        // payload, priority, key and trace context; then one wake-up ($5) for every node. A keyed dead letter becomes
        // unfinished again with its old id, older than items of its key that a claim running now may be taking without
        // seeing it: so the first M (max_running_per_key; M + 1 when M is above one, the bound of the hand-off when it
        // prefetches) unfinished items of its key newer than it that are ready become scheduled, due now, in this
        // transaction (see KeyedClaimSql). A claim that locks one of them once this commits
        // finds it no longer ready; one that locked it first makes this wait, and its claim then counts against the
        // requeued item (the row, running by then, is left running: the state is chosen on its latest version, and
        // the rows are reached by id alone, see PlanShapes). The next claim makes them ready again. It runs in the
        // transaction of LockDeadLetterKeys, after it, with the ids that returned: no producer of a requeued item's key
        // is in flight while it runs, so its fence sees every newer item of the key.
        RequeueDeadLetters = $"""
            WITH requeued AS (
                UPDATE {Items} SET state = 0, run_at = now(), attempt_base = attempts, delivery = delivery + 1, finished_at = NULL,
                    lease_owner = NULL, lease_until = NULL, cancel_requested_at = NULL
                WHERE {Selected}
                RETURNING id, ordering_key),
            fenced AS (
                UPDATE {Items} f SET state = CASE WHEN f.state = 0 THEN 5 ELSE f.state END
                WHERE f.id = ANY(ARRAY(
                    SELECT n.id FROM requeued d CROSS JOIN LATERAL (
                        SELECT e.id, e.state FROM {Items} e
                        WHERE e.queue = $1 AND e.ordering_key = d.ordering_key AND e.state IN (0, 1, 5) AND e.id > d.id
                        ORDER BY e.id
                        LIMIT (SELECT CASE WHEN s.max_running_per_key > 1 THEN s.max_running_per_key + 1 ELSE 1 END
                               FROM (SELECT max(q.max_running_per_key) AS max_running_per_key FROM {QueueSettings} q WHERE q.queue = $1) s)) n
                    WHERE d.ordering_key IS NOT NULL AND n.state = 0))
                RETURNING 1),
            woken AS (SELECT pg_notify($5, $1) WHERE EXISTS (SELECT 1 FROM requeued))
            SELECT (SELECT count(*) FROM requeued), (SELECT count(*) FROM woken)
            """;

        // Before a requeue, in its transaction: the selected dead letters' ids, and the locks of their keys (as an
        // enqueue takes them, in lock-id order; see KeyOrder in the remarks), so no producer of those keys is in flight
        // when the requeue's statement takes its snapshot (its fence sees every newer item of the key), and producers
        // that come after draw their ids after its commit. The requeue then takes these ids alone ($2, no time bounds):
        // a row that became a dead letter after this statement is not requeued, its key not being locked.
        LockDeadLetterKeys = $"""
            SELECT coalesce((SELECT array_agg(id ORDER BY id) FROM {Items} WHERE {Selected}), ARRAY[]::bigint[]),
                   (SELECT count(*) FROM (
                       SELECT pg_advisory_xact_lock(k.lock_id) FROM (
                           SELECT DISTINCT {KeyLockId("ordering_key")} AS lock_id FROM {Items}
                           WHERE {Selected} AND ordering_key IS NOT NULL ORDER BY lock_id) k) taken)
            """;

        PurgeDeadLetters = $"DELETE FROM {Items} WHERE {Selected}";

        // $2 state, $3 retention; deletes at most $4 rows, oldest first, skipping rows another node is deleting.
        Cleanup = $"""
            DELETE FROM {Items} WHERE id = ANY(ARRAY(
                SELECT id FROM {Items} WHERE queue = $1 AND state = $2 AND finished_at < now() - $3
                ORDER BY finished_at LIMIT $4 FOR UPDATE SKIP LOCKED))
            """;
    }

    /// <summary>
    /// The channel <paramref name="prefix"/> of <paramref name="schema"/>: <c>prefix.schema</c> (a schema name holds no
    /// dot, so no two prefixes or schemas share a channel). PostgreSQL refuses a channel name longer than 63 bytes, so a
    /// longer one keeps what fits of the schema's name and ends with <c>#</c> and a hash of the whole name (a schema
    /// name holds no <c>#</c> either). LISTEN needs it quoted: <see cref="Listen"/>.
    /// </summary>
    public static string ChannelName(string prefix, string schema)
    {
        var name = prefix + "." + schema;
        if (name.Length <= MaxChannelLength)
        {
            return name; // a schema name is ASCII: one byte a character
        }

        var hash = Convert.ToHexStringLower(System.Security.Cryptography.SHA256.HashData(System.Text.Encoding.UTF8.GetBytes(schema)), 0, 8);
        return name[..(MaxChannelLength - hash.Length - 1)] + "#" + hash;
    }

    /// <summary>The statement that listens on <paramref name="channel"/> (a quoted identifier: the name has dots).</summary>
    public static string Listen(string channel) => "LISTEN \"" + channel.Replace("\"", "\"\"", StringComparison.Ordinal) + "\"";

    public string Schema { get; }

    /// <summary>
    /// Gets the schema's channel of the wake-up notifications; the payload is the queue's name. Every channel is the
    /// schema's own (<see cref="ChannelName"/>): ids and queue names repeat from schema to schema, a notification does not.
    /// </summary>
    public string NotifyChannel { get; }

    /// <summary>Gets the schema's channel of the cancellation requests for running items; the payload is <c>id:queue</c>.</summary>
    public string CancelChannel { get; }

    /// <summary>Gets the schema's channel of fleet-wide settings changes (<see cref="ClusterSql"/>); the payload is the queue's name.</summary>
    public string SettingsChannel { get; }

    public string Items { get; }

    public string SchemaVersion { get; }

    /// <summary>Gets the table of the queues' fleet-wide settings (one row per queue, created on the first change).</summary>
    public string QueueSettings { get; }

    /// <summary>Gets the table of the consuming nodes (one row per node and queue, kept by its heartbeat).</summary>
    public string Nodes { get; }

    /// <summary>Gets the schema's versions in order: element <c>i</c> migrates version <c>i</c> to <c>i + 1</c>.</summary>
    public IReadOnlyList<string> Migrations { get; }

    /// <summary>Gets the table of paused ordering keys (schema version 10): one row per paused key of a queue.</summary>
    public string PausedKeys { get; }

    /// <summary>Gets the table of the tenants' start-rate buckets (schema version 12): one row per queue and tenant whose items were claimed under a per-tenant start rate.</summary>
    public string TenantTokens { get; }

    /// <summary>Gets the table of the tenants' virtual times (schema version 13): one row per queue and tenant (<c>''</c>: the items without a tenant) whose items a fair claim took, until its cleanup.</summary>
    public string TenantVtime { get; }

    /// <summary>Gets the table of the fair queues' virtual clocks (schema version 13): one row per queue whose items a fair claim took, until its cleanup.</summary>
    public string QueueVtime { get; }

    /// <summary>
    /// A condition true while the queue <paramref name="queue"/> is paused fleet-wide: its settings row has a pause
    /// reason and no end, or an end still to come on the database's clock. One probe of the settings' primary key.
    /// </summary>
    public string QueuePausedNow(string queue) =>
        $"EXISTS (SELECT 1 FROM {QueueSettings} ps WHERE ps.queue = {queue} AND ps.paused_reason IS NOT NULL AND (ps.paused_until IS NULL OR ps.paused_until > now()))";

    /// <summary>A condition true while the ordering key <paramref name="key"/> of <paramref name="queue"/> is paused: one probe of <see cref="PausedKeys"/>' primary key (<c>OFFSET 0</c> keeps it a probe).</summary>
    public string KeyPausedNow(string queue, string key) =>
        $"EXISTS (SELECT 1 FROM {PausedKeys} pk WHERE pk.queue = {queue} AND pk.ordering_key = {key} AND (pk.paused_until IS NULL OR pk.paused_until > now()) OFFSET 0)";

    /// <summary>
    /// The last three CTEs of a claim that returns <see cref="PlainClaimRow"/> rows (<see cref="Claim"/>, and
    /// <see cref="FairClaimSql.Claim"/>): <c>claimed</c>, the rows whose ids the CTE <paramref name="source"/> holds,
    /// leased to node $3 for $4; <c>peek</c>, the first $6 ready items in claim order; <c>waiting</c>, those of them the
    /// claim did not take. Comma-separated, no comma after the last; its lines after the first indented as the
    /// statement's, for the start of a line of it. <paramref name="returningMore"/>: more columns of the claimed rows (a
    /// leading comma); <paramref name="afterClaimed"/>: CTEs that read <c>claimed</c>, each ending with a comma.
    /// </summary>
    public string ClaimedPeekWaiting(string source, string returningMore = "", string afterClaimed = "") => $"""
        claimed AS (
            UPDATE {Items} i SET state = 1, attempts = i.attempts + 1, delivery = i.delivery + 1, lease_owner = $3, lease_until = now() + $4
            WHERE i.id = ANY(ARRAY(SELECT id FROM {source}))
            RETURNING i.id, i.payload::text AS payload, i.attempts, i.attempt_base, i.enqueued_at, i.ordering_key IS NOT NULL AS ordered,
                      i.traceparent, i.tracestate, i.priority, i.run_at, i.ordering_key, i.delivery, i.tenant{returningMore}),{afterClaimed}
        peek AS (
            SELECT p.id, p.run_at FROM {Items} p
            WHERE p.queue = $1 AND p.state = 0 AND p.run_at <= now()
            ORDER BY p.priority DESC, p.run_at, p.id
            LIMIT $6),
        waiting AS (SELECT run_at FROM peek WHERE id <> ALL(ARRAY(SELECT id FROM claimed)))
        """;

    /// <summary>
    /// The final select of a claim that ends with <see cref="ClaimedPeekWaiting"/> (and has a <c>promoted</c> CTE): the
    /// claimed rows (summary false), then one summary row (summary true) with the promotions, the seconds until the next
    /// scheduled item is due, the settings version (<paramref name="version"/>, an expression) and the waiting items.
    /// <paramref name="more"/>, when given, is one more summary column, <c>more</c> (a boolean expression; its lines after
    /// the first indented as the statement's, seven spaces in). <paramref name="nextDue"/>, when given, is the next wake-up
    /// instead of the next scheduled item's due time (in seconds). <paramref name="recorded"/>, when given, is one more
    /// summary column after those, <c>recorded</c> (<see cref="ClaimCarrying"/>). The claimed item's tenant is the last
    /// column (null in the summary), after every other, so that no column moved when it was added.
    /// </summary>
    public string ClaimResult(string version, string? more = null, string? nextDue = null, string? recorded = null) => $"""
        SELECT id, payload, attempts, attempt_base, enqueued_at, ordered, traceparent, tracestate, priority, run_at, ordering_key, delivery,
               false AS summary, NULL::integer AS promoted, NULL::double precision AS next_due, NULL::bigint AS version,
               NULL::bigint AS waiting, NULL::double precision AS oldest_wait{(more is null ? string.Empty : ", NULL::boolean AS more")}{(recorded is null ? string.Empty : ", NULL::bigint AS recorded")}, tenant
        FROM claimed
        UNION ALL
        SELECT NULL::bigint, NULL::text, NULL::integer, NULL::integer, NULL::timestamptz, NULL::boolean, NULL::text, NULL::text,
               NULL::smallint, NULL::timestamptz, NULL::text, NULL::bigint,
               true, (SELECT count(*) FROM promoted)::integer,
               {nextDue ?? $"extract(epoch FROM (SELECT min(run_at) FROM {Items} WHERE queue = $1 AND state = 5 AND run_at > now()) - now())::double precision"},
               {version}, (SELECT count(*) FROM waiting),
               coalesce(extract(epoch FROM now() - (SELECT min(run_at) FROM waiting)), 0)::double precision{(more is null ? string.Empty : ",\n       " + more)}{(recorded is null ? string.Empty : ",\n       " + recorded + " AS recorded")},
               NULL::text
        """;


    /// <summary>
    /// The plain claim (<see cref="Claim"/>) with outcomes that ride in its statement: <paramref name="carried"/>, the
    /// write's CTEs (<see cref="OutcomeStatement.RidingParts"/>), first, and one more summary column, <c>recorded</c>
    /// (<paramref name="recorded"/>: how many of them landed), marked as an outcome write for pg_stat_activity and
    /// pg_stat_statements. One statement, one round trip, one commit. Its CTEs share
    /// the claim's snapshot, so the claim does not see the carried outcomes' rows settled: a keyed item whose older item
    /// finishes in it is claimed by the next claim, and the per-key checks count the carried rows as running (a claim
    /// may leave a keyed item, never take one early). A row both written by a carried outcome and picked by the claim (a
    /// reaped row, ready again, whose late outcome rides) is changed by one of the two only (PostgreSQL skips a row the
    /// same statement already changed): either the outcome landed and the claim did not take it, or the claim took it
    /// and the outcome did not land (counted as not recorded, and the item runs again, as when another node claims it first).
    /// </summary>
    /// <remarks>
    /// The carried outcomes are written before the claim picks a row: the claim's candidates are gated on their count
    /// (<c>AND (recorded) &gt;= 0</c>, true whatever it is, evaluated once before any candidate is locked). Without it
    /// PostgreSQL ran the claim first, and a carried write that waited (a row lock, a write that lags) kept the rows the
    /// claim had picked locked meanwhile: held by no node, skipped by every other node's claim.
    /// </remarks>
    public string ClaimCarrying(string carried, string recorded) =>
        "/* BoundedWork outcomes, with a claim */ WITH " + carried + ",\n" + _claimCtesCarrying(recorded) + "\n" + ClaimResult(_settingsVersion, recorded: recorded);

    public string Enqueue { get; }

    public string EnqueueNotifying { get; }

    public string EnqueueIdempotent { get; }

    public string EnqueueMany { get; }

    /// <summary>The seed of <see cref="OrderingKeyLockId"/>, an expression of <c>$1</c> (the queue).</summary>
    private readonly string _keyLockSeed;

    /// <summary>
    /// The lock id of the ordering key <paramref name="key"/> (an SQL expression) of queue <c>$1</c>, the one every
    /// enqueue takes before it inserts a keyed row: for statements outside this class that insert items.
    /// </summary>
    public string OrderingKeyLockId(string key) => $"hashtextextended({key}, {_keyLockSeed})";

    public string Claim { get; }

    /// <summary>The settings version the claims check, as an expression of <c>$1</c>.</summary>
    private readonly string _settingsVersion;

    /// <summary>
    /// The plain claim's CTEs, <c>promoted</c> to <c>waiting</c>, without the <c>WITH</c> before them, for
    /// <see cref="ClaimCarrying"/>: its candidates gated on the carried outcomes' count (the argument), so that they are
    /// written first.
    /// </summary>
    private readonly Func<string, string> _claimCtesCarrying;


    public string Heartbeat { get; }

    public string ReapExpired { get; }

    public string Statistics { get; }

    /// <summary>Gets the per-tenant statistics read (see its comment in the constructor).</summary>
    public string TenantStatistics { get; }

    public string Cleanup { get; }

    public string Cancel { get; }

    public string ListDeadLetters { get; }

    public string GetDeadLetter { get; }

    public string RequeueDeadLetters { get; }

    public string LockDeadLetterKeys { get; }

    public string PurgeDeadLetters { get; }
}

/// <summary>The kinds of outcome a delivery ends with; their order is the order of an outcome statement's parts and parameters.</summary>
internal enum OutcomeKind
{
    Completed,
    Released,
    Retry,
    Dead,
    Cancelled,
    Snoozed,
}
