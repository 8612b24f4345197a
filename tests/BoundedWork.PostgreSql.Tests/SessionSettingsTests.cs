using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Every pooled connection of a queue, of its threads' pool and of its asynchronous API's, runs with index scans only,
/// generic plans, and no JIT compilation (a plan compiled again at every execution: 0.1 to 1.4 s for the per-key claim
/// over a deep backlog, see <see cref="KeyedClaimCostTests"/>), whatever the server's defaults.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class SessionSettingsTests(PostgresFixture postgres)
{
    [Fact]
    public async Task QueueConnections_BothPools_UseIndexScansGenericPlansAndNoJit()
    {
        Assert.Equal("on", await postgres.ScalarAsync<string>("SHOW jit")); // the server's default, which the queue overrides
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior());
        var queue = Assert.IsType<PostgreSqlWorkQueue<Notice>>(node.Queue);

        using (var connection = queue.OpenThreadConnection())
        {
            Assert.Equal(("off", "force_generic_plan", "off"), Settings(connection));
        }

        await using var asynchronous = await queue.OpenAsyncApiConnectionAsync();
        Assert.Equal(("off", "force_generic_plan", "off"), Settings(asynchronous));
    }

    private static (string Seqscan, string PlanCache, string Jit) Settings(NpgsqlConnection connection)
    {
        using var command = new NpgsqlCommand("SELECT current_setting('enable_seqscan'), current_setting('plan_cache_mode'), current_setting('jit')", connection);
        using var reader = command.ExecuteReader();
        Assert.True(reader.Read());
        return (reader.GetString(0), reader.GetString(1), reader.GetString(2));
    }
}
