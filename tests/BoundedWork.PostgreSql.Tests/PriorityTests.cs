using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>Priorities: highest first, first in first out within one, strict, and never ahead of an older item of the same key.</summary>
[Collection(PostgresCollection.Name)]
public sealed class PriorityTests(PostgresFixture postgres)
{
    [Fact]
    public async Task ReadyItems_AreClaimedHighestPriorityFirst_FifoWithinAPriority_LowPrioritiesWaitWhileHigherOnesAreReady()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");
        (int Number, int Priority)[] items = [(0, 0), (1, -5), (2, 10), (3, 0), (4, 100), (5, -100), (6, 10), (7, 0)];
        foreach (var (number, priority) in items)
        {
            await producer.Queue.EnqueueAsync(new Notice(number), new EnqueueOptions { Priority = priority });
        }

        // One worker claiming one item at a time: the order of the deliveries is the order of the claims.
        var behavior = new Behavior();
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == items.Length, "every item is handled");

        Assert.Equal([4, 2, 6, 0, 3, 7, 1, 5], behavior.Deliveries.Select(d => d.Item.Number));
    }

    [Fact]
    public async Task HigherPriorityArrivingLater_OvertakesLowerOnesStillReady_OnTheNextClaim()
    {
        var schema = await postgres.NewSchemaAsync();
        using var firstRunning = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (item, _) =>
            {
                if (item.Number == 0)
                {
                    firstRunning.Set();
                    release.Wait(QueueNode.Patience);
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);

        await node.Queue.EnqueueAsync(new Notice(0));
        Assert.True(firstRunning.Wait(QueueNode.Patience));
        for (var i = 1; i <= 3; i++)
        {
            await node.Queue.EnqueueAsync(new Notice(i), new EnqueueOptions { Priority = -1 });
        }

        await node.Queue.EnqueueAsync(new Notice(4), new EnqueueOptions { Priority = 1 });
        release.Set();

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 5, "every item is handled");
        Assert.Equal([0, 4, 1, 2, 3], behavior.Deliveries.Select(d => d.Item.Number));
    }

    [Fact]
    public async Task OrderingKey_WinsOverPriority_AHighPriorityItemWaitsForTheOlderItemsOfItsKey()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer", keyed: true);
        await producer.Queue.EnqueueAsync(new Notice(0, "account-1"), new EnqueueOptions { Priority = -50 });
        await producer.Queue.EnqueueAsync(new Notice(1, "account-2"));
        await producer.Queue.EnqueueAsync(new Notice(2, "account-1"), new EnqueueOptions { Priority = 50 });
        await producer.Queue.EnqueueAsync(new Notice(3, "account-1"), new EnqueueOptions { Priority = 100 });

        var behavior = new Behavior();
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            queue: o => o.OrderingKey = n => n.Key, storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 4, "every item is handled");

        var ofKey = behavior.Deliveries.Where(d => d.Item.Key == "account-1").Select(d => d.Item.Number);
        Assert.Equal([0, 2, 3], ofKey); // in enqueue order, whatever their priorities
        Assert.Equal(1, behavior.Deliveries.First().Item.Number); // of the two keys' heads, account-2's (priority 0) beats account-1's (-50); 2 and 3 wait for 0
    }

    [Fact]
    public async Task PriorityOutOfRange_IsRefused_NamingTheOption()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        foreach (var priority in new[] { -101, 101, int.MaxValue })
        {
            var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Priority = priority }));
            Assert.Contains("EnqueueOptions.Priority must be between -100 and 100", error.Message, StringComparison.Ordinal);
        }

        await producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Priority = -100 });
        await producer.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { Priority = 100 });
        Assert.Equal([-100, 100], (await postgres.ScalarAsync<short[]>($"SELECT array_agg(priority ORDER BY id) FROM {schema}.items")).Select(p => (int)p));
    }
}
