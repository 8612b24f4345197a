using System.Collections.Concurrent;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Fleet-wide pauses and durable snoozes, measured outside the library: handlers record their starts (the consumers'
/// <c>runs</c>, or the test's own list), and a trigger records every claim with the start of the statement that made it
/// (<see cref="ClusterLimitSql"/>), both on the database's clock.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class FleetPauseTests(PostgresFixture postgres)
{
    private static readonly TimeSpan Lease = TimeSpan.FromSeconds(2);

    [Fact]
    public async Task Pause_ThreeConsumerProcesses_NothingClaimedAfterItCommitsNothingStartedAfterEveryNodeAppliedIt()
    {
        const int Items = 400;
        var schema = await postgres.NewSchemaAsync();
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true);
        await ClusterLimitSql.RecordClaimsAsync(postgres, schema);
        var control = (IWorkQueuePauseControl)producer.Storage;
        var environment = new Dictionary<string, string> { ["BW_HEARTBEAT_MS"] = "200" };
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.FromMilliseconds(20), Lease, limits: true, environment: environment));
            }

            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i, "k" + (i % 40))));
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(DISTINCT node) FROM {schema}.runs").Result == 3, "every consumer runs items");

            var pause = await control.PauseAsync("downstream outage", Timeout.InfiniteTimeSpan, "ops@example.com");
            var committed = await ClusterLimitSql.NowAsync(postgres);
            var version = await postgres.ScalarAsync<long>($"SELECT version FROM {schema}.queue_settings WHERE queue = 'notices'");
            Assert.Equal("downstream outage", pause.Reason);
            Assert.Null(pause.Until);

            // Took effect on a node: the node reports the pause's settings version (it applies a pause before that beat).
            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE settings_version >= {version} AND expires_at > now()").Result == 3,
                "every node applied the pause");
            var applied = await ClusterLimitSql.NowAsync(postgres);
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE ended_at IS NULL").Result == 0, "the running handlers finished");

            // Five more heartbeats of every node: nothing is claimed or started meanwhile.
            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE last_seen > '{applied:O}'::timestamptz + interval '1 second'").Result == 3,
                "five heartbeats passed");
            Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.claims WHERE at > '{committed:O}'::timestamptz"));
            Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE started_at > '{applied:O}'::timestamptz"));
            var left = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0");
            Assert.True(left > 0, "items were left to run after the resume");
            Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1"));

            var pauses = await control.GetPausesAsync();
            Assert.Equal("downstream outage", pauses.Queue?.Reason);
            Assert.Equal("ops@example.com", pauses.Queue?.By);

            var ended = await control.ResumeAsync("ops@example.com");
            Assert.Equal("downstream outage", ended?.Reason);
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every item is completed");
            Assert.Equal(Items, await postgres.ScalarAsync<long>($"SELECT count(DISTINCT number) FROM {schema}.runs"));
            Assert.Null((await control.GetPausesAsync()).Queue);
            Assert.Null(await control.ResumeAsync("ops@example.com")); // nothing left to resume
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
    public async Task Pause_NodeStartedDuringIt_StaysPausedAndSaysWhy_ThenRunsEverythingOnResume()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var control = (IWorkQueuePauseControl)producer.Storage;
        await control.PauseAsync("maintenance window", Timeout.InfiniteTimeSpan, "ops");
        await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 20).Select(i => new Notice(i)));

        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "late", storage: o => o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(100));
        var joined = await ClusterLimitSql.NowAsync(postgres);
        var statistics = node.Storage.Statistics;
        Assert.Equal("maintenance window", statistics.Pause?.Reason);
        Assert.Contains("paused fleet-wide by ops", statistics.Warning, StringComparison.Ordinal);
        Assert.Contains("maintenance window", statistics.Warning, StringComparison.Ordinal);

        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE last_seen > '{joined:O}'::timestamptz + interval '500 milliseconds'").Result == 1,
            "five heartbeats of the new node");
        Assert.Empty(behavior.Deliveries);
        Assert.Equal(20, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0 AND attempts = 0"));

        await control.ResumeAsync("ops");
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 20, "every item ran");
        Assert.All(behavior.Deliveries, d => Assert.Equal(1, d.Attempt));
        await DurableQueueTests.WaitAsync(() => node.Storage.Statistics.Pause is null, "the node no longer reports the pause");
    }

    [Fact]
    public async Task Pause_ItemsTheNodeHeldUnstarted_AreHandedBackUnrun_RunningOneFinishes_ShutdownLosesNothing()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var control = (IWorkQueuePauseControl)producer.Storage;
        await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 5).Select(i => new Notice(i)));
        using var started = new SemaphoreSlim(0);
        using var release = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (_, _) =>
            {
                started.Release();
                release.Wait(QueueNode.Patience);
            },
        };

        // One worker, two claims per worker: the node holds one item running and one more claimed, unstarted.
        var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, executor: o => o.WorkerCount = 1, storage: o => o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(100));
        try
        {
            Assert.True(await started.WaitAsync(QueueNode.Patience), "the first item started");
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1").Result == 2, "the node holds a second item");

            await control.PauseAsync("incident", Timeout.InfiniteTimeSpan, "ops");
            await DurableQueueTests.WaitAsync(() => node.Storage.Statistics.Pause is not null, "the node applied the pause");
            release.Set(); // the running item finishes; the held one reaches a worker, which hands it back

            await DurableQueueTests.WaitAsync(
                () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0 AND attempts = 0").Result == 4,
                "the held item is ready again, its attempt not counted");
            Assert.Equal(1, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 2"));
            Assert.Single(behavior.Deliveries);
        }
        finally
        {
            release.Set();
            await node.DisposeAsync(); // a shutdown while paused
        }

        Assert.Equal(4, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0 AND attempts = 0"));
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1"));
        Assert.Single(behavior.Deliveries);
    }

    [Fact]
    public async Task Pause_WithAnEnd_ResumesByItself_NothingClaimedBeforeTheEnd()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.RecordClaimsAsync(postgres, schema);
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        var control = (IWorkQueuePauseControl)producer.Storage;
        var pause = await control.PauseAsync("deploy", TimeSpan.FromSeconds(1.5), "ops");
        Assert.NotNull(pause.Until);
        Assert.Equal(TimeSpan.FromSeconds(1.5), pause.Until!.Value - pause.Since);
        await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 10).Select(i => new Notice(i)));

        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(100));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 10, "every item ran once the pause ended");

        // Claimed only once the end had come, on the database's clock (the claim's own statement time).
        var firstClaim = await postgres.ScalarAsync<DateTime>($"SELECT min(at) FROM {schema}.claims");
        Assert.True(firstClaim >= pause.Until.Value.UtcDateTime, $"an item was claimed at {firstClaim:O}, before the pause's end {pause.Until:O}");
        Assert.Null((await control.GetPausesAsync()).Queue);
        await DurableQueueTests.WaitAsync(() => node.Storage.Statistics.Pause is null, "the node no longer reports the pause");
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    public async Task PauseKey_OtherKeysAndUnkeyedItemsFlow_TheKeyWaitsInOrderUntilResumed(int perKey)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: perKey);
        var control = (IWorkQueuePauseControl)producer.Storage;
        var keyPause = await control.PauseAsync("customer 42 under review", Timeout.InfiniteTimeSpan, "ops", key: "hold");
        Assert.Equal("hold", keyPause.Key);

        // Interleaved: the paused key, two others, unkeyed items; the paused key's first items in front.
        var items = new List<Notice>();
        for (var i = 0; i < 40; i++)
        {
            items.Add(new Notice(i, (i % 4) switch { 0 => "hold", 1 => "a", 2 => "b", _ => null }));
        }

        await producer.Queue.EnqueueManyAsync(items);
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.OrderingKey = n => n.Key, executor: o => o.WorkerCount = 4);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 30, "every item of the other keys and every unkeyed item ran");

        Assert.DoesNotContain(behavior.Deliveries, d => d.Item.Key == "hold");
        Assert.Equal(10, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE ordering_key = 'hold' AND state = 0 AND attempts = 0"));
        var pauses = await control.GetPausesAsync();
        Assert.Null(pauses.Queue);
        Assert.Equal("hold", Assert.Single(pauses.Keys).Key);

        Assert.Equal("customer 42 under review", (await control.ResumeAsync("ops", key: "hold"))?.Reason);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 40, "the resumed key's items ran");
        var held = behavior.Deliveries.Where(d => d.Item.Key == "hold").Select(d => d.Item.Number).ToList();
        if (perKey == 1)
        {
            Assert.Equal(held.Order().ToList(), held); // one at a time, in enqueue order
        }

        Assert.Empty((await control.GetPausesAsync()).Keys);
    }

    [Fact]
    public async Task Snooze_DurableItem_RunsAgainLaterWithTheSameAttempt_NotCountedAgainstRetries_KeyWaits()
    {
        var schema = await postgres.NewSchemaAsync();
        var snoozes = new ConcurrentDictionary<int, int>();
        var snoozedRows = new TaskCompletionSource<long>(TaskCreationOptions.RunContinuationsAsynchronously);
        var behavior = new Behavior
        {
            Handle = (notice, context) =>
            {
                // Item 0 snoozes three times (a queue without retries would dead-letter it at its first failure).
                if (notice.Number == 0 && snoozes.AddOrUpdate(0, 1, (_, n) => n + 1) <= 3)
                {
                    context.Snooze(TimeSpan.FromMilliseconds(150));
                }
            },
        };
        await using var node = await QueueNode.StartAsync(
            postgres.ConnectionString, schema, behavior, queue: o => { o.OrderingKey = n => n.Key; o.MaxRetryAttempts = 0; });
        await node.Queue.EnqueueAsync(new Notice(0, "k"));
        await node.Queue.EnqueueAsync(new Notice(1, "k"));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 5, "item 0 ran four times and item 1 once");

        Assert.Equal([0, 0, 0, 0, 1], behavior.Deliveries.Select(d => d.Item.Number)); // the key's next item waited for the snoozed one
        Assert.All(behavior.Deliveries, d => Assert.Equal(1, d.Attempt));
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 2").Result == 2, "both completed");
        Assert.Equal(1, await postgres.ScalarAsync<int>($"SELECT attempts FROM {schema}.items WHERE id = (SELECT min(id) FROM {schema}.items)"));
        Assert.Empty(behavior.DeadLetters);
    }

    [Fact]
    public async Task PauseApi_BadInput_ClearErrorNamingTheArgument_NothingChanges()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var control = (IWorkQueuePauseControl)producer.Storage;

        Assert.Equal("reason", (await Assert.ThrowsAsync<ArgumentException>(() => control.PauseAsync("line\r\nforged", Timeout.InfiniteTimeSpan, "ops"))).ParamName);
        Assert.Equal("reason", (await Assert.ThrowsAsync<ArgumentException>(() => control.PauseAsync(" ", Timeout.InfiniteTimeSpan, "ops"))).ParamName);
        Assert.Equal("duration", (await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => control.PauseAsync("x", TimeSpan.FromSeconds(-1), "ops"))).ParamName);
        Assert.Equal("duration", (await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => control.PauseAsync("x", TimeSpan.FromDays(31), "ops"))).ParamName);
        Assert.Equal("changedBy", (await Assert.ThrowsAsync<ArgumentException>(() => control.PauseAsync("x", Timeout.InfiniteTimeSpan, "a\nb"))).ParamName);
        Assert.Equal("key", (await Assert.ThrowsAsync<ArgumentException>(() => control.PauseAsync("x", Timeout.InfiniteTimeSpan, "ops", key: "a\0b"))).ParamName);
        Assert.Equal("key", (await Assert.ThrowsAsync<ArgumentException>(() => control.PauseAsync("x", Timeout.InfiniteTimeSpan, "ops", key: ""))).ParamName);

        var pauses = await control.GetPausesAsync();
        Assert.Null(pauses.Queue);
        Assert.Empty(pauses.Keys);
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.queue_settings"));
    }
}
