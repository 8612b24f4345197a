using System.Text.Json;
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
        var schema = await postgres.NewSchemaAsync();
        var sql = new StorageSql(schema);
        await using (var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString))
        {
            await SchemaMigrator.MigrateAsync(dataSource, sql, CancellationToken.None);
        }

        await using var fill = new NpgsqlConnection(postgres.ConnectionString);
        await fill.OpenAsync();
        await using var command = new NpgsqlCommand(string.Empty, fill) { CommandTimeout = 0 }; // a million rows on a busy machine
        command.CommandText = $$"""
            INSERT INTO {{sql.QueueSettings}} (queue, fair_share, tenant_weights) VALUES ('{{Queue}}', true, '{"t7": 3}');
            INSERT INTO {{sql.Items}} (queue, payload, tenant)
            SELECT '{{Queue}}', '{}', 't' || (g % {{Tenants}}) FROM generate_series(0, {{(Tenants * PerTenant) - 1}}) g;
            UPDATE {{sql.Items}} SET state = 1, attempts = 1, lease_owner = 'other', lease_until = now() + interval '1 hour'
            WHERE id <= {{Tenants * 2}};
            ANALYZE {{sql.Items}};
            """;
        await command.ExecuteNonQueryAsync();

        foreach (var generic in new[] { false, true })
        {
            var (examined, claimed, _) = await ExplainAsync(sql, generic);
            output.WriteLine($"{(generic ? "generic" : "custom")} plan: {examined} rows examined, {claimed} claimed");
            Assert.Equal(Count, claimed);
            Assert.True(examined <= Bound, $"{examined} rows examined ({(generic ? "generic" : "custom")} plan), more than {Bound}.");
        }

        // Under a per-tenant start rate: the same rows of items, and at most one bucket row per tenant with ready items
        // (a primary-key probe), every tenant holding a bucket row.
        command.CommandText = $"""
            UPDATE {sql.QueueSettings} SET tenant_starts_per_second = 100 WHERE queue = '{Queue}';
            INSERT INTO {sql.TenantTokens} (queue, tenant, tokens, tokens_at) SELECT '{Queue}', 't' || g, 50, now() FROM generate_series(0, {Tenants - 1}) g;
            ANALYZE {sql.TenantTokens};
            """;
        await command.ExecuteNonQueryAsync();
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
        await using var transaction = await connection.BeginTransactionAsync();
        await using (var prepare = new NpgsqlCommand(
            $"SET LOCAL plan_cache_mode = {(generic ? "force_generic_plan" : "force_custom_plan")}; SET LOCAL jit = off; PREPARE measured (text, int, text, interval, bigint, int) AS {(rated ? new FairClaimSql(sql).RatedClaim : new FairClaimSql(sql).Claim)}", connection, transaction))
        {
            await prepare.ExecuteNonQueryAsync();
        }

        string json;
        await using (var explain = new NpgsqlCommand($"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE measured ('{Queue}', {Count}, 'test', interval '1 hour', 0, 0)", connection, transaction))
        {
            json = (string)(await explain.ExecuteScalarAsync())!;
        }

        await transaction.RollbackAsync();
        await using (var deallocate = new NpgsqlCommand("DEALLOCATE measured", connection))
        {
            await deallocate.ExecuteNonQueryAsync();
        }

        using var document = JsonDocument.Parse(json);
        var plan = document.RootElement[0].GetProperty("Plan");
        return (Examined(plan), Claimed(plan), Examined(plan, "tenant_tokens"));
    }

    private static long Examined(JsonElement node, string table = "items")
    {
        long sum = 0;
        if (node.GetProperty("Node Type").GetString()!.Contains("Scan", StringComparison.Ordinal)
            && node.TryGetProperty("Relation Name", out var relation) && relation.GetString() == table)
        {
            var perLoop = node.GetProperty("Actual Rows").GetDouble() + Property(node, "Rows Removed by Filter") + Property(node, "Rows Removed by Index Recheck");
            sum += (long)Math.Ceiling(perLoop * node.GetProperty("Actual Loops").GetDouble());
        }

        if (node.TryGetProperty("Plans", out var children))
        {
            foreach (var child in children.EnumerateArray())
            {
                sum += Examined(child, table);
            }
        }

        return sum;
    }

    private static long Claimed(JsonElement node)
    {
        long claimed = 0;
        if (node.GetProperty("Node Type").GetString() == "ModifyTable"
            && node.TryGetProperty("Subplan Name", out var name) && name.GetString() == "CTE claimed")
        {
            claimed = (long)node.GetProperty("Actual Rows").GetDouble();
        }

        if (node.TryGetProperty("Plans", out var children))
        {
            foreach (var child in children.EnumerateArray())
            {
                claimed += Claimed(child);
            }
        }

        return claimed;
    }

    private static double Property(JsonElement node, string name) => node.TryGetProperty(name, out var value) ? value.GetDouble() : 0;
}
