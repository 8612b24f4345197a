using System.Collections.Concurrent;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// A delivery is its node's own: an outcome (or a release) that a node writes again after a lost answer, or writes for
/// a delivery it no longer holds, changes nothing another delivery holds; a node renews only the leases of the
/// deliveries it holds, so a row leased to it that it never got (a committed claim whose answer was lost) is reaped.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class DeliveryOwnershipTests(PostgresFixture postgres)
{
    private const string NodeA = "node-a:1:0123456789ab";

    [Theory]
    [InlineData((int)OutcomeKind.Released)]
    [InlineData((int)OutcomeKind.Completed)]
    [InlineData((int)OutcomeKind.Dead)]
    [InlineData((int)OutcomeKind.Retry)]
    [InlineData((int)OutcomeKind.Cancelled)]
    public async Task OutcomeWrittenAgain_AfterItsReleaseAndAnotherNodesClaim_LeavesTheOtherNodesDeliveryRunning(int kind)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var id = (await producer.Queue.EnqueueManyAsync([new Notice(1)]))[0];

        // Node A claims the item and releases it unrun (as a stopping node does); the release commits.
        var delivered = await ClaimAsync(schema, NodeA);
        Assert.Equal(id, delivered.Id);
        Write(schema, NodeA, delivered, OutcomeKind.Released);
        Assert.Equal(StorageSql.Ready, await StateAsync(schema, id));

        // Node B claims it; its handler runs until the test lets it end and records every start.
        var starts = new ConcurrentQueue<long>();
        using var started = new SemaphoreSlim(0);
        using var end = new ManualResetEventSlim();
        var behavior = new Behavior { Handle = (_, context) => { starts.Enqueue(context.ItemId); started.Release(); Assert.True(end.Wait(QueueNode.Patience)); } };
        await using var nodeB = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "b", storage: o => o.LeaseDuration = TimeSpan.FromMinutes(1));
        Assert.True(await started.WaitAsync(QueueNode.Patience), "node B did not start the item");
        var owner = ((PostgreSqlWorkQueue<Notice>)nodeB.Queue).NodeId;

        // A writes the same batch again, as its writer does after a write whose answer was lost (or an outcome of the
        // delivery it no longer holds).
        Write(schema, NodeA, delivered, (OutcomeKind)kind);

        Assert.Equal($"1 {owner}", await postgres.ScalarAsync<string>($"SELECT state || ' ' || coalesce(lease_owner, '-') FROM {schema}.items WHERE id = {id}"));
        end.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "node B's handler ended");
        await DurableQueueTests.WaitAsync(() => StateAsync(schema, id).Result == StorageSql.Completed, "node B's outcome is written");
        Assert.Equal([id], starts);
    }

    [Fact]
    public async Task DeadLetterWrittenAgain_AfterTheDeadLetterWasRequeued_LeavesTheItemReady()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var id = (await producer.Queue.EnqueueManyAsync([new Notice(1)]))[0];
        var delivered = await ClaimAsync(schema, NodeA);
        Write(schema, NodeA, delivered, OutcomeKind.Dead);
        Assert.Equal(StorageSql.Dead, await StateAsync(schema, id));
        Assert.Equal(1, await producer.Queue.RequeueDeadLettersAsync(DeadLetterSelection.ByIds([id])));

        Write(schema, NodeA, delivered, OutcomeKind.Dead); // the dead letter's write again, after its answer was lost

        Assert.Equal(StorageSql.Ready, await StateAsync(schema, id));
    }

    [Fact]
    public async Task OrphanedLease_OfABusyNode_IsNotRenewed_IsReapedAndRuns()
    {
        var schema = await postgres.NewSchemaAsync();
        using var end = new ManualResetEventSlim();
        var behavior = new Behavior { Handle = (notice, _) => { if (notice.Number == 1) { Assert.True(end.Wait(QueueNode.Patience)); } } };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => (o.LeaseDuration, o.PollInterval) = (TimeSpan.FromSeconds(1), TimeSpan.FromMilliseconds(50)));
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await node.Queue.EnqueueManyAsync([new Notice(1)]);
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1").Result == 1, "the node runs its first item");

        // A row leased to the node that the node never got: a claim that committed but whose answer was lost. The node
        // stays busy with its first item, so its heartbeat runs all along.
        var orphan = await postgres.ScalarAsync<long>($$"""
            INSERT INTO {{schema}}.items (queue, payload, state, attempts, lease_owner, lease_until)
            VALUES ('notices', '{"Number": 2}', 1, 1, '{{queue.NodeId}}', now() + interval '1 second') RETURNING id
            """);

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Any(d => d.Id == orphan), "the orphaned item is reaped and runs");
        Assert.DoesNotContain(behavior.Deliveries, d => d.Item.Number == 1); // the node was busy all along
        end.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "the first item ends");
    }

    [Fact]
    public async Task ClaimThatFailsAfterReadingRows_GivesBackEveryPermit_AndTheNodeGoesOnClaiming()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => (o.LeaseDuration, o.PollInterval, o.NodeHeartbeatInterval) = (TimeSpan.FromSeconds(1), TimeSpan.FromMilliseconds(50), TimeSpan.FromMinutes(1)));
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 2);
        await DurableQueueTests.WaitAsync(() => queue.ClusterPermitsAllowed == 2, "the node holds its grant");

        // Two items claimed by one claim: the node reads the first, and fails on the second (a time the client cannot
        // read), after the claim committed: both rows are leased to it, neither is handed to its executor.
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, enqueued_at)
            VALUES ('notices', '{"Number": 1}', now()), ('notices', '{"Number": 2}', '20000-01-01 00:00:00+00');
            """);
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1").Result == 2, "the claim took both rows");
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET enqueued_at = now()");

        // The rows are reaped when their leases end, claimed again and run; the node's permits are all free again.
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "both items run");
        await DurableQueueTests.WaitAsync(() => queue.ClusterPermitsInUse == 0, "every permit is back");
        Assert.Equal([1, 2], behavior.Deliveries.Select(d => d.Item.Number).Order());
    }

    /// <summary>Claims one ready item of the queue as node <paramref name="owner"/> with the claim statement, as a node's claim loop does.</summary>
    private async Task<StoredItem> ClaimAsync(string schema, string owner)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(new StorageSql(schema).Claim, connection);
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = "notices" });
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = 1 });
        command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = owner });
        command.Parameters.Add(new NpgsqlParameter<TimeSpan> { TypedValue = TimeSpan.FromMinutes(5) });
        command.Parameters.Add(new NpgsqlParameter<long> { TypedValue = 0 });
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = 0 });
        await using var reader = await command.ExecuteReaderAsync();
        Assert.True(await reader.ReadAsync());
        Assert.False(reader.GetBoolean(reader.GetOrdinal("summary")), "nothing was claimed");
        return new StoredItem(new NoOwner(), reader.GetInt64(0), reader.GetString(1), reader.GetInt32(2), reader.GetInt32(3), DateTimeOffset.UtcNow, false, null, null,
            null, reader.GetInt64(reader.GetOrdinal("delivery")));
    }

    /// <summary>Writes one outcome of <paramref name="delivery"/> as node <paramref name="owner"/>'s outcome writer does.</summary>
    private void Write(string schema, string owner, StoredItem delivery, OutcomeKind kind)
    {
        using var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString);
        using var writer = new OutcomeWriter(dataSource, new StorageSql(schema), "notices", owner, deleteCompleted: false, NullLogger.Instance,
            new StorageHealth(() => { }), TimeSpan.FromSeconds(1), _ => { }, () => { });
        writer.Post(delivery, kind, kind == OutcomeKind.Retry ? TimeSpan.Zero : default, kind is OutcomeKind.Released or OutcomeKind.Completed ? null : "an outcome of node A");
        writer.Complete();
        writer.Run(CancellationToken.None);
    }

    private Task<short> StateAsync(string schema, long id) => postgres.ScalarAsync<short>($"SELECT state FROM {schema}.items WHERE id = {id}");
}
