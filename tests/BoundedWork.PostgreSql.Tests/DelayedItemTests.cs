using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>Items enqueued with a delay or a time to run at: stored at once as scheduled, never run before their time.</summary>
[Collection(PostgresCollection.Name)]
public sealed class DelayedItemTests(PostgresFixture postgres)
{
    [Fact]
    public async Task DelayedItem_IsStoredScheduled_AndRunsOnlyOnceItsTimeHasCome_OnAConsumerThatDoesNotPoll()
    {
        var schema = await postgres.NewSchemaAsync();
        var started = new System.Collections.Concurrent.ConcurrentDictionary<long, DateTimeOffset>();
        var behavior = new Behavior { Handle = (_, context) => started[context.ItemId] = DateTimeOffset.UtcNow };
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.PollInterval = TimeSpan.FromHours(1));

        var delayed = await consumer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromMilliseconds(400) });
        var atTime = await consumer.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddMilliseconds(600) });
        var now = await consumer.Queue.EnqueueWithIdAsync(new Notice(3));

        Assert.False(delayed.IsDuplicate);
        var states = await postgres.ScalarAsync<short[]>($"SELECT array_agg(state ORDER BY id) FROM {schema}.items");
        Assert.Equal(StorageSql.Scheduled, states[0]);
        Assert.Equal(StorageSql.Scheduled, states[1]);

        // The consumer polls once an hour: the claim tells it when the next scheduled item is due, and it waits that long.
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 3, "the three items are handled");
        foreach (var id in new[] { delayed.ItemId, atTime.ItemId, now })
        {
            var runAt = await postgres.ScalarAsync<DateTime>($"SELECT run_at FROM {schema}.items WHERE id = {id}");
            Assert.True(started[id] >= new DateTimeOffset(runAt, TimeSpan.Zero), $"Item {id} started at {started[id]:O}, before its time {runAt:O}.");
        }

        Assert.Equal(3, behavior.Deliveries.First().Item.Number); // the item due now ran first
    }

    [Fact]
    public async Task ScheduledItems_AreCountedAsScheduled_UntilTheirTime_ThenRunInTheOrderTheyFellDue()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");

        // Enqueued in one order, due in the reverse one.
        for (var i = 0; i < 5; i++)
        {
            await producer.Queue.EnqueueAsync(new Notice(i), new EnqueueOptions { Delay = TimeSpan.FromHours(5 - i) });
        }

        var statistics = await producer.Queue.ReadStatisticsAsync();
        Assert.Equal(5, statistics.Scheduled);
        Assert.Equal(0, statistics.Ready);

        // Their time comes (moved forward), all at once, while no consumer runs; then one consumer, one claim at a time.
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET run_at = now() - (5 - (payload->>'Number')::int) * interval '1 second'");
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 5, "the five items are handled");
        Assert.Equal([0, 1, 2, 3, 4], behavior.Deliveries.Select(d => d.Item.Number)); // earliest due first
    }

    [Fact]
    public async Task DelayedItemInTheCallersTransaction_RolledBack_IsNotStored_Committed_IsScheduled()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();

        await using (var transaction = await connection.BeginTransactionAsync())
        {
            await producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromMinutes(5) }, transaction);
            await transaction.RollbackAsync();
        }

        EnqueueResult committed;
        await using (var transaction = await connection.BeginTransactionAsync())
        {
            committed = await producer.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { Delay = TimeSpan.FromMinutes(5) }, transaction);
            await transaction.CommitAsync();
        }

        var onConnection = await producer.Queue.EnqueueAsync(new Notice(3), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddMinutes(5) }, connection);

        Assert.Equal([committed.ItemId, onConnection.ItemId], (await postgres.ScalarAsync<long[]>($"SELECT array_agg(id ORDER BY id) FROM {schema}.items WHERE state = 5")).AsEnumerable());
        Assert.Equal(1L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE run_at BETWEEN now() + interval '4 minutes' AND now() + interval '6 minutes' AND id = {committed.ItemId}"));
    }

    [Fact]
    public async Task RunAtInThePast_RunsNow_AheadOfItemsThatBecameDueLater()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");
        await producer.Queue.EnqueueAsync(new Notice(1));
        await producer.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddHours(-1) });

        Assert.Equal(2, (await producer.Queue.ReadStatisticsAsync()).Ready);
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "both items are handled");
        Assert.Equal([2, 1], behavior.Deliveries.Select(d => d.Item.Number));
    }

    [Fact]
    public async Task DelayedItemWithAnIdempotencyKey_IsStoredOnce()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var options = new EnqueueOptions { Delay = TimeSpan.FromMinutes(10), IdempotencyKey = "reminder:42" };

        var first = await producer.Queue.EnqueueAsync(new Notice(42), options);
        var again = await producer.Queue.EnqueueAsync(new Notice(42), options);
        // The obsolete EnqueueIdempotentAsync shares the key with EnqueueOptions.IdempotencyKey until it is removed.
#pragma warning disable CS0618
        var plain = await producer.Queue.EnqueueIdempotentAsync(new Notice(42), "reminder:42");
#pragma warning restore CS0618

        Assert.Equal(new EnqueueResult(first.ItemId, IsDuplicate: true), again);
        Assert.Equal(new EnqueueResult(first.ItemId, IsDuplicate: true), plain);
        Assert.Equal(1L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
    }

    [Fact]
    public async Task DelayedEnqueueOfEveryTypedQueue_OnAStoredQueue_StoresTheItemScheduled()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        IWorkQueue<Notice> queue = producer.Queue;

        await queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromHours(1) });
        await queue.EnqueueAsync(new Notice(2), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddHours(2) });

        Assert.Equal(2L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 5 AND run_at > now() + interval '50 minutes'"));
    }

    [Fact]
    public async Task InvalidOptions_AreRefused_NamingTheOption_AndNothingIsStored()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        var negative = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromSeconds(-1) }));
        Assert.Contains("EnqueueOptions.Delay must be between zero and 365 days", negative.Message, StringComparison.Ordinal);
        var tooFar = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromDays(366) }));
        Assert.Equal("options", tooFar.ParamName);
        var farRunAt = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddDays(400) }));
        Assert.Contains("EnqueueOptions.RunAt must be at most 365 days ahead", farRunAt.Message, StringComparison.Ordinal);
        var both = await Assert.ThrowsAsync<ArgumentException>(() => producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.Zero, RunAt = DateTimeOffset.UtcNow }));
        Assert.Contains("RunAt and EnqueueOptions.Delay cannot both be set", both.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<ArgumentException>(() => producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "" }));
        await Assert.ThrowsAsync<ArgumentNullException>(() => producer.Queue.EnqueueAsync(new Notice(1), (EnqueueOptions)null!));

        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
    }
}
