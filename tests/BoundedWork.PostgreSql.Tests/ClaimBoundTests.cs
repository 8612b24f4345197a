using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// A node holds at most <c>WorkerCount × ClaimsPerWorker</c> items, and an item is held until its outcome is written,
/// not merely handled: a node whose outcome writes lag claims nothing more, and a node that dies reruns only what it held.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClaimBoundTests(PostgresFixture postgres)
{
    [Fact]
    public async Task OutcomeWritesLagging_NodeHoldsNoMoreThanWorkersTimesClaimsPerWorker_UntilTheyAreWritten()
    {
        const int Items = 20;
        const int Bound = 2 * 2; // two workers × two claims per worker
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        // A lease that outlasts the test: the held writes keep their rows locked, the heartbeat's renewal waits behind them.
        await using var lagging = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "lagging",
            storage: o => { o.ClaimsPerWorker = 2; o.LeaseDuration = TimeSpan.FromMinutes(5); },
            executor: o => o.WorkerCount = 2);
        var owner = ((PostgreSqlWorkQueue<Notice>)lagging.Queue).NodeId;
        await using var gate = await OutcomeGate.CloseAsync(postgres, schema, owner);

        await MultiProcessTests.EnqueueMixAsync(lagging.Queue, 0, Items);

        // The lagging node has handled items whose outcomes it cannot write. A second node takes whatever the first
        // leaves in the table, so every item is handled once the first stops claiming.
        await gate.WaitUntilHoldingAsync();
        await using var witness = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "witness");
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == Items, "every item is handled by one of the nodes");

        var handledByLagging = behavior.Deliveries.Count(d => d.Node == "lagging");
        var heldByLagging = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1 AND lease_owner = '{owner}'");
        Assert.True(handledByLagging <= Bound, $"The node whose outcome writes lag handled {handledByLagging} items; it may hold {Bound}.");
        Assert.Equal(handledByLagging, heldByLagging); // handled, outcome not written: still held, still its claim

        // Once the writes go through, everything completes, each item handled once.
        await gate.OpenAsync();
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 2").Result == Items, "every outcome is written");
        Assert.Equal(Enumerable.Range(0, Items), behavior.Deliveries.Select(d => d.Item.Number).Order());
        Assert.All(behavior.Deliveries, d => Assert.Equal(1, d.Attempt));
    }

    [Fact]
    public async Task ConsumerKilledWithUnwrittenOutcomes_RerunsOnlyWhatItHeld()
    {
        const int Items = 20;
        const int Bound = 1 * 2; // one worker × two claims per worker (the consumer's default)
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        // A long lease: a held write keeps its row locked, which holds back the victim's heartbeat too, and no lease
        // may expire while the gate is closed. The test ends the victim's leases itself once it is dead.
        await using var victim = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.Zero, TimeSpan.FromMinutes(5));
        await using var gate = await OutcomeGate.CloseAsync(postgres, schema, $"%:{victim.Id}:%");
        await MultiProcessTests.EnqueueMixAsync(producer.Queue, 0, Items);

        await gate.WaitUntilHoldingAsync();
        await using var survivor = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, TimeSpan.FromMinutes(5));
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.effects").Result == Items, "every item has its effect");

        // The victim dies holding the items it handled but could not record; the server ends its session as it does
        // for a client that is gone, so those writes never land.
        var held = await postgres.ScalarAsync<long[]>($"SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM {schema}.items WHERE state = 1 AND lease_owner LIKE '%:{victim.Id}:%'");
        await victim.KillAsync();
        await gate.TerminateHeldWritersAsync();
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET lease_until = now() - interval '1 second' WHERE state = 1 AND lease_owner LIKE '%:{victim.Id}:%'");
        await gate.OpenAsync();

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 2").Result == Items, "every item is completed");
        var deliveries = await postgres.DeliveriesAsync(schema);
        var reruns = deliveries.Where(d => d.Attempt > 1).Select(d => d.Id).Order().ToArray();
        Assert.True(held.Length <= Bound, $"The killed consumer held {held.Length} items; it may hold {Bound}.");
        Assert.Equal(held, reruns); // exactly what it held ran again, once its lease had expired
        Assert.Equal(Enumerable.Range(0, Items), deliveries.Select(d => d.Number).Distinct().Order());
    }
}
