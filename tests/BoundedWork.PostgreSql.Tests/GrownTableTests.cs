using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// A queue's table grows by orders of magnitude between two analyzes (a bulk insert, a backlog); the statements the
/// nodes prepared while it was small must not read all of it afterwards.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class GrownTableTests
{
    /// <summary>
    /// Regression: the outcome write's prepared statement got a generic plan while the table was small (a sequential
    /// scan and a hash join are cheapest then) and kept it once the table was large, so each write of a few rows read
    /// the whole table: with 200,000 rows, 10,000 to 15,000 buffers per write (it failed so before the statements were
    /// written for index paths only). Claims are checked the same way, over a grown backlog of ordered items, whose key
    /// checks a cached plan could turn into a scan of every pending item.
    /// </summary>
    [Fact]
    public async Task ClaimsAndOutcomeWrites_AfterTheTableGrew_ReadOnlyWhatTheyNeed()
    {
        await using var server = await PostgresServer.StartAsync("shared_preload_libraries=pg_stat_statements");
        await Execute(server, "CREATE EXTENSION pg_stat_statements");
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(server.ConnectionString, "grown", behavior,
            queue: o => o.OrderingKey = n => n.Key, storage: o => o.ClaimsPerWorker = 5);
        await Execute(server, "ALTER TABLE grown.items SET (autovacuum_enabled = false)"); // no analyze will refresh the plans meanwhile

        // While the table is small, an analyze (as autovacuum runs one after the first few hundred rows), then enough
        // claims and outcome writes for their prepared statements to settle on generic plans made with those statistics.
        for (var i = 0; i < 30; i++)
        {
            if (i == 10)
            {
                await Execute(server, "ANALYZE grown.items");
            }

            await node.Queue.EnqueueAsync(new Notice(i, "warm-" + (i % 3)));
            var handled = i + 1;
            await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == handled, $"item {i} is handled");
            await DurableQueueTests.WaitAsync(() => Scalar<long>(server, "SELECT count(*) FROM grown.items WHERE state = 2") == handled, $"item {i}'s outcome is written");
        }

        // The table grows two hundredfold (finished rows kept for their retention), with a backlog of 20,000 ordered
        // items in 200 keys; the node drains part of it.
        await Execute(server, """INSERT INTO grown.items (queue, payload, state, finished_at) SELECT 'notices', '{"Number": -1}', 2, now() FROM generate_series(1, 200000)""");
        await Execute(server, "SELECT pg_stat_statements_reset()");
        await node.Queue.EnqueueManyAsync(Enumerable.Range(1000, 20_000).Select(n => new Notice(n, "key-" + (n % 200))));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count >= 530, "500 items of the backlog are handled");

        var pages = Scalar<long>(server, "SELECT pg_relation_size('grown.items') / 8192");
        foreach (var (statement, pattern) in new[] { ("outcome write", "%BoundedWork outcomes%"), ("claim", "WITH promoted AS%") })
        {
            var calls = Scalar<long>(server, $"SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements WHERE query LIKE '{pattern}'");
            var buffers = Scalar<long>(server, $"SELECT coalesce(sum(shared_blks_hit + shared_blks_read), 0)::bigint FROM pg_stat_statements WHERE query LIKE '{pattern}'");
            Assert.True(calls > 0, $"no {statement} ran");
            Assert.True(buffers / (double)calls < pages / 10.0, $"{calls} calls of the {statement} read {buffers} buffers ({buffers / calls} per call); the table has {pages} pages.");
        }
    }

    private static async Task Execute(PostgresServer server, string sql)
    {
        await using var connection = new Npgsql.NpgsqlConnection(server.ConnectionString);
        await connection.OpenAsync();
        await using var command = new Npgsql.NpgsqlCommand(sql, connection);
        await command.ExecuteNonQueryAsync();
    }

    private static T Scalar<T>(PostgresServer server, string sql)
    {
        using var connection = new Npgsql.NpgsqlConnection(server.ConnectionString);
        connection.Open();
        using var command = new Npgsql.NpgsqlCommand(sql, connection);
        return (T)command.ExecuteScalar()!;
    }
}
