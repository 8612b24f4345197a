using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The durable per-tenant bound (<see cref="WorkQueueFairShare.MaxRunningPerTenant"/>) across consumer processes, one
/// of them killed with SIGKILL while it runs items, measured outside the library: every handler records its start and
/// end on the database's clock (<see cref="ClusterLimitSql"/>'s <c>runs</c>), and the tenant of each item is known to
/// the test from its number.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class FairShareProcessTests(PostgresFixture postgres)
{
    private static readonly TimeSpan Lease = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Three consumer processes of four workers, three tenants of 40 items each, a bound of 2 per tenant. One process (the
    /// first, alone when the items arrive, its handlers never ending) is killed while it runs items; the others go on.
    /// From the witness alone: at every start, the items of its tenant started and not ended are at most 2, where a run
    /// the killed process left open counts as running until the same item starts again elsewhere (its lease was reaped),
    /// a conservative reading that needs nothing of the library.
    /// And nothing is lost: every item ends.
    /// </summary>
    [Fact]
    public async Task MaxRunningPerTenant_ThreeProcessesOneKilled_NeverExceededAsTheWitnessSeesIt_NothingLost()
    {
        const int Bound = 2;
        const int Tenants = 3;
        const int PerTenant = 40;
        var schema = await postgres.NewSchemaAsync();
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = producer.Host.Services.GetServices<IWorkQueueCluster>().Single();
        await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { MaxRunningPerTenant = Bound } }, "test");
        var consumers = new List<ConsumerProcess>();
        try
        {
            // The victim starts alone and its handlers never end by themselves: it is the only node when the items arrive,
            // so it claims some, and it still runs them when it is killed (with the others started meanwhile), whoever
            // would have won the claims otherwise.
            var victim = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 4, TimeSpan.FromHours(1), Lease, limits: true);
            consumers.Add(victim);

            // Tenant k's items are numbered k * 100 onwards: the witness knows each run's tenant from its number.
            for (var k = 0; k < Tenants; k++)
            {
                await producer.Queue.EnqueueManyAsync(Enumerable.Range(k * 100, PerTenant).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "t" + k });
            }

            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node = {victim.Id} AND ended_at IS NULL").Result > 0,
                "the victim is running an item");
            for (var i = 0; i < 2; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 4, TimeSpan.FromMilliseconds(150), Lease, limits: true));
            }

            await victim.KillAsync();

            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(DISTINCT item_id) FROM {schema}.runs WHERE ended_at IS NOT NULL").Result == Tenants * PerTenant,
                "every item ended");

            // The victim died mid-flight: it left runs open, and each of those items started again on another process.
            var open = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node = {victim.Id} AND ended_at IS NULL");
            Assert.True(open > 0, "the victim left no run open");
            Assert.Equal(0L, await postgres.ScalarAsync<long>($"""
                SELECT count(*) FROM {schema}.runs o WHERE o.node = {victim.Id} AND o.ended_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM {schema}.runs n WHERE n.item_id = o.item_id AND n.started_at > o.started_at AND n.ended_at IS NOT NULL)
                """));

            // At each start: the runs of its tenant started at or before it and not yet over (an open run is over when its
            // item starts again). Ends are exclusive: an item started again replaces its open run at that instant.
            var overlap = await postgres.ScalarAsync<long>($"""
                WITH r AS (
                    SELECT o.number / 100 AS tenant, o.started_at,
                           coalesce(o.ended_at,
                                    (SELECT min(n.started_at) FROM {schema}.runs n WHERE n.item_id = o.item_id AND n.started_at > o.started_at),
                                    'infinity') AS until
                    FROM {schema}.runs o)
                SELECT max((SELECT count(*) FROM r o WHERE o.tenant = p.tenant AND o.started_at <= p.started_at AND o.until > p.started_at)) FROM r p
                """);
            Assert.True(overlap <= Bound, $"{overlap} items of one tenant ran at once; the bound is {Bound}.");
            Assert.Equal(Bound, overlap); // the bound was reached: the workers (12) were not what held the tenants back
            Assert.Equal((long)(Tenants * PerTenant), await postgres.ScalarAsync<long>($"SELECT count(DISTINCT number) FROM {schema}.runs WHERE ended_at IS NOT NULL"));
            // A handler records its end before it returns, and its outcome is written after that: wait for the outcomes,
            // then every item is completed (none dead, cancelled or left behind).
            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (0, 1, 5)").Result == 0,
                "every outcome is written");
            Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2"));
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
