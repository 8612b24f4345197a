using BoundedWork.PostgreSql.Internal;
using Npgsql;
using Xunit.Abstractions;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// What one fair claim reads, counted by the database (EXPLAIN ANALYZE), not timed: 1,000 tenants with 1,000 ready
/// items each (a million rows) and two running items each. The rows the table's scans examine (returned, filtered out)
/// grow with the tenants that have ready items and the items asked for, never with a tenant's backlog: per tenant one
/// descent of the skip scan, an index-only count of its running items and its quota of candidates (here 1), plus the
/// head of the claim order for items without a tenant (2 * count + 16) and the locks and updates of the claimed.
/// Custom and generic plans alike.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class FairClaimCostTests(PostgresFixture postgres, ITestOutputHelper output)
{
    private const string Queue = "fair";
    private const int Tenants = 1000;
    private const int PerTenant = 1000;
    private const int Count = 10;

    /// <summary>Per tenant: a skip-scan descent (1), its running items (2), its candidate (1), with slack; plus the head (36) and the claimed.</summary>
    private const long Bound = (Tenants * 5) + 200;

    [Fact]
    public async Task FairClaim_AMillionRowsOfAThousandTenants_ExaminesRowsBoundedByTheTenantsNotTheBacklog()
    {
        var sql = await PlanCost.MigratedSchemaAsync(postgres);
        await PlanCost.FillAsync(postgres, $$"""
            INSERT INTO {{sql.QueueSettings}} (queue, fair_share, tenant_weights) VALUES ('{{Queue}}', true, '{"t7": 3}');
            INSERT INTO {{sql.Items}} (queue, payload, tenant)
            SELECT '{{Queue}}', '{}', 't' || (g % {{Tenants}}) FROM generate_series(0, {{(Tenants * PerTenant) - 1}}) g;
            UPDATE {{sql.Items}} SET state = 1, attempts = 1, lease_owner = 'other', lease_until = now() + interval '1 hour'
            WHERE id <= {{Tenants * 2}};
            ANALYZE {{sql.Items}};
            """);

        foreach (var generic in new[] { false, true })
        {
            var (examined, claimed, _) = await ExplainAsync(sql, generic);
            output.WriteLine($"{(generic ? "generic" : "custom")} plan: {examined} rows examined, {claimed} claimed");
            Assert.Equal(Count, claimed);
            Assert.True(examined <= Bound, $"{examined} rows examined ({(generic ? "generic" : "custom")} plan), more than {Bound}.");
        }

        // Under a per-tenant start rate: the same rows of items, and at most one bucket row per tenant with ready items
        // (a primary-key probe), every tenant holding a bucket row.
        await PlanCost.FillAsync(postgres, $"""
            UPDATE {sql.QueueSettings} SET tenant_starts_per_second = 100 WHERE queue = '{Queue}';
            INSERT INTO {sql.TenantTokens} (queue, tenant, tokens, tokens_at) SELECT '{Queue}', 't' || g, 50, now() FROM generate_series(0, {Tenants - 1}) g;
            ANALYZE {sql.TenantTokens};
            """);
        foreach (var generic in new[] { false, true })
        {
            var (examined, claimed, buckets) = await ExplainAsync(sql, generic, rated: true);
            output.WriteLine($"rated, {(generic ? "generic" : "custom")} plan: {examined} rows examined, {claimed} claimed, {buckets} bucket rows read");
            Assert.Equal(Count, claimed);
            Assert.True(examined <= Bound, $"{examined} rows examined (rated, {(generic ? "generic" : "custom")} plan), more than {Bound}.");
            Assert.True(buckets <= Tenants, $"{buckets} bucket rows read, more than one per tenant.");
        }
    }

    private async Task<(long Examined, long Claimed, long Buckets)> ExplainAsync(StorageSql sql, bool generic, bool rated = false)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        using var document = await PlanCost.ExplainPreparedAsync(connection, rated ? new FairClaimSql(sql).RatedClaim : new FairClaimSql(sql).Claim, "text, int, text, interval, bigint, int",
            $"'{Queue}', {Count}, 'test', interval '1 hour', 0, 0", generic, settings: "SET LOCAL jit = off; ");
        var plan = document.RootElement[0].GetProperty("Plan");
        return (PlanCost.Examined(plan), PlanCost.Claimed(plan), PlanCost.Examined(plan, "tenant_tokens"));
    }
}
