namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The statements of a node's permit grant (<see cref="ClusterPermits"/>), run by its cluster loop in one short
/// transaction: <see cref="LockSettings"/> (the queue's settings row <c>FOR UPDATE</c>: the grant transactions of a
/// queue take turns, and each later statement's snapshot sees every grant committed before), <see cref="ReadGrants"/>,
/// the allocation in the node (<see cref="PermitAllocation"/>), then <see cref="WriteGrant"/> and the commit. Claims
/// never take this lock.
/// </summary>
internal sealed class PermitGrantSql
{
    public PermitGrantSql(StorageSql sql)
    {
        var settings = sql.QueueSettings;
        var nodes = sql.Nodes;

        // The limits, with the burst's default (ceil(rate), at least 1), the per-key limit, the version and whether fair
        // share is on and its per-tenant start rate (read with the version: the node claims fairly, and rated, exactly under
        // the versions that say so); no row: no limits.
        LockSettings = $"""
            SELECT s.max_running, s.starts_per_second,
                   coalesce(s.start_burst, greatest(ceil(s.starts_per_second), 1))::integer, s.max_running_per_key, s.version, s.fair_share,
                   s.tenant_starts_per_second
            FROM {settings} s WHERE s.queue = $1 FOR UPDATE
            """;

        // The other live nodes' grants ($2 this node's name), then one last row with a null name: the queue's running
        // rows owned by no live node with a grant (a killed or cut-off node's claims, until they are reaped), except
        // this node's own ($3, its lease owner: those are counted by the node itself, as its permits in use).
        ReadGrants = $"""
            SELECT n.node, n.worker_count, n.permit_demand, n.granted_running, n.granted_rate, n.granted_burst, NULL::bigint
            FROM {nodes} n WHERE n.queue = $1 AND n.expires_at > now() AND n.node <> $2
            UNION ALL
            SELECT NULL, NULL, NULL, NULL, NULL, NULL, (
                SELECT count(*) FROM {sql.Items} i
                WHERE i.queue = $1 AND i.state = 1 AND i.lease_owner IS DISTINCT FROM $3
                  AND NOT EXISTS (
                      SELECT 1 FROM {nodes} n WHERE n.queue = $1 AND n.lease_owner = i.lease_owner AND n.expires_at > now() AND n.node <> $2))
            """;

        // This node's grant; its row must be live (the heartbeat wrote it just before). $3 lease owner, $4 demand,
        // $5 running permits, $6 in use, $7 rate share, $8 burst share.
        WriteGrant = $"""
            UPDATE {nodes} SET lease_owner = $3, permit_demand = $4, granted_running = $5, running_in_use = $6,
                granted_rate = $7, granted_burst = $8
            WHERE queue = $1 AND node = $2 AND expires_at > now()
            """;
    }

    public string LockSettings { get; }

    public string ReadGrants { get; }

    public string WriteGrant { get; }
}
