using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>Items held back by a cluster limit are counted on the node, and past the threshold the health check says so.</summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterPermitWaitTests(PostgresFixture postgres)
{
    [Fact]
    public async Task ItemsWaitingForAPermit_AreCounted_AndPastTheThreshold_TheQueueIsDegraded_UntilTheyRun()
    {
        var schema = await postgres.NewSchemaAsync();
        using var gate = new ManualResetEventSlim();
        var started = 0;
        var behavior = new Behavior
        {
            Handle = (_, _) =>
            {
                Interlocked.Increment(ref started);
                gate.Wait(QueueNode.Patience);
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.ClusterPermitWaitThreshold = TimeSpan.FromSeconds(1),
            executor: o => o.WorkerCount = 2,
            services: s => s.AddHealthChecks().AddBoundedWork());
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        var health = node.Host.Services.GetRequiredService<HealthCheckService>();
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 1);

        await node.Queue.EnqueueAsync(new Notice(1));
        await node.Queue.EnqueueAsync(new Notice(2));

        // One runs (held at the gate); the node has an idle worker for the other, which the limit holds back: left
        // ready, or claimed into the node's reserve (a row in state running that has not started), where it waits too.
        await DurableQueueTests.WaitAsync(() => queue.IsClusterLimited && queue.ClusterPermitWaiting == 1 && Volatile.Read(ref started) == 1, "the second item waits for a permit");
        Assert.InRange(await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1"), 1L, 2L);

        await DurableQueueTests.WaitAsync(() => health.CheckHealthAsync().Result.Status == HealthStatus.Degraded, "the health check reports the wait");
        Assert.Equal(1, Volatile.Read(ref started));
        var entry = (await health.CheckHealthAsync()).Entries["boundedwork"];
        Assert.Contains("waited for a cluster permit", entry.Description, StringComparison.Ordinal);
        Assert.True(queue.OldestClusterPermitWait > TimeSpan.FromSeconds(1));

        gate.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "both items ran, one after the other");
        await DurableQueueTests.WaitAsync(() => queue.ClusterPermitWaiting == 0 && health.CheckHealthAsync().Result.Status == HealthStatus.Healthy, "nothing waits; healthy again");
        Assert.Equal(TimeSpan.Zero, queue.OldestClusterPermitWait);
    }

    [Fact]
    public async Task LimitsLifted_TheNodeClaimsWithoutThemAgain()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 1);
        await node.Queue.EnqueueAsync(new Notice(1));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the item ran under the limit");
        Assert.True(queue.IsClusterLimited);

        await ClusterLimitSql.SetLimitsAsync(postgres, schema);
        await node.Queue.EnqueueAsync(new Notice(2));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "the next item ran");
        await DurableQueueTests.WaitAsync(() => !queue.IsClusterLimited, "the node claims without limits");
    }
}
