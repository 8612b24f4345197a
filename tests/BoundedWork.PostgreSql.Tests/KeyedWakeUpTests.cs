using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The next item of a key is claimed when its predecessor's outcome is written, not at the next poll: the consumers
/// poll once an hour, so a key whose next item waited for a poll (or for a backoff that nothing ends) would not drain
/// within the test's patience. Keys are drained on one node and on two, with one and with two items per key at once.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyedWakeUpTests(PostgresFixture postgres)
{
    private static readonly TimeSpan NoPolling = TimeSpan.FromHours(1);

    [Theory]
    [InlineData(1, 1)]
    [InlineData(2, 1)]
    [InlineData(1, 2)]
    [InlineData(2, 2)]
    public async Task KeyedItems_EachKeysNextItem_IsClaimedWhenItsPredecessorEnds_NotAtAPoll(int perKey, int nodes)
    {
        const int Keys = 3;
        const int PerKeyItems = 20;
        var schema = await postgres.NewSchemaAsync();
        var consumed = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer", keyed: true);
        if (perKey > 1)
        {
            await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: perKey);
        }

        // Every item is stored before a consumer starts: each key's first item is claimed at the start, and each
        // later one only once an earlier one of its key has ended.
        await producer.Queue.EnqueueManyAsync([.. Enumerable.Range(0, Keys * PerKeyItems).Select(i => new Notice(i, "k" + (i % Keys)))]);
        var consumers = new List<QueueNode>();
        try
        {
            for (var i = 0; i < nodes; i++)
            {
                consumers.Add(await QueueNode.StartAsync(postgres.ConnectionString, schema, consumed, node: "consumer" + i,
                    queue: o => o.OrderingKey = n => n.Key, storage: o => o.PollInterval = NoPolling, executor: o => o.WorkerCount = 4));
            }

            await consumed.WaitUntilAsync(() => consumed.Deliveries.Count >= Keys * PerKeyItems, $"the {Keys * PerKeyItems} keyed items are handled");
            Assert.Equal(Keys * PerKeyItems, consumed.Deliveries.Select(d => d.Item.Number).Distinct().Count());
        }
        finally
        {
            foreach (var consumer in consumers)
            {
                await consumer.DisposeAsync();
            }
        }
    }
}
