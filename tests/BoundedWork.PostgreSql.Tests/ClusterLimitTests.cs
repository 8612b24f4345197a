using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Cluster limits across three consumer processes, measured outside the library: every handler records its start and
/// end on the database's clock (<see cref="ClusterLimitSql"/>), and a trigger records every claim. Each consumer has
/// more workers than the limit lets the cluster use, so only the limit can hold them back.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterLimitTests(PostgresFixture postgres)
{
    private static readonly TimeSpan Lease = TimeSpan.FromSeconds(2);

    [Fact]
    public async Task MaxRunning_ThreeConsumersOneKilledAndRestarted_RunningHandlersNeverExceedTheLimit()
    {
        const int Limit = 3;
        const int Items = 60;
        var schema = await postgres.NewSchemaAsync();
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: Limit);
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 3, TimeSpan.FromMilliseconds(100), Lease, limits: true));
            }

            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i)));

            // Kill a consumer while it runs items (it dies holding claims), then start another in its place.
            var victim = consumers[0];
            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node = {victim.Id} AND ended_at IS NULL").Result > 0,
                "the victim is running an item");
            await victim.KillAsync();
            var killedAt = await ClusterLimitSql.NowAsync(postgres);
            consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 3, TimeSpan.FromMilliseconds(100), Lease, limits: true));

            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every item is completed");

            // A handler of the killed node ran at most until it was killed; its claims counted until their lease expired.
            var overlap = await ClusterLimitSql.MaxOverlapAsync(postgres, schema, openEnd: killedAt);
            Assert.True(overlap <= Limit, $"{overlap} handlers ran at once; the cluster limit is {Limit}.");
            Assert.Equal(Items, await postgres.ScalarAsync<long>($"SELECT count(DISTINCT number) FROM {schema}.runs"));
        }
        finally
        {
            foreach (var consumer in consumers)
            {
                await consumer.DisposeAsync();
            }
        }
    }

    [Theory]
    [InlineData(2)]
    [InlineData(3)]
    public async Task MaxRunningPerKey_ThreeConsumers_AtMostMOfAKeyAtOnce_StartedInEnqueueOrder(int perKey)
    {
        const int Keys = 4;
        const int PerKeyItems = 15;
        var schema = await postgres.NewSchemaAsync();
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true);
        await ClusterLimitSql.RecordClaimsAsync(postgres, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: perKey);
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 3, TimeSpan.FromMilliseconds(30), Lease, limits: true));
            }

            // Interleaved keys, enqueued one by one (enqueue order is id order within each key), a few with a higher priority.
            for (var i = 0; i < Keys * PerKeyItems; i++)
            {
                await producer.Queue.EnqueueAsync(new Notice(i, "k" + (i % Keys)), new EnqueueOptions { Priority = i % 5 == 0 ? 1 : 0 });
            }

            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every item is completed");

            var overlap = await ClusterLimitSql.MaxOverlapAsync(postgres, schema, perKey: true);
            Assert.True(overlap <= perKey, $"{overlap} items of one key ran at once; the limit per key is {perKey}.");
            var elders = await ClusterLimitSql.MaxUnfinishedEldersAsync(postgres, schema);
            Assert.True(elders <= perKey - 1, $"An item started while {elders} older items of its key had not finished; in enqueue order at most {perKey - 1} can.");
            Assert.Equal(0L, await ClusterLimitSql.KeyClaimOrderInversionsAsync(postgres, schema)); // a key's items claimed oldest first, whatever their priorities
            Assert.Equal(Keys * PerKeyItems, await postgres.ScalarAsync<long>($"SELECT count(DISTINCT number) FROM {schema}.runs"));
        }
        finally
        {
            foreach (var consumer in consumers)
            {
                await consumer.DisposeAsync();
            }
        }
    }

    [Fact]
    public async Task StartsPerSecond_ThreeConsumers_ClaimsInAnyOneSecondWindowStayWithinRatePlusBurst()
    {
        const double Rate = 10;
        const int Burst = 3;
        const int Items = 50;
        var schema = await postgres.NewSchemaAsync();
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.RecordClaimsAsync(postgres, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: Rate, burst: Burst);
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 3, TimeSpan.Zero, Lease, limits: true));
            }

            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i)));
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every item is completed");

            // Every item claimed; an item whose start token did not come in time (a node's share moved while nodes
            // joined) is released and claimed again, so an item may have more than one claim.
            Assert.Equal(Items, await postgres.ScalarAsync<long>($"SELECT count(DISTINCT item_id) FROM {schema}.claims"));
            var window = await ClusterLimitSql.MaxClaimsInOneSecondAsync(postgres, schema);
            Assert.True(window <= Rate + Burst, $"{window} items were claimed within one second; the bound is {Rate} + {Burst}.");

            // The bucket's bound read the other way: the claims took at least (items - burst) / rate seconds.
            var span = await postgres.ScalarAsync<double>($"SELECT extract(epoch FROM max(at) - min(at))::double precision FROM {schema}.claims");
            Assert.True(span >= (Items - Burst - 1) / Rate, $"{Items} claims took {span} s.");
        }
        finally
        {
            foreach (var consumer in consumers)
            {
                await consumer.DisposeAsync();
            }
        }
    }

    [Fact]
    public async Task MaxRunning_LoweredWhileItemsRun_BindsFromTheNextClaim()
    {
        const int Items = 30;
        var schema = await postgres.NewSchemaAsync();
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.RecordClaimsAsync(postgres, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 4);
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 3, TimeSpan.FromMilliseconds(500), Lease, limits: true));
            }

            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i)));
            // Rows in state running: four run, and up to one more per permit waits in its node's reserve.
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1").Result >= 4, "four items run");

            await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 2);
            var changedAt = await ClusterLimitSql.NowAsync(postgres);
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every item is completed");

            // Every claim that started after the change saw it, and a node's reserved item (claimed before) starts under
            // the old grant only until that node's first claim after it: from the last node's first claim on, at most two ran at once.
            var firstClaimAfter = await postgres.ScalarAsync<DateTime>(
                $"SELECT max(first) FROM (SELECT r.node, min(c.at) AS first FROM {schema}.claims c JOIN {schema}.runs r ON r.item_id = c.item_id " +
                $"WHERE c.at > '{changedAt:O}'::timestamptz GROUP BY r.node) AS f");
            var overlap = await ClusterLimitSql.MaxOverlapAsync(postgres, schema, from: firstClaimAfter);
            Assert.True(overlap <= 2, $"{overlap} handlers ran at once after the limit was lowered to 2.");
            var before = await ClusterLimitSql.MaxOverlapAsync(postgres, schema);
            Assert.True(before <= 4, $"{before} handlers ran at once under the limit of 4.");
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
