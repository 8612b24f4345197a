using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>Cancel by id: waiting items become cancelled; running ones see their token fire, on whichever node runs them.</summary>
[Collection(PostgresCollection.Name)]
public sealed class CancelTests(PostgresFixture postgres)
{
    [Fact]
    public async Task ScheduledAndReadyItems_AreCancelled_NeverRun_AndCountedAsCancelled()
    {
        var schema = await postgres.NewSchemaAsync();
        using var release = new ManualResetEventSlim();
        using var blocking = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (item, _) =>
            {
                if (item.Number == 0)
                {
                    blocking.Set();
                    release.Wait(QueueNode.Patience);
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);
        await node.Queue.EnqueueAsync(new Notice(0));
        Assert.True(blocking.Wait(QueueNode.Patience)); // the only worker is busy: nothing more is claimed
        var ready = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        var scheduled = (await node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { Delay = TimeSpan.FromHours(1) })).ItemId;
        var kept = await node.Queue.EnqueueWithIdAsync(new Notice(3));

        Assert.Equal(CancelResult.Cancelled, await node.Queue.CancelAsync(ready));
        Assert.Equal(CancelResult.Cancelled, await node.Queue.CancelAsync(scheduled));
        Assert.Equal(CancelResult.AlreadyCancelled, await node.Queue.CancelAsync(ready));

        await postgres.ExecuteAsync($"UPDATE {schema}.items SET run_at = now() WHERE id = {scheduled}"); // its time comes: still cancelled
        release.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "the two items not cancelled are handled");
        Assert.Equal([0, 3], behavior.Deliveries.Select(d => d.Item.Number).Order());
        Assert.Equal(kept, behavior.Deliveries.Single(d => d.Item.Number == 3).Id);
        await DurableQueueTests.WaitAsync(() => node.Queue.ReadStatisticsAsync().Result is { Cancelled: 2, Completed: 2, Ready: 0, Scheduled: 0 }, "two cancelled and two completed");
        Assert.Equal("cancelled before it ran", await postgres.ScalarAsync<string>($"SELECT last_error FROM {schema}.items WHERE id = {ready}"));
        Assert.Empty(behavior.DeadLetters);
    }

    [Fact]
    public async Task FinishedOrUnknownItems_AreLeftAlone_AndTheResultSaysWhy()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior { Handle = (item, _) => { if (item.Number == 1) { throw new InvalidOperationException("dies"); } } };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 0);
        var completed = await node.Queue.EnqueueWithIdAsync(new Notice(0));
        var dead = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (2, 3)").Result == 2, "one completed, one dead");

        Assert.Equal(CancelResult.AlreadyCompleted, await node.Queue.CancelAsync(completed));
        Assert.Equal(CancelResult.AlreadyDeadLettered, await node.Queue.CancelAsync(dead));
        Assert.Equal(CancelResult.NotFound, await node.Queue.CancelAsync(dead + 1000));

        // An id of another queue of the same schema is not this queue's.
        await postgres.ExecuteAsync($$"""INSERT INTO {{schema}}.items (queue, payload) VALUES ('other', '{"Number": 9}')""");
        var other = await postgres.ScalarAsync<long>($"SELECT id FROM {schema}.items WHERE queue = 'other'");
        Assert.Equal(CancelResult.NotFound, await node.Queue.CancelAsync(other));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 4"));
    }

    [Fact]
    public async Task CancellingTheHeadOfAKey_LetsTheNextItemOfTheKeyRun_OnANodeThatDoesNotPoll()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer", keyed: true);
        var head = (await producer.Queue.EnqueueAsync(new Notice(0, "k"), new EnqueueOptions { Delay = TimeSpan.FromHours(1) })).ItemId;
        await producer.Queue.EnqueueAsync(new Notice(1, "k"));
        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            queue: o => o.OrderingKey = n => n.Key, storage: o => o.PollInterval = TimeSpan.FromHours(1));
        await DurableQueueTests.WaitAsync(() => consumer.Queue.ReadStatisticsAsync().Result is { Ready: 1, Scheduled: 1 }, "the consumer looked");
        Assert.Empty(behavior.Deliveries); // item 1 waits behind its key's scheduled head

        Assert.Equal(CancelResult.Cancelled, await producer.Queue.CancelAsync(head));

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the next item of the key runs");
        Assert.Equal(1, behavior.Deliveries.Single().Item.Number);
    }

    [Fact]
    public async Task RunningItem_InThisProcess_SeesItsTokenFire_AndEndsCancelled_NotRetried_NotADeadLetter()
    {
        var schema = await postgres.NewSchemaAsync();
        using var running = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            HandleWithToken = (_, _, token) =>
            {
                running.Set();
                Assert.True(token.WaitHandle.WaitOne(QueueNode.Patience), "the token did not fire");
                token.ThrowIfCancellationRequested();
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            queue: o => { o.MaxRetryAttempts = 3; o.AttemptTimeout = Timeout.InfiniteTimeSpan; });
        var id = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        Assert.True(running.Wait(QueueNode.Patience));

        Assert.Equal(CancelResult.CancellationRequested, await node.Queue.CancelAsync(id));

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id} AND state = 4").Result == 1, "the item is cancelled");
        Assert.StartsWith("cancelled while running: System.OperationCanceledException", await postgres.ScalarAsync<string>($"SELECT last_error FROM {schema}.items WHERE id = {id}"), StringComparison.Ordinal);
        Assert.Equal(1, await postgres.ScalarAsync<int>($"SELECT attempts FROM {schema}.items WHERE id = {id}"));
        Assert.Empty(behavior.DeadLetters);
        Assert.Equal(CancelResult.AlreadyCancelled, await node.Queue.CancelAsync(id));
    }

    [Fact]
    public async Task RunningItem_OnAConsumerInAnotherProcess_SeesItsTokenFireThere()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var consumer = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.FromSeconds(20), TimeSpan.FromSeconds(30));
        var id = await producer.Queue.EnqueueWithIdAsync(new Notice(1));
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.starts WHERE item_id = {id}").Result == 1, "the handler runs in the child process");

        Assert.Equal(CancelResult.CancellationRequested, await producer.Queue.CancelAsync(id));

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.cancellations WHERE item_id = {id} AND node = {consumer.Id}").Result == 1, "the child's handler saw its token fire");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id} AND state = 4").Result == 1, "the item is cancelled");
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.deliveries")); // it stopped before its work was done
    }

    [Fact]
    public async Task ClaimedItemNotYetStarted_IsCancelled_WithoutRunning()
    {
        var schema = await postgres.NewSchemaAsync();
        using var release = new ManualResetEventSlim();
        using var blocking = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (item, _) =>
            {
                if (item.Number == 0)
                {
                    blocking.Set();
                    release.Wait(QueueNode.Patience);
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.ClaimsPerWorker = 2, executor: o => o.WorkerCount = 1);
        await node.Queue.EnqueueAsync(new Notice(0));
        Assert.True(blocking.Wait(QueueNode.Patience));
        var queued = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        await DurableQueueTests.WaitAsync(() => node.Queue.ReadStatisticsAsync().Result.Running == 2, "the second item is claimed, queued behind the first");

        Assert.Equal(CancelResult.CancellationRequested, await node.Queue.CancelAsync(queued));
        release.Set();

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {queued} AND state = 4").Result == 1, "the queued item is cancelled");
        Assert.Equal("cancelled before it ran", await postgres.ScalarAsync<string>($"SELECT last_error FROM {schema}.items WHERE id = {queued}"));
        Assert.Equal([0], behavior.Deliveries.Select(d => d.Item.Number));
    }

    [Fact]
    public async Task CancellationStoredWithoutANotification_ReachesTheRunningHandler_AtTheNextLeaseRenewal()
    {
        var schema = await postgres.NewSchemaAsync();
        using var running = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            HandleWithToken = (_, _, token) =>
            {
                running.Set();
                Assert.True(token.WaitHandle.WaitOne(QueueNode.Patience), "the token did not fire");
                token.ThrowIfCancellationRequested();
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            queue: o => o.AttemptTimeout = Timeout.InfiniteTimeSpan);
        var id = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        Assert.True(running.Wait(QueueNode.Patience));

        // As if the node's listener was reconnecting when the cancellation was stored: no notification reaches it.
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET cancel_requested_at = now() WHERE id = {id}");

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id} AND state = 4").Result == 1, "the item is cancelled");
    }

    [Fact]
    public async Task RunningItemWhoseNodeDied_WithACancellationAsked_IsCancelledWhenItsLeaseExpires()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, state, attempts, lease_owner, lease_until, cancel_requested_at)
            VALUES ('notices', '{"Number": 7}', 1, 1, 'gone:1:x', now() - interval '1 second', now())
            """);

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 4").Result == 1, "the reaper cancels it");
        Assert.StartsWith("cancelled: the lease of gone:1:x expired", await postgres.ScalarAsync<string>($"SELECT last_error FROM {schema}.items"), StringComparison.Ordinal);
        Assert.Empty(behavior.Deliveries);
        Assert.Empty(behavior.DeadLetters);
    }

    [Fact]
    public async Task CancelAsync_OfAnItemWhoseIdAndQueueRepeatInAnotherSchema_CancelsOnlyItsOwnSchemasItem()
    {
        // Two applications in one database, each with its schema and a queue named "notices": ids start at 1 in each.
        var schemaA = await postgres.NewSchemaAsync();
        var schemaB = await postgres.NewSchemaAsync();
        using var runningA = new ManualResetEventSlim();
        var behaviorA = new Behavior
        {
            HandleWithToken = (_, _, token) =>
            {
                runningA.Set();
                Assert.True(token.WaitHandle.WaitOne(QueueNode.Patience), "the token did not fire");
                token.ThrowIfCancellationRequested();
            },
        };
        using var runningB = new ManualResetEventSlim();
        var releaseB = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var cancelledInB = false;
        var behaviorB = new Behavior
        {
            HandleWithToken = (item, _, token) =>
            {
                if (item.Number == 1)
                {
                    runningB.Set();
                    Assert.True(releaseB.Task.Wait(QueueNode.Patience, CancellationToken.None), "item 1 of b was not released"); // not its token: a cancellation must not end it
                    Volatile.Write(ref cancelledInB, token.IsCancellationRequested);
                    token.ThrowIfCancellationRequested();
                }
            },
        };
        await using var a = await QueueNode.StartAsync(postgres.ConnectionString, schemaA, behaviorA, node: "a", queue: o => o.AttemptTimeout = Timeout.InfiniteTimeSpan);
        // b claims only when woken (its own enqueues, notifications), so the test knows what it has heard of.
        await using var b = await QueueNode.StartAsync(postgres.ConnectionString, schemaB, behaviorB, node: "b",
            queue: o => o.AttemptTimeout = Timeout.InfiniteTimeSpan, storage: o => o.PollInterval = TimeSpan.FromHours(1));
        var idA = await a.Queue.EnqueueWithIdAsync(new Notice(1));
        var idB = await b.Queue.EnqueueWithIdAsync(new Notice(1));
        Assert.Equal(idA, idB);
        Assert.True(runningA.Wait(QueueNode.Patience));
        Assert.True(runningB.Wait(QueueNode.Patience));
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %boundedwork_settings%'").Result >= 2,
            "both nodes listen (the settings channel is the last they listen on)");

        Assert.Equal(CancelResult.CancellationRequested, await a.Queue.CancelAsync(idA));
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schemaA}.items WHERE id = {idA} AND state = 4").Result == 1, "a's item is cancelled");

        // An enqueue in b that notifies when it commits, after the cancellation committed: b's listener hears every
        // notification in commit order, so once b runs this item it has heard whatever the cancellation sent.
        await using (var connection = new Npgsql.NpgsqlConnection(postgres.ConnectionString))
        {
            await connection.OpenAsync();
            await b.Queue.EnqueueAsync(new Notice(2), connection);
        }

        await behaviorB.WaitUntilAsync(() => behaviorB.Deliveries.Any(d => d.Item.Number == 2), "b runs the item enqueued after the cancellation");
        releaseB.SetResult();
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schemaB}.items WHERE id = {idB} AND state IN (2, 4)").Result == 1, "b's item 1 ends");
        Assert.False(Volatile.Read(ref cancelledInB), "b's item 1 saw its token fire");
        Assert.Equal(2, await postgres.ScalarAsync<short>($"SELECT state FROM {schemaB}.items WHERE id = {idB}"));
        Assert.Contains(behaviorB.Deliveries, d => d.Id == idB);
    }

    [Fact]
    public void ChannelNames_AreEachSchemasOwn_AndFitPostgreSqlsLimit_ForTheLongestSchemaNames()
    {
        var longA = "a" + new string('x', 61) + "1";
        var longB = "a" + new string('x', 61) + "2";
        string[] channels = [.. new[] { "boundedwork", "app_a", "app_b", longA, longB }
            .SelectMany(schema => new StorageSql(schema) is var sql ? new[] { sql.NotifyChannel, sql.CancelChannel, sql.SettingsChannel } : [])];

        Assert.Equal(channels.Length, channels.Distinct(StringComparer.Ordinal).Count());
        Assert.All(channels, channel => Assert.InRange(System.Text.Encoding.UTF8.GetByteCount(channel), 1, StorageSql.MaxChannelLength));
        Assert.Equal("boundedwork_cancel.app_a", new StorageSql("app_a").CancelChannel);
    }

    [Fact]
    public async Task CancelAsync_InASchemaWithTheLongestName_ReachesTheRunningItem_OnItsSchemasChannel()
    {
        var schema = "t_" + Guid.NewGuid().ToString("N") + new string('x', 61 - 32);
        Assert.Equal(63, schema.Length);
        using var running = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            HandleWithToken = (_, _, token) =>
            {
                running.Set();
                Assert.True(token.WaitHandle.WaitOne(QueueNode.Patience), "the token did not fire");
                token.ThrowIfCancellationRequested();
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.AttemptTimeout = Timeout.InfiniteTimeSpan);
        var id = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        Assert.True(running.Wait(QueueNode.Patience));

        await using var listener = new Npgsql.NpgsqlConnection(postgres.ConnectionString);
        await listener.OpenAsync();
        var heard = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        listener.Notification += (_, n) => heard.TrySetResult(n.Channel + " " + n.Payload);
        await using (var listen = new Npgsql.NpgsqlCommand(StorageSql.Listen(new StorageSql(schema).CancelChannel), listener))
        {
            await listen.ExecuteNonQueryAsync();
        }

        Assert.Equal(CancelResult.CancellationRequested, await node.Queue.CancelAsync(id));
        using var patience = new CancellationTokenSource(QueueNode.Patience);
        while (!heard.Task.IsCompleted)
        {
            await listener.WaitAsync(patience.Token);
        }

        Assert.Equal(new StorageSql(schema).CancelChannel + " " + id + ":notices", await heard.Task);
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id} AND state = 4").Result == 1, "the item is cancelled");
    }
}
