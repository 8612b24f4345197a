using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Consumers are woken by notifications, never left to their polling: each test's consumer polls once an hour, so an
/// item whose wake-up was lost would not run within the test's patience.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class WakeUpTests(PostgresFixture postgres)
{
    private static readonly TimeSpan NoPolling = TimeSpan.FromHours(1);

    [Fact]
    public async Task EnqueuesOnAProducerNode_InItsOwnTransactions_WakeAConsumerThatDoesNotPoll_RoundAfterRound()
    {
        var schema = await postgres.NewSchemaAsync();
        var consumed = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, consumed, node: "consumer", storage: o => o.PollInterval = NoPolling);

        var enqueued = 0;
        for (var round = 1; round <= 20; round++)
        {
            // Bursts of 1 to 10 concurrent enqueues: their notifications coalesce, and none is lost.
            var burst = round % 10 + 1;
            await Task.WhenAll(Enumerable.Range(enqueued, burst).Select(i => producer.Queue.EnqueueAsync(new Notice(i)).AsTask()));
            enqueued += burst;
            await consumed.WaitUntilAsync(() => consumed.Deliveries.Count == enqueued, $"the {enqueued} items of rounds 1 to {round} are handled");
        }

        var sent = ((PostgreSqlWorkQueue<Notice>)producer.Queue).NotificationsSent;
        Assert.InRange(sent, 1, enqueued); // at most one per enqueue; the statements themselves sent none
    }

    [Fact]
    public async Task EnqueueInTheCallersTransaction_WakesAConsumerThatDoesNotPoll_WhenItCommits()
    {
        var schema = await postgres.NewSchemaAsync();
        var consumed = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, consumed, node: "consumer", storage: o => o.PollInterval = NoPolling);

        for (var i = 0; i < 5; i++)
        {
            await using var connection = new NpgsqlConnection(postgres.ConnectionString);
            await connection.OpenAsync();
            await using var transaction = await connection.BeginTransactionAsync();
            await producer.Queue.EnqueueAsync(new Notice(i), transaction);
            await transaction.CommitAsync();
            await consumed.WaitUntilAsync(() => consumed.Deliveries.Count == i + 1, $"item {i} is handled");
        }

        Assert.Equal(0, ((PostgreSqlWorkQueue<Notice>)producer.Queue).NotificationsSent); // the caller's commit sent them
    }

    [Fact]
    public async Task ReleasedClaims_WakeTheOtherNodes_WhichDoNotPoll()
    {
        var schema = await postgres.NewSchemaAsync();
        using var release = new ManualResetEventSlim();
        using var entered = new ManualResetEventSlim();
        var first = new Behavior
        {
            Handle = (_, _) =>
            {
                entered.Set();
                release.Wait(QueueNode.Patience);
            },
        };
        var second = new Behavior();
        var stopping = await QueueNode.StartAsync(postgres.ConnectionString, schema, first, node: "stopping",
            storage: o => { o.ClaimsPerWorker = 4; o.PollInterval = NoPolling; },
            executor: o => o.WorkerCount = 1,
            services: s => s.Configure<Microsoft.Extensions.Hosting.HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromMilliseconds(300)));
        for (var i = 0; i < 4; i++)
        {
            await stopping.Queue.EnqueueAsync(new Notice(i));
        }

        Assert.True(entered.Wait(QueueNode.Patience));
        await DurableQueueTests.WaitAsync(() => stopping.Queue.ReadStatisticsAsync().Result.Running == 4, "the first node claims all four items");
        await using var other = await QueueNode.StartAsync(postgres.ConnectionString, schema, second, node: "other", storage: o => o.PollInterval = NoPolling);

        // The first node stops with one item running and three claimed behind it: it releases those three, and the
        // other node, which found nothing at its start and does not poll, is woken to run them.
        var stopped = stopping.DisposeAsync().AsTask();
        await second.WaitUntilAsync(() => second.Deliveries.Count == 3, "the other node runs the three released items");
        release.Set();
        await stopped;
    }
}
