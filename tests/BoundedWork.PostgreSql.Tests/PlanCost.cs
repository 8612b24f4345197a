using System.Text.Json;
using BoundedWork.PostgreSql.Internal;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// What a statement reads, counted by the database (EXPLAIN ANALYZE), not timed: the set-up of the large tables the
/// cost tests fill (a schema the library migrated, a fill without a command timeout) and the reading of their plans
/// (rows examined by scans of the items table, rows claimed). Shared by the claim and search cost tests.
/// </summary>
internal static class PlanCost
{
    /// <summary>A new schema, migrated by the library.</summary>
    public static async Task<StorageSql> MigratedSchemaAsync(PostgresFixture postgres)
    {
        var sql = new StorageSql(await postgres.NewSchemaAsync());
        await using var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString);
        await SchemaMigrator.MigrateAsync(dataSource, sql, CancellationToken.None);
        return sql;
    }

    /// <summary>Runs a fill (a million rows, say) with no command timeout: on a busy machine it takes longer than the default 30 s.</summary>
    public static async Task FillAsync(PostgresFixture postgres, string sql)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(sql, connection) { CommandTimeout = 0 };
        await command.ExecuteNonQueryAsync();
    }

    /// <summary>
    /// Prepares <paramref name="statement"/> (parameter <paramref name="types"/>) with a custom or a generic plan after
    /// <paramref name="settings"/> (<c>SET LOCAL</c> statements, or empty), runs it once under EXPLAIN ANALYZE with
    /// <paramref name="arguments"/> in a transaction that is rolled back, and deallocates it: the plan's JSON document.
    /// </summary>
    public static async Task<JsonDocument> ExplainPreparedAsync(NpgsqlConnection connection, string statement, string types, string arguments, bool generic, string settings = "")
    {
        await using var transaction = await connection.BeginTransactionAsync();
        await using (var prepare = new NpgsqlCommand(
            $"SET LOCAL plan_cache_mode = {(generic ? "force_generic_plan" : "force_custom_plan")}; {settings}PREPARE measured ({types}) AS {statement}", connection, transaction))
        {
            await prepare.ExecuteNonQueryAsync();
        }

        string json;
        await using (var explain = new NpgsqlCommand($"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE measured ({arguments})", connection, transaction))
        {
            json = (string)(await explain.ExecuteScalarAsync())!;
        }

        await transaction.RollbackAsync();
        await using (var deallocate = new NpgsqlCommand("DEALLOCATE measured", connection))
        {
            await deallocate.ExecuteNonQueryAsync();
        }

        return JsonDocument.Parse(json);
    }

    /// <summary>Rows the plan's scans of the items table (or of <paramref name="table"/>) returned or filtered out, over all their loops.</summary>
    public static long Examined(JsonElement node, string table = "items")
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

    /// <summary>Rows the claim's update wrote (the ModifyTable node of the CTE claimed, not the promotion's).</summary>
    public static long Claimed(JsonElement node)
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
