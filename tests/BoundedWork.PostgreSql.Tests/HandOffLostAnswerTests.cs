using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// An outcome write that hands off its keys' next items commits, and its answer is lost (a fault after the commit, as
/// a connection cut just then): the writer writes the batch again, which changes nothing, and says so truthfully.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class HandOffLostAnswerTests(PostgresFixture postgres)
{
    [Fact]
    public async Task HandOffCommitted_AnswerLost_TheRetryDoesNotLogTheOutcomesAsNotRecorded_AndEveryItemRuns()
    {
        var schema = await postgres.NewSchemaAsync();
        var collector = new FakeLogCollector();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: 2);
        await producer.Queue.EnqueueManyAsync([.. Enumerable.Range(0, 3).Select(i => new Notice(i, "k"))]);

        // The key's first two items run until the fault is in place; the first to end hands off the third.
        using var go = new ManualResetEventSlim();
        var behavior = new Behavior { Handle = (_, _) => Assert.True(go.Wait(QueueNode.Patience)) };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            queue: o => o.OrderingKey = n => n.Key,
            storage: o => o.LeaseDuration = TimeSpan.FromSeconds(2),
            services: s => s.AddSingleton<ILoggerProvider>(new FakeLoggerProvider(collector)));
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        var lost = 0;
        queue.Outcomes.AfterHandOffCommit = () =>
        {
            if (Interlocked.Exchange(ref lost, 1) == 0)
            {
                throw new NpgsqlException("The answer to the commit was lost (the test's fault).");
            }
        };
        go.Set();

        // The third item was claimed by the committed hand-off but never handed to the node: reaped when its lease ends, it runs.
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Select(d => d.Item.Number).Distinct().Count() == 3, "every item ran");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 2").Result == 3, "every outcome is written");

        Assert.Equal(1, Volatile.Read(ref lost));
        var logs = collector.GetSnapshot();
        Assert.DoesNotContain(logs, log => log.Id.Name == "OutcomesNotRecorded");
        var again = Assert.Single(logs, log => log.Id.Name == "OutcomesWrittenAgain");
        Assert.Equal(LogLevel.Information, again.Level);
        Assert.Contains("answer was lost", again.Message, StringComparison.Ordinal);
    }
}
