using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// What an operator reads for a durable queue's running item (the console's <c>running[].method</c>, <c>bw show</c>,
/// slow-item alarms): the handler, the item type, the item's id and its ordering key, not the queue's internal lambda.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class RunningDeliveryDescriptionTests(PostgresFixture postgres)
{
    [Fact]
    public async Task RunningDelivery_OfADurableQueue_NamesTheHandlerTheItemTypeItsIdAndKey()
    {
        var schema = await postgres.NewSchemaAsync();
        using var entered = new ManualResetEventSlim(false);
        using var release = new ManualResetEventSlim(false);
        var behavior = new Behavior
        {
            Handle = (_, _) =>
            {
                entered.Set();
                release.Wait(QueueNode.Patience);
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: static o => o.OrderingKey = static n => n.Key);

        try
        {
            var keyed = await node.Queue.EnqueueWithIdAsync(new Notice(1, "order-7"));
            Assert.True(entered.Wait(QueueNode.Patience), "the keyed item starts");
            Assert.Contains($"{typeof(TestHandler).FullName}.Handle(Notice #{keyed}, key order-7)", node.Executor.GetRunningItems().Select(r => r.Item.Description));
            release.Set();
            await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the keyed item ends");

            entered.Reset();
            release.Reset();
            var unkeyed = await node.Queue.EnqueueWithIdAsync(new Notice(2));
            Assert.True(entered.Wait(QueueNode.Patience), "the unkeyed item starts");
            Assert.Contains($"{typeof(TestHandler).FullName}.Handle(Notice #{unkeyed})", node.Executor.GetRunningItems().Select(r => r.Item.Description));
        }
        finally
        {
            release.Set();
        }
    }
}
