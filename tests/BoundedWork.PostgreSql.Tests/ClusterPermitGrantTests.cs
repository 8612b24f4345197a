using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>One node's cluster permits, leased from the database: what it claims under a grant, and what it does once the grant lapses.</summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterPermitGrantTests(PostgresFixture postgres)
{
    [Fact]
    public async Task NonBindingMaxRunning_TheNodeClaimsAheadLikeAnUnlimitedNode()
    {
        var schema = await postgres.NewSchemaAsync();
        using var gate = new ManualResetEventSlim();
        var behavior = new Behavior { Handle = (_, _) => gate.Wait(QueueNode.Patience) };
        await using var node = await StartTwoByTwoAsync(schema, behavior);
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 1000);
        await DurableQueueTests.WaitAsync(() => queue.ClusterPermitsAllowed is not null, "the node holds a grant");

        await node.Queue.EnqueueManyAsync(Enumerable.Range(0, 10).Select(i => new Notice(i)));

        // Two workers, two claims per worker: as without limits, the node holds four (two run, two wait on the node).
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1").Result == 4, "the node holds four items");
        Assert.Equal(4, queue.ClusterPermitsAllowed);
        Assert.Equal(4, queue.ClusterPermitsInUse);
        Assert.Equal(4, await postgres.ScalarAsync<int>($"SELECT granted_running FROM {schema}.nodes"));
        Assert.Equal(0L, queue.ClusterPermitWaiting); // nothing is held back by the limit
        gate.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 10, "every item ran");
    }

    [Fact]
    public async Task BindingMaxRunning_TheNodeHoldsItsGrant_AndTheClusterViewShowsPermitsGrantedAndInUse()
    {
        var schema = await postgres.NewSchemaAsync();
        using var gate = new ManualResetEventSlim();
        var behavior = new Behavior { Handle = (_, _) => gate.Wait(QueueNode.Patience) };
        await using var node = await StartTwoByTwoAsync(schema, behavior);
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 3);
        await DurableQueueTests.WaitAsync(() => queue.ClusterPermitsAllowed == 3, "the node holds the three permits");

        await node.Queue.EnqueueManyAsync(Enumerable.Range(0, 6).Select(i => new Notice(i)));
        // Three run; the fourth the node has room for waits in its reserve (claimed, not started) for a permit.
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1").Result == 4, "the node holds four items");
        await DurableQueueTests.WaitAsync(() => queue.ClusterReservedCount == 1, "one of them is reserved");

        await DurableQueueTests.WaitAsync(() => queue.GetClusterAsync().Result.LimitUse is { PermitsGranted: 3, PermitsInUse: 3 }, "the view shows the grant in use");
        Assert.Equal(4L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1"));
        Assert.Equal(3, queue.ClusterPermitsInUse);
        gate.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 6, "every item ran");
    }

    [Fact]
    public async Task GrantShrunkBelowItsUse_IsGivenBackAsSoonAsUseComesDown_NotAtTheNextHeartbeat()
    {
        // Heartbeats a minute apart: within the test, permits move only by the early renewals (short, or giving back).
        var schema = await postgres.NewSchemaAsync();
        using var release = new SemaphoreSlim(0);
        var started = 0;
        var first = new Behavior
        {
            Handle = (_, _) =>
            {
                Interlocked.Increment(ref started);
                Assert.True(release.Wait(QueueNode.Patience));
            },
        };
        await using var a = await StartSlowBeatingAsync(schema, first, "a");
        var queueA = (PostgreSqlWorkQueue<Notice>)a.Queue;
        await queueA.UpdateSettingsAsync(s => s with { MaxRunning = 2 }, "test");
        await DurableQueueTests.WaitAsync(() => queueA.ClusterPermitsAllowed == 2, "a holds both permits");
        await a.Queue.EnqueueManyAsync([new Notice(1), new Notice(2)]);
        await DurableQueueTests.WaitAsync(() => Volatile.Read(ref started) == 2, "a runs two items");

        var second = new Behavior();
        await using var b = await StartSlowBeatingAsync(schema, second, "b");
        var queueB = (PostgreSqlWorkQueue<Notice>)b.Queue;

        // A new version makes both renew: a's fair share is one now, but its row keeps the two it has in use. (Through the
        // API a change that changes nothing stores no new version: the version is bumped by hand, and announced.)
        await postgres.ExecuteAsync($"""
            UPDATE {schema}.queue_settings SET version = version + 1 WHERE queue = '{ClusterLimitSql.Queue}';
            SELECT pg_notify('{new StorageSql(schema).SettingsChannel}', '{ClusterLimitSql.Queue}');
            """);
        await DurableQueueTests.WaitAsync(() => queueA.ClusterPermitsAllowed == 1 && queueB.ClusterPermitsAllowed == 0, "a is allowed one, b none yet");
        await b.Queue.EnqueueAsync(new Notice(3));
        await DurableQueueTests.WaitAsync(() => queueB.ClusterPermitWaiting + queueA.ClusterPermitWaiting >= 1, "the third item waits for a permit");
        Assert.Empty(second.Deliveries);

        // One of a's items ends: a is down to its share and gives the other permit back; b, short, takes it. (The third
        // item may be in a's reserve by then: it then starts there, within a's allowance, or when a's other handler ends.)
        release.Release();
        await DurableQueueTests.WaitAsync(() => queueA.ClusterPermitsAllowed == 1 || queueA.ClusterReservedCount == 1, "a gave the permit back, or holds the third item in its reserve");
        Assert.True(queueA.ClusterPermitsAllowed + queueB.ClusterPermitsAllowed <= 2, "the nodes' allowances stay within MaxRunning");
        release.Release(2);
        await DurableQueueTests.WaitAsync(() => first.Deliveries.Count + second.Deliveries.Count == 3, "every item ran");
    }

    [Fact]
    public async Task GrantThatCannotBeRenewed_Lapses_AndTheNodeStartsNothingNew_UntilItRenewsAgain()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o =>
            {
                o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(100);
                o.PollInterval = TimeSpan.FromMilliseconds(50);
            },
            executor: o => o.WorkerCount = 2);
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 5);
        await DurableQueueTests.WaitAsync(() => queue.ClusterPermitsAllowed is > 0, "the node holds a grant");

        // The grant transaction locks the settings row: held by the test, no renewal can finish; the beat itself goes on.
        await using (var blocker = new NpgsqlConnection(postgres.ConnectionString))
        {
            await blocker.OpenAsync();
            await using var transaction = await blocker.BeginTransactionAsync();
            await using (var hold = new NpgsqlCommand($"SELECT 1 FROM {schema}.queue_settings WHERE queue = '{ClusterLimitSql.Queue}' FOR UPDATE", blocker, transaction))
            {
                await hold.ExecuteScalarAsync();
            }

            await DurableQueueTests.WaitAsync(() => queue.IsClusterPermitGrantLapsed, "the grant lapsed");
            await node.Queue.EnqueueAsync(new Notice(1));

            // The claim loop saw the item (it counts it as waiting for a permit) and did not start it.
            await DurableQueueTests.WaitAsync(() => queue.ClusterPermitWaiting == 1, "the item waits for a permit");
            Assert.Empty(behavior.Deliveries);
            Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1"));
            Assert.Equal(0, queue.ClusterPermitsAllowed);
            await transaction.RollbackAsync();
        }

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the item ran once the grant was renewed");
    }

    /// <summary>A node of two workers that claims two items per worker.</summary>
    private Task<QueueNode> StartTwoByTwoAsync(string schema, Behavior behavior) =>
        QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.ClaimsPerWorker = 2, executor: o => o.WorkerCount = 2);

    /// <summary>
    /// Node <paramref name="name"/> of two workers, one claim per worker, polling often and beating once a minute: within
    /// a test, its permits move only by the early renewals.
    /// </summary>
    private Task<QueueNode> StartSlowBeatingAsync(string schema, Behavior behavior, string name) =>
        QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: name,
            storage: o => (o.NodeName, o.NodeHeartbeatInterval, o.PollInterval, o.ClaimsPerWorker) = (name, TimeSpan.FromMinutes(1), TimeSpan.FromMilliseconds(50), 1),
            executor: o => o.WorkerCount = 2);
}
