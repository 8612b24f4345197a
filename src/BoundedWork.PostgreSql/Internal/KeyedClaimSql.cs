namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The claim of a queue whose ordering keys may run more than one item at once (<c>max_running_per_key</c> M &gt; 1),
/// in one statement, without the settings lock: <see cref="ClaimPerKey"/>. Built from <see cref="StorageSql"/> like
/// <see cref="ClusterSql"/>; its two indexes come with schema version 5 (<see cref="Migration"/>).
/// </summary>
/// <remarks>
/// <para>
/// <b>The rule.</b> An item <c>c</c> of key <c>k</c> is <i>eligible</i> while (items of <c>k</c> older than <c>c</c> that are
/// unfinished: ready, running or scheduled) + (items of <c>k</c> running and newer than <c>c</c>: a requeued dead letter is
/// older than the items of its key that ran meanwhile) &lt; M. So the eligible items of a key are among its M oldest
/// unfinished items, and M = 1 is the ordering rule of <see cref="StorageSql.Claim"/>. Unkeyed items are always
/// eligible. A claim takes the first <c>$2</c> eligible ready items by <i>turn</i>, then id: an unkeyed item's turn is
/// its place in the claim order (priority descending, due time, id); a keyed item's turn is the best place of the
/// eligible items of its key from it onwards (id at least its own), so a key's items start oldest first, and an
/// urgent item of a key brings its key's older eligible items along at its own turn rather than overtaking them.
/// </para>
/// <para>
/// <b>Why at most M run per key without a lock.</b> Two nodes claiming at once do not see each other's claims; they do
/// not need to. Claiming changes no item's eligibility: ready and running are both unfinished, so the set an item is
/// counted against (the unfinished items of its key older than it) is the same in every snapshot, except that it
/// shrinks as items finish (new items are newer, and nothing becomes unfinished again with an old id, but a requeued
/// dead letter: below). A claim sees that set as it was when its statement started, a superset of what it is at any
/// later time, so an item claimed as eligible stays among its key's M oldest unfinished items for as long as it runs;
/// every running item of the key is one of those M, so at most M run. Two claims choosing the same rows meet on the row
/// locks (<c>FOR UPDATE SKIP LOCKED</c>), and a claim locks a row only if no one has updated it since its snapshot (its
/// <c>xmin</c> is the one it read; a row updated meanwhile is rechecked on its latest version and skipped). A claim
/// never takes a keyed item while an older item of its key that it chose is skipped (locked by another claim, a
/// cancellation or an outcome): it leaves the newer one to a later claim, so within a key items start in id order
/// across nodes too.
/// </para>
/// <para>
/// <b>What breaks it: a requeued dead letter.</b> A dead letter requeued with its old id makes an old item unfinished
/// again. A claim whose snapshot predates the requeue's commit may take a newer item of the key (it does not see the
/// requeued one), while a claim that started after the commit, not seeing that claim yet, takes the requeued one: M + 1
/// running (2 for M = 1, with <see cref="StorageSql.Claim"/> as well). The requeue closes this (see
/// <see cref="StorageSql.RequeueDeadLetters"/>): in its own transaction it moves the key's first M unfinished items
/// newer than the dead letter that are ready to scheduled, due now. A claim whose snapshot predates the requeue and
/// that locks one of them after the requeue committed finds it updated since its snapshot and skips it (even once a
/// later claim has made it ready again); one that locked it first makes the requeue wait and then counts as running
/// against the requeued item (the newer-running term). The next claim makes them ready again, with the requeued item
/// in view. <see cref="StorageSql.Claim"/> (M = 1) rechecks only <c>state = 0</c>: a claim stalled between its snapshot
/// and its lock for as long as the requeue's commit and another node's whole claim (which makes the fenced item ready
/// again) would still take it; the fence closes every shorter interleaving. An enqueue cannot make an old id
/// unfinished the same way: a keyed enqueue draws its id only once it holds its key's lock, which every earlier
/// producer of the key holds until it commits or rolls back (see the key order in the remarks of
/// <see cref="StorageSql"/>), so a key's ids follow its commit order and a newly visible item is newer than every
/// item of its key already visible.
/// </para>
/// <para>
/// <b>The hand-off.</b> <see cref="HandOff"/> is the same rule (the same <c>EligibleOf</c> text, the same locking) over
/// given keys only, run by a node's outcome writer in the transaction of the outcomes that finished items of those keys,
/// after the outcome statement: under READ COMMITTED it sees those items finished, every other transaction sees them
/// finished only together with its claim, so the argument above holds for it as for a claim run right after the
/// outcome's commit (see the remarks of the hand-off part of <c>PostgreSqlWorkQueue</c>).
/// </para>
/// <para>
/// <b>The per-key reserve: at most M handlers of a key execute.</b> When the per-key limit is the queue's only cluster
/// limit, the hand-off admits by M + 1 (<c>$5</c>) and returns each row's count; a row whose count is M is not started
/// but held by the node as its key's reserve, at most one per key per node, only for a key of which the node runs
/// another item (see the key reserve part of <c>PostgreSqlWorkQueue</c>). The claim loop keeps M. Call an item's
/// place the number of unfinished items of its key older than it. (1) Every claim admits an item only if its count is
/// below its bound (M, or M + 1 for the hand-off), and the count is at least the item's place; by the argument above
/// (with M + 1: a claim sees
/// a superset of the older unfinished items, and places only fall as items finish), every running row of a key is among
/// its M + 1 oldest unfinished items (place at most M), and an item admitted to start at once (count below M) keeps a
/// place below M for as long as it runs. (2) So a handler executing at place M can only be a reserve started paired
/// with an end (3), and M + 1 handlers execute only if every one of the M + 1 oldest unfinished items executes, that
/// reserve R among them. (3) A reserve starts only paired with the end of a handler P of its key on the same node
/// with a final outcome (completed, dead letter, cancelled), one reserve per end, at that end (or, when P ended while
/// the hand-off that claimed R was in flight, at that hand-off's commit, P's outcome being unwritten until the writer's
/// next batch). P was running then, so its place was at most M, hence older than R if R's place was M. If R's place
/// is M now, it has been M since its claim (it was at most M then and never rises), so no older item has finished
/// since: P is still unfinished, its handler has ended and its outcome is unwritten, so P does not execute, and not
/// all of the M + 1 oldest execute. Hence at most M execute.
/// </para>
/// <para>
/// The reserve and the other cases: a retry or a release is not a final outcome and starts no reserve (the row stays
/// unfinished, its place kept). A lease that expires while an ended item's outcome is unwritten returns that row to
/// ready while its paired reserve executes: the step "P does not execute" then rests on the lease, as every
/// at-least-once guarantee of the queue does (its new claim counts the reserve as a running newer item, so it starts
/// at once only where fewer than M rows of its key run). A crashed node's reserves are running rows whose lease
/// expires. A stopping node releases its reserves. The requeue fence moves M + 1 items (the hand-off's bound) for
/// M above one: a hand-off whose snapshot predates a requeue could otherwise take the (M + 1)-th newer item as a
/// reserve while a claim after the requeue takes the requeued one, M + 2 running.
/// </para>
/// <para>
/// <b>Cost.</b> The statement first looks at the head of the claim order (the first <c>2 * $2 + 16</c> ready items, by
/// the ready index) and walks the keys found there: each key's M oldest unfinished items (<c>items_ordered</c>) up to
/// its newest item in the head (a later item of the key is ready and not in the head, so it comes after every head item
/// in the claim order: it cannot give an older item a turn in the head, and leaving it out changes no answer), and for
/// each eligible one a probe of its key's newer running items (at most M rows). If that yields <c>$2</c> items whose turn
/// is in the head, or the head is all the ready items, those are the answer: rows examined about
/// <c>(2 * $2 + 16) * (1 + 2M)</c>, whatever the backlog. Otherwise (the per-key rule binds in the head: a deep backlog
/// on few keys) it walks every key with ready items instead (a skip scan of <c>items_ready_keyed</c>, one probe per key)
/// and each key's M oldest unfinished items, and the first <c>$2</c> unkeyed ready items (<c>items_ready_unkeyed</c>):
/// rows examined about (keys with ready items) * (1 + 2M) + <c>$2</c>, never the backlog of a key. Both give the same
/// answer: the first <c>$2</c> eligible items by turn.
/// </para>
/// </remarks>
internal sealed class KeyedClaimSql
{
    public KeyedClaimSql(StorageSql sql)
    {
        var items = sql.Items;
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
                          i.traceparent, i.tracestate, i.ordering_key, i.delivery)
            """;

        // $1 queue, $2 how many the node wants, $3 node, $4 lease, $5 M. Promotions first, as Claim makes them (claimed by
        // the next claim: this statement's snapshot predates them). Then the head of the claim order and the keys found
        // there (the first branch), or, when the per-key rule binds there, every key with ready items and the first
        // unkeyed ones (the second branch, run only then: a one-time filter). The chosen rows are locked by id alone
        // (the primary key, whatever the statistics: a state condition would let a plan made on a small table scan the
        // ready index), skipping those another transaction holds and those updated since this snapshot (xmin: a row not
        // updated since is still ready); a keyed row is taken only when every older row of its key that was chosen was
        // locked too. Returns the claimed rows (the columns of Claim), then one last row with a null id: promotions
        // (ordinal 2), the seconds until the next scheduled item (8, null: none), the ready items this claim left behind
        // that the node wanted (9: the per-key rule held them, or another node was taking them; at most $2 minus the
        // claimed), and how long the oldest of those in the head has waited since it became due (10, seconds).
        ClaimPerKey = $"""
            WITH RECURSIVE promoted AS (
                UPDATE {items} SET state = 0 WHERE id = ANY(ARRAY(
                    SELECT id FROM {items} WHERE queue = $1 AND state = 5 AND run_at <= now()
                    ORDER BY run_at LIMIT {StorageSql.MaxPromotions} FOR UPDATE SKIP LOCKED))
                RETURNING 1),
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
                SELECT (SELECT count(*) FROM head) < {Head} OR (SELECT count(*) FROM head_turns WHERE head_turn) >= $2 AS in_head),
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
                (SELECT id, ordering_key, version FROM head_turns WHERE head_turn AND (SELECT in_head FROM verdict) ORDER BY turn, id LIMIT $2)
                UNION ALL
                (SELECT id, ordering_key, version FROM ({Turns("all_eligible")}) t WHERE NOT (SELECT in_head FROM verdict) ORDER BY turn, id LIMIT $2)),
            {lockTakeClaim},
            left_behind AS (
                SELECT greatest(least((SELECT count(*) FROM head), $2::bigint) - (SELECT count(*) FROM taken), 0) AS held)
            SELECT id, payload, attempts, attempt_base, enqueued_at, ordered, traceparent, tracestate, NULL::double precision AS next_due,
                   NULL::bigint AS held_back, NULL::double precision AS oldest_wait, ordering_key, delivery FROM claimed
            UNION ALL
            SELECT NULL, NULL, (SELECT count(*) FROM promoted)::integer, NULL, NULL, NULL, NULL, NULL,
                   extract(epoch FROM (SELECT min(run_at) FROM {items} WHERE queue = $1 AND state = 5 AND run_at > now()) - now())::double precision,
                   (SELECT held FROM left_behind),
                   CASE WHEN (SELECT held FROM left_behind) = 0 THEN 0 ELSE coalesce(extract(epoch FROM now() - (
                       SELECT min(h.run_at) FROM head h WHERE h.id NOT IN (SELECT id FROM taken))), 0) END::double precision,
                   NULL::text, NULL::bigint
            """;

        // The hand-off (see OutcomeHandOff): the same rule, walking only the keys $6 (the keys of the items whose final
        // outcome the same transaction has just written, which it sees as finished), for at most $2 items, by turn among
        // those keys' eligible items, locked and taken as ClaimPerKey does. No promotions and no last row: the claim
        // loop does those. The comment names the statement for tests and pg_stat_activity. The per-key reserve (see
        // KeyReserve in the remarks): $5 is the bound the rule admits by (M, or M + 1 to take reserves), $7 is M, and
        // an item whose count (older unfinished + newer running) is M is admitted only for the keys $8 (the keys the
        // node may take a reserve for); the last column says whether the row is such a reserve (count = M, not to start
        // now). A key's eligible items have strictly increasing counts, so at most one per key has count M.
        HandOff = $"""
            /* BoundedWork hand-off */ WITH handed_keys AS (SELECT DISTINCT k FROM unnest($6::text[]) AS k WHERE k IS NOT NULL),
            eligible AS (
                SELECT f.id, f.ordering_key, f.priority, f.run_at, f.version, true AS in_head, f.load
                FROM handed_keys hk CROSS JOIN LATERAL ({EligibleOf("hk.k")}) f
                WHERE f.load < $7 OR f.ordering_key = ANY($8::text[])),
            chosen AS (
                SELECT id, ordering_key, version FROM ({Turns("eligible")}) t ORDER BY turn, id LIMIT $2),
            {lockTakeClaim}
            SELECT c.id, c.payload, c.attempts, c.attempt_base, c.enqueued_at, c.ordered, c.traceparent, c.tracestate, c.ordering_key,
                   (SELECT e.load FROM eligible e WHERE e.id = c.id) >= $7 AS reserved, c.delivery
            FROM claimed c
            """;
    }

    /// <summary>
    /// Gets the hand-off claim, run by the outcome writer in the transaction of a batch of final outcomes, after the
    /// outcome statement: the <see cref="ClaimPerKey"/> rule over the keys <c>$6</c> (text[]) only. $1 queue, $2 at most
    /// how many, $3 node, $4 lease, $5 the bound (M, or M + 1 when it may take reserves), $6 the keys, $7 M, $8 the keys
    /// it may take a reserve for (text[]; an item whose count is M). Returns the claimed rows in the columns of
    /// <see cref="ClaimPerKey"/> (the ordering key at 8), then whether the row is a reserve (9, bool) and the delivery
    /// token (10), no last row.
    /// </summary>
    public string HandOff { get; }

    /// <summary>
    /// Gets the claim of a queue with <c>max_running_per_key</c> above one: $1 queue, $2 how many the node wants, $3 node
    /// (the lease owner), $4 lease, $5 M. One statement in its own (implicit) transaction, no settings lock. Returns the
    /// claimed rows in the columns of <see cref="StorageSql.Claim"/> (the ordering key, then the delivery token, last),
    /// then one last row with a null id: promotions
    /// (ordinal 2, int), seconds until the next scheduled item (8, null: none), ready items left behind (9, bigint) and
    /// how long the oldest of them has waited since due (10, seconds).
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
