namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The claim of a queue whose ordering keys may run more than one item at once (<c>max_running_per_key</c> M &gt; 1),
/// in one statement, without the settings lock: <see cref="ClaimPerKey"/>. Built from <see cref="StorageSql"/> like
/// <see cref="ClusterSql"/>; its two indexes come with schema version 5 (<see cref="Migration"/>).
/// </summary>
/// <remarks>
/// <para>
/// <b>The rule.</b> An item of key <c>k</c> is <i>eligible</i> while (unfinished items of <c>k</c> older than it) +
/// (running items of <c>k</c> newer than it) &lt; M; a claim takes the first <c>$2</c> eligible ready items by turn, then
/// id. Why at most M run per key without a lock, and how a requeued dead letter is fenced: docs/durable-invariants.md,
/// I1. The hand-off (<see cref="HandOff"/>) is the same rule in an outcome's transaction: I2. Its prefetched items
/// (count M, admitted by M + 1 for the keys the node may prefetch) never make more than M handlers execute: I3.
/// </para>
/// <para>
/// <b>Cost.</b> It reads the head of the claim order (the first <c>2 * $2 + 16</c> ready items) and the keys found there,
/// or, when the per-key rule binds there, every key with ready items: never the backlog of a key. The argument:
/// docs/durable-invariants.md, I1 (the per-key claim's cost); the bounds: <c>KeyedClaimCostTests</c>.
/// </para>
/// </remarks>
internal sealed class KeyedClaimSql
{
    public KeyedClaimSql(StorageSql sql)
    {
        var items = sql.Items;

        // Paused items (see StorageSql.QueuePausedNow and KeyPausedNow): none while the queue is paused; none of a
        // paused key, left out before the turns are counted, so a paused key's items never take the other keys' room.
        var notPaused = $"NOT {sql.QueuePausedNow("$1")}";
        string KeyNotPaused(string key) => $"({key} IS NULL OR NOT {sql.KeyPausedNow("$1", key)})";
        const string Head = "($2::bigint * 2 + 16)";

        // The eligible items of one key (the expression keyExpression): of its oldest unfinished items, those ready and
        // due whose older unfinished items (their place in that list) and newer running items (a probe, at most M rows)
        // are fewer than M together. The list is the key's M ($5) oldest unfinished items, but never more than the
        // head's length plus the key's running items (a probe of items_ordered_running, at most M rows): a claim takes
        // at most $2 items, so a large M (a limit that does not bind) does not make it read a key's whole backlog. Each
        // item's place in the shorter list is the same as in the long one, so the rule is checked exactly; only items
        // behind more scheduled (retrying) items of their key than the head's length wait for a later claim. With
        // lastId, the list also stops at that id (the key's newest item in the head): see the remarks' cost part.
        string EligibleOf(string keyExpression, string? lastId = null) => $"""
            SELECT u.id, u.ordering_key, u.priority, u.run_at, u.version, n.load FROM (
                SELECT o.id, o.ordering_key, o.priority, o.run_at, o.state, o.version, row_number() OVER (ORDER BY o.id) - 1 AS elders
                FROM (SELECT e.id, e.ordering_key, e.priority, e.run_at, e.state, e.xmin AS version FROM {items} e
                      WHERE e.queue = $1 AND e.ordering_key = {keyExpression} AND e.state IN (0, 1, 5){(lastId is null ? string.Empty : $" AND e.id <= {lastId}")}
                      ORDER BY e.id
                      LIMIT least($5::bigint, {Head} + (SELECT count(*) FROM (
                          SELECT 1 FROM {items} w WHERE w.queue = $1 AND w.ordering_key = {keyExpression} AND w.state = 1 LIMIT $5) running))) o) u
            CROSS JOIN LATERAL (SELECT u.elders + (SELECT count(*) FROM (
                      SELECT 1 FROM {items} r
                      WHERE r.queue = $1 AND r.ordering_key = u.ordering_key AND r.state = 1 AND r.id > u.id
                      LIMIT $5) newer) AS load) n
            WHERE u.state = 0 AND u.run_at <= now() AND n.load < $5
            """;

        // Each item's place in the claim order among the rows of `source`, and its turn: its own place when unkeyed, the
        // best place of its key's items from it onwards when keyed; `inHead` when every such item is in the head.
        static string Turns(string source) => $"""
            SELECT id, ordering_key, version, in_head, min(place) OVER later AS turn, bool_or(in_head) OVER later AS head_turn
            FROM (SELECT id, ordering_key, version, in_head, row_number() OVER (ORDER BY priority DESC, run_at, id) AS place FROM {source}) placed
            WINDOW later AS (PARTITION BY ordering_key, CASE WHEN ordering_key IS NULL THEN id END ORDER BY id DESC)
            """;

        // The chosen rows locked by id alone, skipping those another transaction holds and those updated since this
        // snapshot (their xmin is not the one read); a keyed row taken only when every older row of its key that was
        // chosen was locked too; the taken rows claimed. Shared by ClaimPerKey and HandOff (whose rows are all keyed).
        var lockTakeClaim = $"""
            locked AS (
                SELECT i.id, i.ordering_key FROM {items} i
                WHERE i.id = ANY(ARRAY(SELECT id FROM chosen))
                  AND i.xmin = (SELECT c.version FROM chosen c WHERE c.id = i.id)
                FOR UPDATE SKIP LOCKED),
            taken AS (
                SELECT l.id FROM locked l
                WHERE l.ordering_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM chosen c
                    WHERE c.ordering_key = l.ordering_key AND c.id < l.id AND c.id NOT IN (SELECT id FROM locked))),
            claimed AS (
                UPDATE {items} i SET state = 1, attempts = i.attempts + 1, delivery = i.delivery + 1, lease_owner = $3, lease_until = now() + $4
                WHERE i.id = ANY(ARRAY(SELECT id FROM taken))
                RETURNING i.id, i.payload::text AS payload, i.attempts, i.attempt_base, i.enqueued_at, i.ordering_key IS NOT NULL AS ordered,
                          i.traceparent, i.tracestate, i.ordering_key, i.delivery, i.tenant)
            """;

        // $1 queue, $2 how many the node wants, $3 node, $4 lease, $5 M, $6 the settings version the node read M under
        // (and its permits were granted under): nothing is claimed unless the queue's settings version is still $6, as in
        // Claim, so a changed M binds every claim whose statement starts after the change committed. Promotions first, as Claim makes them (claimed by
        // the next claim: this statement's snapshot predates them). Then the head of the claim order and the keys found
        // there (the first branch), or, when the per-key rule binds there, every key with ready items and the first
        // unkeyed ones (the second branch, run only then: a one-time filter). The chosen rows are locked by id alone
        // (the primary key, whatever the statistics: a state condition would let a plan made on a small table scan the
        // ready index), skipping those another transaction holds and those updated since this snapshot (xmin: a row not
        // updated since is still ready); a keyed row is taken only when every older row of its key that was chosen was
        // locked too. Returns two row types (see ClaimRows): the claimed rows (summary false), and one summary row
        // (summary true, the item's columns null): promotions, the seconds until the next scheduled item (null: none),
        // the settings version it saw, the ready items this claim left behind that the node wanted (held_back: the per-key rule held them, or another
        // node was taking them; at most $2 minus the claimed), and how long the oldest of those in the head has waited
        // since it became due (oldest_wait, seconds).
        ClaimPerKey = $"""
            WITH RECURSIVE promoted AS (
                UPDATE {items} SET state = 0 WHERE id = ANY(ARRAY(
                    SELECT id FROM {items} WHERE queue = $1 AND state = 5 AND run_at <= now()
                    ORDER BY run_at LIMIT {StorageSql.MaxPromotions} FOR UPDATE SKIP LOCKED))
                RETURNING 1),
            settings AS (SELECT coalesce((SELECT s.version FROM {sql.QueueSettings} s WHERE s.queue = $1), 0) AS version),
            head AS (
                SELECT id, ordering_key, priority, run_at, xmin AS version FROM {items}
                WHERE queue = $1 AND state = 0 AND run_at <= now()
                ORDER BY priority DESC, run_at, id
                LIMIT {Head}),
            head_eligible AS (
                SELECT id, ordering_key, priority, run_at, version, true AS in_head FROM head WHERE ordering_key IS NULL
                UNION ALL
                SELECT f.id, f.ordering_key, f.priority, f.run_at, f.version, f.id IN (SELECT id FROM head)
                FROM (SELECT ordering_key, max(id) AS last_id FROM head WHERE ordering_key IS NOT NULL GROUP BY ordering_key) k
                CROSS JOIN LATERAL ({EligibleOf("k.ordering_key", "k.last_id")}) f),
            head_turns AS ({Turns("head_eligible")}),
            verdict AS (
                SELECT (SELECT count(*) FROM head) < {Head} OR (SELECT count(*) FROM head_turns h WHERE h.head_turn AND {KeyNotPaused("h.ordering_key")}) >= $2 AS in_head),
            ready_keys (ordering_key) AS (
                (SELECT ordering_key FROM {items} WHERE queue = $1 AND state = 0 AND ordering_key IS NOT NULL ORDER BY ordering_key LIMIT 1)
                UNION ALL
                SELECT (SELECT n.ordering_key FROM {items} n
                        WHERE n.queue = $1 AND n.state = 0 AND n.ordering_key IS NOT NULL AND n.ordering_key > p.ordering_key
                        ORDER BY n.ordering_key LIMIT 1)
                FROM ready_keys p WHERE p.ordering_key IS NOT NULL),
            all_eligible AS (
                SELECT id, ordering_key, priority, run_at, version, true AS in_head FROM (
                    SELECT id, ordering_key, priority, run_at, xmin AS version FROM {items}
                    WHERE queue = $1 AND state = 0 AND ordering_key IS NULL AND run_at <= now()
                    ORDER BY priority DESC, run_at, id LIMIT $2) unkeyed
                UNION ALL
                SELECT f.id, f.ordering_key, f.priority, f.run_at, f.version, true
                FROM ready_keys k CROSS JOIN LATERAL ({EligibleOf("k.ordering_key")}) f
                WHERE k.ordering_key IS NOT NULL),
            chosen AS (
                (SELECT h.id, h.ordering_key, h.version FROM head_turns h
                 WHERE h.head_turn AND (SELECT in_head FROM verdict) AND (SELECT version FROM settings) = $6::bigint
                   AND {notPaused} AND {KeyNotPaused("h.ordering_key")} ORDER BY h.turn, h.id LIMIT $2)
                UNION ALL
                (SELECT t.id, t.ordering_key, t.version FROM ({Turns("all_eligible")}) t
                 WHERE NOT (SELECT in_head FROM verdict) AND (SELECT version FROM settings) = $6::bigint
                   AND {notPaused} AND {KeyNotPaused("t.ordering_key")} ORDER BY t.turn, t.id LIMIT $2)),
            {lockTakeClaim},
            left_behind AS (
                SELECT greatest(least((SELECT count(*) FROM head), $2::bigint) - (SELECT count(*) FROM taken), 0) AS held)
            SELECT id, payload, attempts, attempt_base, enqueued_at, ordered, traceparent, tracestate, ordering_key, delivery,
                   false AS summary, NULL::integer AS promoted, NULL::double precision AS next_due, NULL::bigint AS held_back,
                   NULL::double precision AS oldest_wait, NULL::bigint AS version, tenant
            FROM claimed
            UNION ALL
            SELECT NULL::bigint, NULL::text, NULL::integer, NULL::integer, NULL::timestamptz, NULL::boolean, NULL::text, NULL::text,
                   NULL::text, NULL::bigint,
                   true, (SELECT count(*) FROM promoted)::integer,
                   extract(epoch FROM (SELECT min(run_at) FROM {items} WHERE queue = $1 AND state = 5 AND run_at > now()) - now())::double precision,
                   (SELECT held FROM left_behind),
                   CASE WHEN (SELECT held FROM left_behind) = 0 THEN 0 ELSE coalesce(extract(epoch FROM now() - (
                       SELECT min(h.run_at) FROM head h WHERE h.id NOT IN (SELECT id FROM taken))), 0) END::double precision,
                   (SELECT version FROM settings), NULL::text
            """;

        // The hand-off (see OutcomeHandOff): the same rule, walking only the keys $6 (the keys of the items whose final
        // outcome the same transaction has just written, which it sees as finished), for at most $2 items, by turn among
        // those keys' eligible items, locked and taken as ClaimPerKey does. No promotions and no summary: the claim
        // loop does those. The comment names the statement for tests and pg_stat_activity. Prefetching (I3): $5 is the
        // bound the rule admits by (M, or M + 1 to prefetch), $7 is M, and an item whose count (older unfinished + newer
        // running) is M is admitted only for the keys $8 (the keys the node may prefetch for); the last column says
        // whether the row is prefetched (count = M, not to start now). A key's eligible items have strictly increasing
        // counts, so at most one per key has count M.
        HandOff = $"""
            /* BoundedWork hand-off */ WITH handed_keys AS (SELECT DISTINCT k FROM unnest($6::text[]) AS k WHERE k IS NOT NULL),
            eligible AS (
                SELECT f.id, f.ordering_key, f.priority, f.run_at, f.version, true AS in_head, f.load
                FROM handed_keys hk CROSS JOIN LATERAL ({EligibleOf("hk.k")}) f
                WHERE f.load < $7 OR f.ordering_key = ANY($8::text[])),
            chosen AS (
                SELECT t.id, t.ordering_key, t.version FROM ({Turns("eligible")}) t WHERE {notPaused} AND {KeyNotPaused("t.ordering_key")} ORDER BY t.turn, t.id LIMIT $2),
            {lockTakeClaim}
            SELECT c.id, c.payload, c.attempts, c.attempt_base, c.enqueued_at, c.ordered, c.traceparent, c.tracestate, c.ordering_key,
                   (SELECT e.load FROM eligible e WHERE e.id = c.id) >= $7 AS prefetched, c.delivery, c.tenant
            FROM claimed c
            """;
    }

    /// <summary>
    /// Gets the hand-off claim, run by the outcome writer in the transaction of a batch of final outcomes, after the
    /// outcome statement: the <see cref="ClaimPerKey"/> rule over the keys <c>$6</c> (text[]) only. $1 queue, $2 at most
    /// how many, $3 node, $4 lease, $5 the bound (M, or M + 1 when it may take reserves), $6 the keys, $7 M, $8 the keys
    /// it may take a reserve for (text[]; an item whose count is M). Returns the claimed rows in the columns of
    /// <see cref="ClaimPerKey"/> (the ordering key at 8), then whether the row is a reserve (9, bool), the delivery
    /// token (10) and the tenant (11), no summary.
    /// </summary>
    public string HandOff { get; }

    /// <summary>
    /// Gets the claim of a queue with <c>max_running_per_key</c> above one: $1 queue, $2 how many the node wants, $3 node
    /// (the lease owner), $4 lease, $5 M, $6 the settings version M was read under (bigint: nothing is claimed unless the
    /// queue's version is still that one). One statement in its own (implicit) transaction, no settings lock. Returns the
    /// claimed rows (<see cref="KeyedClaimRow"/>: the item's columns, the ordering key and the delivery token), and one
    /// summary row of its own columns: promotions, seconds until the next scheduled item (null: none), ready items left
    /// behind and how long the oldest of them has waited since due (seconds), and the settings version it saw.
    /// </summary>
    public string ClaimPerKey { get; }

    /// <summary>
    /// Schema version 5: the indexes <see cref="ClaimPerKey"/> walks when the per-key rule binds: the keys that have ready
    /// items (a skip scan, one probe per key) and the unkeyed ready items in claim order (not behind a keyed backlog).
    /// </summary>
    public static string Migration(string items) => $"""
        CREATE INDEX items_ready_keyed ON {items} (queue, ordering_key) WHERE state = 0 AND ordering_key IS NOT NULL;
        CREATE INDEX items_ready_unkeyed ON {items} (queue, priority DESC, run_at, id) WHERE state = 0 AND ordering_key IS NULL;
        """;
}
