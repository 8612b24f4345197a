using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>EnqueueManyAsync: one statement, all or none, ids in the items' order, one wake-up.</summary>
[Collection(PostgresCollection.Name)]
public sealed class BulkEnqueueTests(PostgresFixture postgres)
{
    [Fact]
    public async Task ManyItems_GetIdsInTheirOrder_AndEachIsHandledOnce_ByAConsumerThatDoesNotPoll()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            storage: o => { o.PollInterval = TimeSpan.FromHours(1); o.ClaimsPerWorker = 50; });

        var ids = await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 3000).Select(i => new Notice(i)));

        Assert.Equal(3000, ids.Count);
        Assert.Equal(ids.Order(), ids); // ascending: assigned in the items' order
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 3000, "every item is handled");
        Assert.All(behavior.Deliveries, d => Assert.Equal(ids[d.Item.Number], d.Id));
        Assert.Equal(3000, behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        await DurableQueueTests.WaitAsync(() => ((PostgreSqlWorkQueue<Notice>)producer.Queue).NotificationsSent == 1, "the producer sent one wake-up for the batch");
        Assert.Equal(3000L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE (payload->>'Number')::int = id - {ids[0]}"));
    }

    [Fact]
    public async Task ManyItemsInTheCallersTransaction_RolledBack_StoreNothing_Committed_StoreAll_AndWakeTheConsumer()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer", storage: o => o.PollInterval = TimeSpan.FromHours(1));
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();

        await using (var transaction = await connection.BeginTransactionAsync())
        {
            await producer.Queue.EnqueueManyAsync([new Notice(-1), new Notice(-2)], transaction);
            await transaction.RollbackAsync();
        }

        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
        IReadOnlyList<long> ids;
        await using (var transaction = await connection.BeginTransactionAsync())
        {
            ids = await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 50).Select(i => new Notice(i)), transaction);
            await transaction.CommitAsync();
        }

        var onConnection = await producer.Queue.EnqueueManyAsync(Enumerable.Range(50, 50).Select(i => new Notice(i)), connection);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 100, "every committed item is handled");
        Assert.Equal(ids.Concat(onConnection).Order(), behavior.Deliveries.Select(d => d.Id).Order());
        Assert.Equal(0, ((PostgreSqlWorkQueue<Notice>)producer.Queue).NotificationsSent); // the statements notified at their commits
    }

    [Fact]
    public async Task ManyItemsWithOptions_AreAllDelayedAndPrioritised_AndOrderedItemsKeepTheirKeysOrder()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer", keyed: true);

        var low = await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 6).Select(i => new Notice(i, "key-" + (i % 2))), new EnqueueOptions { Priority = -1 });
        var high = await producer.Queue.EnqueueManyAsync(Enumerable.Range(6, 4).Select(i => new Notice(i, "key-" + (i % 2))), new EnqueueOptions { Priority = 1 });
        var later = await producer.Queue.EnqueueManyAsync([new Notice(10), new Notice(11)], new EnqueueOptions { Delay = TimeSpan.FromHours(1), Priority = 7 });

        Assert.Equal(2L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 5 AND priority = 7 AND run_at > now() + interval '50 minutes'"));
        var behavior = new Behavior();
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            queue: o => o.OrderingKey = n => n.Key, storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 10, "the ten items due now are handled");

        // Each key in enqueue order: its high-priority items wait for its older low-priority ones.
        foreach (var key in behavior.Deliveries.GroupBy(d => d.Item.Key))
        {
            var numbers = key.Select(d => d.Item.Number).ToArray();
            Assert.Equal(numbers.Order(), numbers);
        }

        Assert.Equal(2, later.Count);
        Assert.Equal(6, low.Count);
        Assert.Equal(4, high.Count);
    }

    [Fact]
    public async Task NoItems_StoreNothing_AndAKeyInTheOptions_OrANullArgument_IsRefused()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        Assert.Empty(await producer.Queue.EnqueueManyAsync([]));

        // Refused at the call, before any I/O (the returned task is never made).
        var keyed = Assert.Throws<ArgumentException>(() => { _ = producer.Queue.EnqueueManyAsync([new Notice(1)], new EnqueueOptions { IdempotencyKey = "k" }); });
        Assert.Contains("EnqueueOptions.IdempotencyKey is for one item", keyed.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentNullException>(() => { _ = producer.Queue.EnqueueManyAsync(null!); });
        Assert.Throws<ArgumentNullException>(() => { _ = producer.Queue.EnqueueManyAsync([new Notice(1)], (NpgsqlTransaction)null!); });
        Assert.Throws<ArgumentOutOfRangeException>(() => { _ = producer.Queue.EnqueueManyAsync([new Notice(1)], new EnqueueOptions { Priority = 1000 }); });

        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
        Assert.Equal(0, ((PostgreSqlWorkQueue<Notice>)producer.Queue).NotificationsSent);
    }

    [Fact]
    public async Task TwentyThousandItems_InOneCall_AreOneStatement_AllStored()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        var ids = await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 20_000).Select(i => new Notice(i, i % 3 == 0 ? null : "k" + i)));

        Assert.Equal(20_000, ids.Distinct().Count());
        Assert.Equal(20_000L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0"));
        Assert.Equal(20_000, (await producer.Queue.ReadStatisticsAsync()).Ready);
    }
}
