using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>A stored queue keeps flowing while the ThreadPool is starved: its loops run on threads of their own.</summary>
[Collection(PostgresCollection.Name)]
public sealed class StarvationTests(PostgresFixture postgres)
{
    [Fact]
    public async Task StarvedThreadPool_ItemsAreStillClaimedHandledAndRecorded()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            // Blocking code enqueues synchronously, on a thread of its own.
            var enqueued = 0;
            var producer = new Thread(() =>
            {
                for (var i = 0; i < 20; i++)
                {
                    if (node.Queue.TryEnqueue(new Notice(i)))
                    {
                        Interlocked.Increment(ref enqueued);
                    }
                }
            });
            producer.Start();
            Assert.True(producer.Join(QueueNode.Patience), "The producer did not finish.");
            Assert.Equal(20, enqueued);

            // Nothing below awaits: the checks block this thread, which is not a pool thread.
            Assert.True(SpinWait.SpinUntil(() => behavior.Deliveries.Count == 20, QueueNode.Patience), $"{behavior.Deliveries.Count} of 20 items were handled.");
            Assert.True(SpinWait.SpinUntil(() => CountCompleted(schema) == 20, QueueNode.Patience), "The outcomes were not written.");
            Assert.True(SpinWait.SpinUntil(() => node.Storage.Statistics is { Completed: 20, IsAvailable: true }, QueueNode.Patience), "The statistics were not read.");
            Assert.True(starvation.IsStarved, "The pool was not starved the whole time: the probe ran.");
        }
    }

    private long CountCompleted(string schema)
    {
        using var connection = new NpgsqlConnection(postgres.ConnectionString);
        connection.Open();
        using var command = new NpgsqlCommand($"SELECT count(*) FROM {schema}.items WHERE state = 2", connection);
        return (long)command.ExecuteScalar()!;
    }
}
