namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The claim of a queue whose fleet-wide settings turn fair share on (<c>queue_settings.fair_share</c>): ready items
/// are taken from the tenants with ready items in weighted turn, not in one global order, within each tenant's bound
/// of running items (<c>max_running_per_tenant</c>). Built from <see cref="StorageSql"/> like
/// <see cref="KeyedClaimSql"/>; its indexes come with schema version 11. The plain claim (<see cref="StorageSql.Claim"/>)
/// is not changed: a queue without fair share never runs this.
/// </summary>
/// <remarks>
/// <para>
/// <b>Taking turns.</b> The claims of one fair queue take turns across the fleet: each runs <see cref="Lock"/> (a
/// transaction-scoped advisory lock of the queue) and then <see cref="Claim"/> in one transaction (two statements and
/// the commit; not a batch, which would wait for a ThreadPool thread). The claim's snapshot is taken after the lock is held, so it sees every earlier claim's items as
/// running: the per-tenant counts it decides by are exact, not a snapshot that another node's claim in flight could
/// make stale. The lock is held for the claim statement and the commit (and, when the claim carries outcomes, their
/// write before it).
/// </para>
/// <para>
/// <b>The order: shares of service</b> (schema version 13; start-time fair queuing, as in SFQ and WF2Q+). Each tenant
/// t with ready items is a lane, of weight w(t) and with r(t) items running (state running: started, held by a node, or
/// with their outcome being written, on any node, a dead node's included until they are reaped). Each tenant has a
/// virtual time, a row of <c>tenant_vtime</c>: the service it received, each start counting 1 / w(t); each queue a
/// virtual clock V, its row of <c>queue_vtime</c> (no row: 0). A lane starts at S(t) = max(vtime(t), V) (no row: V), and
/// its j-th ready item in claim order (priority, due time, enqueue order; j = 1, 2, ...) has the virtual finish time
/// S(t) + j / w(t); the claim takes the items of lowest finish time, ties to the lane with fewer running items, then
/// claim order. It writes, in its own transaction, each tenant it took n items of at S(t) + n / w(t), and the clock at
/// the least S(t) of the lanes that offered items (never lower than it was: each S(t) is at least V). So while tenants
/// stay backlogged, their starts follow their weights whatever they run at the moment (the old rule, (r(t) + j) / w(t),
/// shared the places running: with 12 of them a weight-2 tenant among ten held 2 or 3 and the rule gave it 3). The
/// clock is the credit rule: a tenant that returns after being idle, or that could not be served (at its bound, out of
/// tokens), starts at no less than V, level with the least-served lane that offered at the last claim, so it banks no
/// credit while it waits, and it overtakes a backlogged tenant by at most that lane's lag; one served ahead of V keeps
/// its debt (it starts at its own time). Nothing starves: every lane that offers has a finite finish time, and each
/// start moves its lane's finish time on by 1 / w(t), so every lane's turn comes within a bounded number of starts. A
/// tenant at its bound (r(t) &gt;= max_running_per_tenant) offers nothing; one below it offers at most the room left.
/// Items without a tenant form one lane of the default weight (its virtual time the row of tenant <c>''</c>, a tenant
/// no item can carry), found among the head of the global claim order (the first 2 * count + 16 ready items), so they
/// cost no index of their own. The times are doubles: exact for the sums of 1 / w(t) far beyond any queue's starts.
/// </para>
/// <para>
/// <b>Cleanup.</b> The queue's maintenance (<see cref="CleanupVtime"/>, <see cref="ResetClock"/>,
/// <see cref="CleanupTokens"/>, under the same lock) removes the rows that mean what no row means: a tenant's virtual
/// time at or below the clock (S(t) is V either way, and the clock never goes back), the clock when the queue has no
/// tenant row left (every lane then starts level at 0 instead of level at V: the order depends only on the differences),
/// and a bucket refilled to its burst by the database's clock (no row: a full bucket), or any bucket of a queue without
/// a per-tenant rate (a rate set later starts from full buckets, which its bound, B + R × L, allows). So a tenant cleaned
/// and returning is claimed exactly as if its rows had stayed, its bound and rate included; the rows left are those of
/// tenants served ahead of the clock or short of tokens, at most one per tenant active of late. One more rule ends a busy
/// period, as start-time fair queuing does: when the queue has no ready item, every virtual time goes (a tenant served
/// ahead while no other waited owes nobody), so a queue gone quiet keeps no row.
/// </para>
/// <para>
/// <b>Cost.</b> Each lane offers at most its quota: its share of the claim by weight, counting what the lanes run,
/// ceil((count + R) * w(t) / W - r(t)) (W the lanes' total weight, R their running items), at least 1, and never more
/// than its room (count, and the bound less r(t)); the quotas add up to at least count (or the room there is). A claim
/// reads the tenants with ready items by a skip scan (one index descent per tenant), each tenant's
/// running items (an index-only count, bounded by what the fleet holds), its virtual time (a primary-key probe), and at
/// most 2 * count + lanes candidates, never a tenant's backlog. When some lanes offered fewer than their quota, the claim
/// can return fewer items than it asked for while a lane cut short by its share has more; its summary says so
/// (<c>more</c>) and the node claims again at once (while a claim takes anything). A lane cut short by its quota within
/// one claim keeps the lower virtual time, so the next claims make up what it did not get.
/// </para>
/// <para>
/// <b>A start rate per tenant</b> (<c>tenant_starts_per_second</c> R, <c>tenant_start_burst</c> B, schema version 12):
/// <see cref="RatedClaim"/>, run when the settings version the node claims under sets R (a claim under another version
/// claims nothing, whichever text it ran). Each tenant has a token bucket, a row of <c>tenant_tokens</c> (none: full),
/// read by the claim refilled to the database's clock taken once the lock is held (clock_timestamp: the claims of the
/// queue take turns, so that clock only moves forward from one claim to the next, unless the server's clock is set
/// back, which refills nothing) and capped at B; the tenant's room is at most its whole tokens, so a tenant without one
/// offers nothing and the other lanes take the turns; the claim writes the bucket of each tenant it took items of, less
/// what it took, in its own transaction. A tenant not written keeps its row: refilled later from the same point, it holds
/// what it would have held had it been written (refilling and capping commute). So the claims of a tenant, fleet-wide,
/// are at most B + R × L in any span of L seconds of that clock, and at most B + R × L after a change of R or B (the
/// bucket is capped at the new B at the first claim after it). The summary's wake-up (next_due) is also when the next
/// token of a rated tenant left with less than one is due. Without R, <see cref="Claim"/> is the statement it was before
/// R existed: no bucket read or written.
/// </para>
/// </remarks>
internal sealed class FairClaimSql
{
    /// <summary>The first key of the fair claims' advisory lock (its own key space: the two-key form): "BWFS".</summary>
    public const int LockClass = 0x42574653;

    public FairClaimSql(StorageSql sql)
    {
        Lock = $"SELECT pg_advisory_xact_lock({LockClass}, hashtext('{sql.Schema.Replace("'", "''", StringComparison.Ordinal)}.' || $1::text))";
        Claim = Build(sql, rated: false);
        RatedClaim = Build(sql, rated: true);

        CleanupVtime = $"""
            DELETE FROM {sql.TenantVtime} v WHERE v.queue = $1 AND v.tenant = ANY(ARRAY(
                SELECT t.tenant FROM {sql.TenantVtime} t
                WHERE t.queue = $1
                  AND (t.vtime <= (SELECT k.vtime FROM {sql.QueueVtime} k WHERE k.queue = $1)
                       OR NOT EXISTS (SELECT 1 FROM {sql.Items} i WHERE i.queue = $1 AND i.state = 0))
                LIMIT $2))
            """;
        ResetClock = $"DELETE FROM {sql.QueueVtime} k WHERE k.queue = $1 AND NOT EXISTS (SELECT 1 FROM {sql.TenantVtime} v WHERE v.queue = $1)";
        CleanupTokens = $"""
            DELETE FROM {sql.TenantTokens} b WHERE b.queue = $1 AND b.tenant = ANY(ARRAY(
                SELECT t.tenant FROM {sql.TenantTokens} t LEFT JOIN {sql.QueueSettings} s ON s.queue = $1
                WHERE t.queue = $1
                  AND (s.tenant_starts_per_second IS NULL
                       OR t.tokens + s.tenant_starts_per_second * greatest(extract(epoch FROM clock_timestamp() - t.tokens_at)::double precision, 0)
                          >= coalesce(s.tenant_start_burst, greatest(ceil(s.tenant_starts_per_second), 1)))
                LIMIT $2))
            """;
    }

    /// <summary>Gets the cleanup of the virtual times that mean what no row means ($1 queue, at most $2 rows; run under <see cref="Lock"/>; see the remarks).</summary>
    public string CleanupVtime { get; }

    /// <summary>Gets the removal of a queue's virtual clock once no tenant row is left ($1 queue; run under <see cref="Lock"/> after <see cref="CleanupVtime"/>).</summary>
    public string ResetClock { get; }

    /// <summary>Gets the cleanup of the start-rate buckets that mean what no row means ($1 queue, at most $2 rows; run under <see cref="Lock"/>; see the remarks).</summary>
    public string CleanupTokens { get; }

    /// <summary>Gets the statement that makes the queue's fair claims take turns ($1 queue), run first in the claim's batch.</summary>
    public string Lock { get; }

    /// <summary>Gets the fair claim (see the remarks), for settings without a per-tenant start rate.</summary>
    public string Claim { get; }

    /// <summary>
    /// Gets the fair claim under a per-tenant start rate (<c>tenant_starts_per_second</c>; see the remarks): the same
    /// claim, each rated tenant's room also bounded by its whole tokens, and its bucket spent for what it took.
    /// </summary>
    public string RatedClaim { get; }

    private static string Build(StorageSql sql, bool rated)
    {
        var items = sql.Items;

        // An item may be claimed as the plain claim decides it: no older unfinished item of its key and no running item
        // of its key (index probes, OFFSET 0 keeps them probes), its key not paused.
        string Free(string c) => $"""
            ({c}.ordering_key IS NULL OR (
                NOT EXISTS (
                    SELECT 1 FROM {items} e
                    WHERE e.queue = {c}.queue AND e.ordering_key = {c}.ordering_key AND e.state IN (0, 1, 5) AND e.id < {c}.id
                    OFFSET 0)
                AND NOT EXISTS (
                    SELECT 1 FROM {items} r
                    WHERE r.queue = {c}.queue AND r.ordering_key = {c}.ordering_key AND r.state = 1
                    OFFSET 0)
                AND NOT {sql.KeyPausedNow("$1", c + ".ordering_key")}))
            """;

        // The summary's more: a lane cut short by its share held more than it offered while the claim took fewer than
        // $2. Its lines after the first are indented for their place in the statement (see StorageSql.ClaimResult).
        const string More = """
            (SELECT count(*) FROM claimed) < $2 AND EXISTS (
                       SELECT 1 FROM quotas q
                       WHERE q.share_bound
                         AND (SELECT count(*) FROM placed p WHERE p.tenant IS NOT DISTINCT FROM q.tenant AND p.place <= q.quota) >= q.quota)
            """;

        // Parameters as the plain claim's: $1 queue, $2 how many, $3 node, $4 lease, $5 the settings version the node
        // claims under (nothing is claimed unless it is still the queue's), $6 how many ready items to count as waiting.
        // Promotions first, as the plain claim makes them. Then the tenants with ready items (a skip scan of
        // items_ready_tenant), each with its weight, bound and running items; the lane of items without a tenant; each
        // lane's quota and its candidates in claim order; the candidates of lowest virtual finish time; locked by id (skipping rows
        // another transaction holds, and rows changed since this snapshot: xmin), claimed. Returns the plain claim's two
        // row types (see PlainClaimRow) and one more summary column, more: whether a lane held more ready items than its
        // quota while the claim took fewer than $2 (the node claims again at once).
        // Under a per-tenant start rate (rated): the rate and burst with the settings; the database's clock once the lock
        // is held (clock_timestamp, not now(): the transaction's start, taken before the lock, is not in the claims'
        // order); each rated tenant's tokens, its row refilled to that clock (no row: a full bucket), capped by the burst;
        // its room no more than its whole tokens (none: it offers nothing, and the other lanes take the turns); and its
        // row written for what it took (spent). The wake-up is also when the next token of a tenant left short is due.
        var tokens = sql.TenantTokens;
        var rate = rated ? ",\n                       s.tenant_starts_per_second AS rate, coalesce(s.tenant_start_burst, greatest(ceil(s.tenant_starts_per_second), 1))::double precision AS burst" : "";
        var clock = rated ? "\n            clock AS MATERIALIZED (SELECT clock_timestamp() AS at)," : "";
        var laneTokens = rated
            ? ",\n                       CASE WHEN st.rate IS NULL THEN NULL ELSE least(st.burst, coalesce("
              + "\n                           (SELECT b.tokens + st.rate * greatest(extract(epoch FROM (SELECT at FROM clock) - b.tokens_at)::double precision, 0)"
              + $"\n                            FROM {tokens} b WHERE b.queue = $1 AND b.tenant = l.tenant), st.burst)) END AS tokens"
            : "";
        var looseTokens = rated ? ", NULL::double precision" : "";
        var passTokens = rated ? ", tokens" : "";
        var room = "CASE WHEN tenant IS NULL OR bound IS NULL THEN $2::bigint ELSE least($2::bigint, greatest(bound - running, 0)) END";
        room = rated ? $"least({room}, coalesce(floor(tokens)::bigint, $2::bigint))" : room;
        // The claimed rows always carry their tenant (the last column of the result; the rated claim's spent tokens count by it).
        var spent = rated
            ? "\n            spent AS ("
              + $"\n                INSERT INTO {tokens} AS b (queue, tenant, tokens, tokens_at)"
              + "\n                SELECT $1, q.tenant, q.tokens - n.taken, (SELECT at FROM clock)"
              + "\n                FROM (SELECT c.tenant, count(*) AS taken FROM claimed c WHERE c.tenant IS NOT NULL GROUP BY c.tenant) n"
              + "\n                JOIN quotas q ON q.tenant = n.tenant"
              + "\n                WHERE q.tokens IS NOT NULL"
              + "\n                ON CONFLICT (queue, tenant) DO UPDATE SET tokens = excluded.tokens, tokens_at = excluded.tokens_at"
              + "\n                RETURNING b.tenant, b.tokens),"
            : "";
        // The service received: each tenant taken from at its new virtual time, the clock at the least start of the lanes
        // that offered (see the remarks). Written only when the claim took something.
        var vtime = sql.TenantVtime;
        var served = "\n            served AS ("
              + $"\n                INSERT INTO {vtime} AS v (queue, tenant, vtime)"
              + "\n                SELECT $1, coalesce(q.tenant, ''), q.start + n.taken::double precision / q.weight"
              + "\n                FROM (SELECT c.tenant, count(*) AS taken FROM claimed c GROUP BY c.tenant) n"
              + "\n                JOIN quotas q ON q.tenant IS NOT DISTINCT FROM n.tenant"
              + "\n                ON CONFLICT (queue, tenant) DO UPDATE SET vtime = excluded.vtime"
              + "\n                RETURNING 1),"
              + "\n            ticked AS ("
              + $"\n                INSERT INTO {sql.QueueVtime} AS k (queue, vtime)"
              + "\n                SELECT $1, min(p.start) FROM placed p HAVING EXISTS (SELECT 1 FROM claimed)"
              + "\n                ON CONFLICT (queue) DO UPDATE SET vtime = greatest(k.vtime, excluded.vtime)"
              + "\n                RETURNING 1),";
        var scheduled = $"extract(epoch FROM (SELECT min(run_at) FROM {items} WHERE queue = $1 AND state = 5 AND run_at > now()) - now())::double precision";
        var nextDue = rated
            ? $"least({scheduled},"
              + "\n                         (SELECT min((1 - coalesce(sp.tokens, q.tokens)) / st.rate) FROM quotas q CROSS JOIN settings st LEFT JOIN spent sp ON sp.tenant = q.tenant"
              + "\n                          WHERE q.tokens IS NOT NULL AND coalesce(sp.tokens, q.tokens) < 1))"
            : scheduled;

        return $"""
            WITH RECURSIVE promoted AS (
                UPDATE {items} SET state = 0 WHERE id = ANY(ARRAY(
                    SELECT id FROM {items} WHERE queue = $1 AND state = 5 AND run_at <= now()
                    ORDER BY run_at LIMIT {StorageSql.MaxPromotions} FOR UPDATE SKIP LOCKED))
                RETURNING 1),
            settings AS (
                SELECT coalesce(s.version, 0) AS version, coalesce(s.tenant_default_weight, 1) AS default_weight,
                       s.tenant_weights AS weights, s.max_running_per_tenant AS bound{rate}
                FROM (SELECT 1) one LEFT JOIN {sql.QueueSettings} s ON s.queue = $1),{clock}
            vclock AS MATERIALIZED (SELECT coalesce((SELECT k.vtime FROM {sql.QueueVtime} k WHERE k.queue = $1), 0) AS v),
            seen(tenant) AS (
                (SELECT t.tenant FROM {items} t WHERE t.queue = $1 AND t.state = 0 AND t.tenant IS NOT NULL ORDER BY t.tenant LIMIT 1)
                UNION ALL
                SELECT (SELECT t.tenant FROM {items} t
                        WHERE t.queue = $1 AND t.state = 0 AND t.tenant IS NOT NULL AND t.tenant > s.tenant
                        ORDER BY t.tenant LIMIT 1)
                FROM seen s WHERE s.tenant IS NOT NULL),
            loose AS (
                SELECT h.id, h.version, h.priority, h.run_at FROM (
                    SELECT c.id, c.xmin AS version, c.priority, c.run_at, c.tenant, c.queue, c.ordering_key FROM {items} c
                    WHERE c.queue = $1 AND c.state = 0 AND c.run_at <= now()
                    ORDER BY c.priority DESC, c.run_at, c.id
                    LIMIT ($2::bigint * 2 + 16)) h
                WHERE h.tenant IS NULL AND {Free("h")}),
            lanes AS (
                SELECT l.tenant, greatest(coalesce((st.weights ->> l.tenant)::integer, st.default_weight), 1) AS weight, st.bound,
                       (SELECT count(*) FROM {items} r WHERE r.queue = $1 AND r.state = 1 AND r.tenant = l.tenant) AS running,
                       greatest((SELECT v.vtime FROM {vtime} v WHERE v.queue = $1 AND v.tenant = l.tenant), (SELECT v FROM vclock)) AS start{laneTokens}
                FROM seen l CROSS JOIN settings st
                WHERE l.tenant IS NOT NULL
                UNION ALL
                SELECT NULL, greatest(st.default_weight, 1), NULL,
                       (SELECT count(*) FROM {items} r WHERE r.queue = $1 AND r.state = 1 AND r.tenant IS NULL),
                       greatest((SELECT v.vtime FROM {vtime} v WHERE v.queue = $1 AND v.tenant = ''), (SELECT v FROM vclock)){looseTokens}
                FROM settings st WHERE EXISTS (SELECT 1 FROM loose)),
            shares AS (
                SELECT tenant, weight, running, start{passTokens},
                       greatest(ceil(($2 + sum(running) OVER ())::numeric * weight / sum(weight) OVER () - running), 1)::bigint AS share,
                       {room} AS room
                FROM lanes),
            quotas AS (
                SELECT tenant, weight, running, start, least(share, room) AS quota, share < room AS share_bound{passTokens} FROM shares),
            offered AS (
                SELECT c.id, c.version, c.priority, c.run_at, q.tenant, q.weight, q.running, q.start, q.quota
                FROM quotas q CROSS JOIN LATERAL (
                    SELECT c.id, c.xmin AS version, c.priority, c.run_at FROM {items} c
                    WHERE c.queue = $1 AND c.tenant = q.tenant AND c.state = 0 AND c.run_at <= now() AND {Free("c")}
                    ORDER BY c.priority DESC, c.run_at, c.id
                    LIMIT q.quota) c
                WHERE q.tenant IS NOT NULL AND q.quota > 0
                UNION ALL
                SELECT l.id, l.version, l.priority, l.run_at, NULL, q.weight, q.running, q.start, q.quota
                FROM loose l CROSS JOIN quotas q WHERE q.tenant IS NULL),
            placed AS (
                SELECT o.*, row_number() OVER (PARTITION BY o.tenant ORDER BY o.priority DESC, o.run_at, o.id) AS place FROM offered o),
            chosen AS (
                SELECT p.id, p.version FROM placed p
                WHERE p.place <= p.quota
                  AND (SELECT version FROM settings) = $5::bigint
                  AND NOT {sql.QueuePausedNow("$1")}
                ORDER BY p.start + p.place::double precision / p.weight, p.running, p.priority DESC, p.run_at, p.id
                LIMIT $2),
            locked AS (
                SELECT i.id FROM {items} i
                WHERE i.id = ANY(ARRAY(SELECT id FROM chosen))
                  AND i.xmin = (SELECT c.version FROM chosen c WHERE c.id = i.id)
                FOR UPDATE SKIP LOCKED),
            {sql.ClaimedPeekWaiting("locked", afterClaimed: spent + served)}
            {sql.ClaimResult("(SELECT version FROM settings)", More, rated ? nextDue : null)}
            """;
    }
}
