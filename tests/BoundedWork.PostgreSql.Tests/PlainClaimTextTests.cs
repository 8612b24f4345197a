using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The plain claim's text, pinned byte for byte (schema "bw"): a queue without fair share claims with exactly the
/// statement it always did, whatever fragments it is built from (<see cref="StorageSql.ClaimedPeekWaiting"/> and
/// <see cref="StorageSql.ClaimResult"/> are shared with the fair claim). A change to it is deliberate: update the text
/// here with it, and look at its plans (ClaimStatementTests, ClaimBoundTests). The last change: each claimed row's
/// tenant, a last column (null in the summary), for the per-tenant outcome counts.
/// </summary>
public sealed class PlainClaimTextTests
{
    private const string Expected = """
        WITH promoted AS (
            UPDATE "bw".items SET state = 0 WHERE id = ANY(ARRAY(
                SELECT id FROM "bw".items WHERE queue = $1 AND state = 5 AND run_at <= now()
                ORDER BY run_at LIMIT 1000 FOR UPDATE SKIP LOCKED))
            RETURNING 1),
        next AS (
            SELECT c.id FROM "bw".items c
            WHERE c.queue = $1 AND c.state = 0 AND c.run_at <= now()
              AND (c.ordering_key IS NULL OR (
                  NOT EXISTS (
                      SELECT 1 FROM "bw".items e
                      WHERE e.queue = c.queue AND e.ordering_key = c.ordering_key AND e.state IN (0, 1, 5) AND e.id < c.id
                      OFFSET 0)
                  AND NOT EXISTS (
                      SELECT 1 FROM "bw".items r
                      WHERE r.queue = c.queue AND r.ordering_key = c.ordering_key AND r.state = 1
                      OFFSET 0)))
              AND coalesce((SELECT s.version FROM "bw".queue_settings s WHERE s.queue = $1), 0) = $5::bigint
              AND NOT EXISTS (SELECT 1 FROM "bw".queue_settings ps WHERE ps.queue = $1 AND ps.paused_reason IS NOT NULL AND (ps.paused_until IS NULL OR ps.paused_until > now()))
              AND (c.ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM "bw".paused_keys pk WHERE pk.queue = $1 AND pk.ordering_key = c.ordering_key AND (pk.paused_until IS NULL OR pk.paused_until > now()) OFFSET 0))
            ORDER BY c.priority DESC, c.run_at, c.id
            LIMIT $2
            FOR UPDATE SKIP LOCKED),
        claimed AS (
            UPDATE "bw".items i SET state = 1, attempts = i.attempts + 1, delivery = i.delivery + 1, lease_owner = $3, lease_until = now() + $4
            WHERE i.id = ANY(ARRAY(SELECT id FROM next))
            RETURNING i.id, i.payload::text AS payload, i.attempts, i.attempt_base, i.enqueued_at, i.ordering_key IS NOT NULL AS ordered,
                      i.traceparent, i.tracestate, i.priority, i.run_at, i.ordering_key, i.delivery, i.tenant),
        peek AS (
            SELECT p.id, p.run_at FROM "bw".items p
            WHERE p.queue = $1 AND p.state = 0 AND p.run_at <= now()
            ORDER BY p.priority DESC, p.run_at, p.id
            LIMIT $6),
        waiting AS (SELECT run_at FROM peek WHERE id <> ALL(ARRAY(SELECT id FROM claimed)))
        SELECT id, payload, attempts, attempt_base, enqueued_at, ordered, traceparent, tracestate, priority, run_at, ordering_key, delivery,
               false AS summary, NULL::integer AS promoted, NULL::double precision AS next_due, NULL::bigint AS version,
               NULL::bigint AS waiting, NULL::double precision AS oldest_wait, tenant
        FROM claimed
        UNION ALL
        SELECT NULL::bigint, NULL::text, NULL::integer, NULL::integer, NULL::timestamptz, NULL::boolean, NULL::text, NULL::text,
               NULL::smallint, NULL::timestamptz, NULL::text, NULL::bigint,
               true, (SELECT count(*) FROM promoted)::integer,
               extract(epoch FROM (SELECT min(run_at) FROM "bw".items WHERE queue = $1 AND state = 5 AND run_at > now()) - now())::double precision,
               coalesce((SELECT s.version FROM "bw".queue_settings s WHERE s.queue = $1), 0), (SELECT count(*) FROM waiting),
               coalesce(extract(epoch FROM now() - (SELECT min(run_at) FROM waiting)), 0)::double precision,
               NULL::text
        """;

    [Fact]
    public void Claim_BuiltFromTheSharedFragments_IsTheStatementItAlwaysWas() =>
        Assert.Equal(Expected, new StorageSql("bw").Claim);

    /// <summary>
    /// The carrying claim is the plain claim with the carried outcomes' CTEs first (after a marker) and one more summary
    /// column, <c>recorded</c>: its CTEs and result are the plain claim's, byte for byte, whatever they are built from.
    /// </summary>
    [Fact]
    public void ClaimCarrying_IsThePlainClaim_WithTheCarriedCtesFirst_ItsCandidatesGatedOnThem_AndTheRecordedColumn()
    {
        var sql = new StorageSql("bw");
        var carrying = sql.ClaimCarrying("carried AS (SELECT 1)", "(SELECT 7)");
        var result = Expected.IndexOf("SELECT id, payload,", StringComparison.Ordinal);

        Assert.Equal(
            "/* BoundedWork outcomes, with a claim */ WITH carried AS (SELECT 1),\n" + Expected["WITH ".Length..result].Replace(
                "WHERE c.queue = $1 AND c.state = 0 AND c.run_at <= now()\n",
                "WHERE c.queue = $1 AND c.state = 0 AND c.run_at <= now()\n      AND ((SELECT 7)) >= 0\n",
                StringComparison.Ordinal)
            + Expected[result..].Replace(
                "NULL::double precision AS oldest_wait, tenant",
                "NULL::double precision AS oldest_wait, NULL::bigint AS recorded, tenant",
                StringComparison.Ordinal).Replace(
                "(SELECT min(run_at) FROM waiting)), 0)::double precision,\n",
                "(SELECT min(run_at) FROM waiting)), 0)::double precision,\n       (SELECT 7) AS recorded,\n",
                StringComparison.Ordinal),
            carrying);
    }
}
