using System.Collections.Concurrent;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// A delivery is its node's own: an outcome (or a release) that a node writes again after a lost answer, or writes for
/// a delivery it no longer holds, changes nothing another delivery holds.
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
        Assert.False(reader.IsDBNull(0), "nothing was claimed");
        return new StoredItem(new NoOwner(), reader.GetInt64(0), reader.GetString(1), reader.GetInt32(2), reader.GetInt32(3), DateTimeOffset.UtcNow, false, null, null,
            null, reader.GetInt64(reader.FieldCount - 1));
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

    private sealed class NoOwner : IStoredItemOwner
    {
        public void Run(StoredItem item) => throw new InvalidOperationException();

        public void Release(StoredItem item) => throw new InvalidOperationException();
    }
}
