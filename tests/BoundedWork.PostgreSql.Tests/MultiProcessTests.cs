using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Several consumer processes on one queue, a consumer killed with SIGKILL, one stopped with SIGTERM, and a database
/// restart mid-run; the items are a mix of single, bulk-enqueued, delayed and prioritised ones (<see cref="EnqueueMixAsync"/>).
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class MultiProcessTests(PostgresFixture postgres)
{
    /// <summary>
    /// Enqueues items <paramref name="from"/> to <paramref name="from"/> + <paramref name="count"/> - 1, in blocks of 30:
    /// ten one by one with priorities -1, 0 and 1, ten in one bulk statement, and ten delayed by 0 to 60 ms with
    /// priorities -1 to 1.
    /// </summary>
    internal static async Task EnqueueMixAsync(IPostgreSqlWorkQueue<Notice> queue, int from, int count)
    {
        for (var block = from; block < from + count; block += 30)
        {
            var end = Math.Min(block + 30, from + count);
            for (var i = block; i < Math.Min(block + 10, end); i++)
            {
                await queue.EnqueueAsync(new Notice(i), new EnqueueOptions { Priority = i % 3 - 1 });
            }

            if (block + 10 < end)
            {
                await queue.EnqueueManyAsync(Enumerable.Range(block + 10, Math.Min(10, end - block - 10)).Select(i => new Notice(i)));
            }

            for (var i = block + 20; i < end; i++)
            {
                await queue.EnqueueAsync(new Notice(i), new EnqueueOptions { Delay = TimeSpan.FromMilliseconds(i % 7 * 10), Priority = i % 3 - 1 });
            }
        }
    }

    [Fact]
    public async Task ThreeConsumerProcesses_DrainOneQueue_EveryItemHandled_EffectsExactlyOnce()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, TimeSpan.FromSeconds(5)));
            }

            await Task.WhenAll(Enumerable.Range(0, 4).Select(p => EnqueueMixAsync(producer.Queue, p * 500, 500)));

            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.effects").Result == 2000, "every item has its effect");
            var deliveries = await postgres.DeliveriesAsync(schema);
            Assert.Equal(Enumerable.Range(0, 2000), deliveries.Select(d => d.Number).Distinct().Order());
            Assert.Equal(2000, deliveries.Select(d => d.Id).Distinct().Count());
            Assert.Equal(2000L, await postgres.ScalarAsync<long>($"SELECT count(DISTINCT number) FROM {schema}.effects"));
            Assert.Equal(consumers.Select(c => c.Id).Order(), deliveries.Select(d => d.Node).Distinct().Order()); // all three took part
            Assert.DoesNotContain(deliveries, d => d.Attempt != 1); // nobody crashed: each item was delivered once
        }
        finally
        {
            foreach (var consumer in consumers)
            {
                await consumer.DisposeAsync();
            }
        }
    }

    /// <remarks>
    /// With 8 claims per worker, the victim drains its share of the backlog the way a node drains one: each claim waits
    /// for the node's items still to finish to fall to the low water, then carries the outcomes posted meanwhile. It is
    /// killed wherever it is in that cycle (a claim in flight with outcomes, a wait, a batch of outcomes posted and not
    /// yet carried), and what it held runs again elsewhere.
    /// </remarks>
    [Theory]
    [InlineData(2)]
    [InlineData(8)]
    public async Task ConsumerKilledMidRun_LosesNothing_ItsClaimedItemsRunElsewhereAfterTheLease(int claimsPerWorker)
    {
        var schema = await postgres.NewSchemaAsync();
        var claims = new Dictionary<string, string> { ["BW_CLAIMS_PER_WORKER"] = claimsPerWorker.ToString(System.Globalization.CultureInfo.InvariantCulture) };
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var victim = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.FromMilliseconds(20), TimeSpan.FromSeconds(2), environment: claims);
        await using var survivor = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.FromMilliseconds(20), TimeSpan.FromSeconds(2), environment: claims);
        await EnqueueMixAsync(producer.Queue, 0, 300);

        var victimClaims = $"SELECT count(*) FROM {schema}.items WHERE state = 1 AND lease_owner LIKE '%:{victim.Id}:%'";
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.deliveries WHERE node = {victim.Id}").Result >= 10 && postgres.ScalarAsync<long>(victimClaims).Result > 0,
            "the victim has handled items and holds claims");
        await victim.KillAsync();

        // A statement the victim sent just before it died (an outcome write) still runs on the server; only once its
        // connections are gone are the claims it holds truly orphaned.
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{ConsumerProcess.ApplicationName(victim.Id)}'").Result == 0,
            "the victim's connections are closed on the server");
        var orphaned = await postgres.ScalarAsync<long[]>($"SELECT coalesce(array_agg(id), '{{}}') FROM {schema}.items WHERE state = 1 AND lease_owner LIKE '%:{victim.Id}:%'");
        Assert.NotEmpty(orphaned);

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.effects").Result == 300, "every item has its effect");

        // Every effect can be in before the orphaned items run again: the victim may have died after its handler wrote
        // an item's effect and before the item's outcome was written. The survivor records a delivery before its
        // outcome, so once every item is completed, every redelivery is recorded.
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every outcome is written: all items completed");
        var deliveries = await postgres.DeliveriesAsync(schema);
        Assert.Equal(Enumerable.Range(0, 300), deliveries.Select(d => d.Number).Distinct().Order());
        foreach (var id in orphaned)
        {
            // Each item the victim died holding was delivered again, by the survivor, as a later delivery.
            Assert.Contains(deliveries, d => d.Id == id && d.Node == survivor.Id && d.Attempt >= 2);
        }
    }

    [Fact]
    public async Task ConsumerStoppedWithSigterm_ExitsCleanly_AndLeavesNoClaimBehind()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var stopped = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.FromMilliseconds(100), TimeSpan.FromMinutes(10));
        await EnqueueMixAsync(producer.Queue, 0, 50);

        var claims = $"SELECT count(*) FROM {schema}.items WHERE state = 1 AND lease_owner LIKE '%:{stopped.Id}:%'";
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>(claims).Result == 2, "the consumer holds its two claims (one worker, two claims per worker)");

        var exitCode = await stopped.TerminateAsync();

        Assert.True(exitCode == 0, stopped.Output);
        Assert.Equal(0L, await postgres.ScalarAsync<long>(claims)); // finished or handed back, not left to a ten-minute lease
        Assert.DoesNotContain("fail:", stopped.Output, StringComparison.Ordinal);

        await using var next = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, TimeSpan.FromMinutes(10));
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.effects").Result == 50, "every item has its effect");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every outcome is written: all items completed");
    }

    [Fact]
    public async Task DatabaseRestartMidRun_LosesNothing_AndTheConsumersRecoverByThemselves()
    {
        var schema = await postgres.NewSchemaAsync();
        var local = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, local);
        await using var consumer = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.FromMilliseconds(2), TimeSpan.FromSeconds(5));
        await EnqueueMixAsync(node.Queue, 0, 600);

        await local.WaitUntilAsync(() => local.Deliveries.Count >= 100, "the in-process node has handled 100 items");
        await postgres.Server.RestartAsync(whileDown: () =>
            DurableQueueTests.WaitAsync(() => !node.Storage.Statistics.IsAvailable, "the node reports its storage unavailable"));
        Npgsql.NpgsqlConnection.ClearAllPools(); // the test's own pooled connections died with the server
        await DurableQueueTests.WaitAsync(() => node.Storage.Statistics.IsAvailable, "the node reports its storage available again");

        await EnqueueMixAsync(node.Queue, 600, 200);

        int[] Handled() => [.. local.Deliveries.Select(d => d.Item.Number).Concat(postgres.DeliveriesAsync(schema).Result.Select(d => d.Number)).Distinct().Order()];
        await DurableQueueTests.WaitAsync(() => Handled().Length == 800, "every item is handled by one of the nodes");
        Assert.Equal(Enumerable.Range(0, 800), Handled());
        Assert.Contains(local.Deliveries, d => d.Item.Number >= 600); // the in-process node recovered and consumed after the restart
    }
}
