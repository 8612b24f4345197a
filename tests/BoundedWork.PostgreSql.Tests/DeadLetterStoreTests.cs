using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>The dead letters kept in the table, through IDeadLetterStore: list, read, requeue (then handled), purge.</summary>
[Collection(PostgresCollection.Name)]
public sealed class DeadLetterStoreTests(PostgresFixture postgres)
{
    [Fact]
    public async Task DeadLetters_AreListedMostRecentFirst_InPages_WithinATimeWindow_WithoutPayloads()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var ids = await InsertDeadLettersAsync(schema, 7); // dead 7, 6, ..., 1 minutes ago
        var store = node.Host.Services.GetServices<IDeadLetterStore>().Single();
        Assert.Equal("notices", store.QueueName);

        var seen = new List<long>();
        string? cursor = null;
        var pages = 0;
        do
        {
            var page = await store.ListDeadLettersAsync(new DeadLetterQuery { Limit = 3, Cursor = cursor });
            Assert.All(page.Items, letter => Assert.Null(letter.Payload));
            seen.AddRange(page.Items.Select(letter => letter.ItemId));
            cursor = page.NextCursor;
            pages++;
        }
        while (cursor is not null);

        Assert.Equal(ids.AsEnumerable().Reverse(), seen); // the most recent (the last inserted) first
        Assert.Equal(3, pages);

        var window = await store.ListDeadLettersAsync(new DeadLetterQuery { Since = DateTimeOffset.UtcNow.AddMinutes(-4.5), Until = DateTimeOffset.UtcNow.AddMinutes(-1.5) });
        Assert.Equal([ids[5], ids[4], ids[3]], window.Items.Select(letter => letter.ItemId)); // dead 2, 3 and 4 minutes ago
        Assert.Null(window.NextCursor);
        var first = window.Items[0];
        Assert.Equal("Failed: System.InvalidOperationException: number 5", first.LastError);
        Assert.Equal(3, first.Attempts);
        Assert.Equal("k5", first.OrderingKey);
        Assert.Equal(-2, first.Priority);

        await Assert.ThrowsAsync<ArgumentException>(() => store.ListDeadLettersAsync(new DeadLetterQuery { Cursor = "not-a-cursor" }));
        await Assert.ThrowsAsync<ArgumentException>(() => store.ListDeadLettersAsync(new DeadLetterQuery { Limit = 501 }));
    }

    [Fact]
    public async Task DeadLetter_IsReadWithItsPayload_CutWhenLong()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var id = (await InsertDeadLettersAsync(schema, 1))[0];

        var letter = await node.Queue.GetDeadLetterAsync(id, maxPayloadLength: 1000);
        Assert.NotNull(letter);
        Assert.Equal("{\"Key\": \"k0\", \"Number\": 0}", letter.Payload);
        Assert.False(letter.IsPayloadTruncated);
        Assert.Equal(letter.Payload!.Length, letter.PayloadLength);
        Assert.Equal("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", letter.TraceParent);

        var cut = await node.Queue.GetDeadLetterAsync(id, maxPayloadLength: 5);
        Assert.Equal("{\"Key", cut!.Payload);
        Assert.True(cut.IsPayloadTruncated);
        Assert.Equal(letter.PayloadLength, cut.PayloadLength);

        Assert.Null(await node.Queue.GetDeadLetterAsync(id + 100, 1000));
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET state = 2 WHERE id = {id}");
        Assert.Null(await node.Queue.GetDeadLetterAsync(id, 1000)); // completed: not a dead letter
    }

    [Fact]
    public async Task RequeuedDeadLetter_RunsAgainAndCompletes_KeepingItsIdAndTraceContext_ItsAttemptsGoOn()
    {
        var schema = await postgres.NewSchemaAsync();
        var fail = true;
        var behavior = new Behavior
        {
            Handle = (_, _) =>
            {
                if (Volatile.Read(ref fail))
                {
                    throw new InvalidOperationException("the provider is down");
                }
            },
        };
        var traces = new System.Collections.Concurrent.ConcurrentQueue<string?>();
        behavior.HandleWithToken = (item, context, _) =>
        {
            traces.Enqueue(context.TraceParent);
            behavior.Handle(item, context);
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 1);

        long id;
        string producer;
        using (var activity = new System.Diagnostics.Activity("producer").SetIdFormat(System.Diagnostics.ActivityIdFormat.W3C).Start())
        {
            producer = activity.Id!;
            id = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        }

        await behavior.WaitUntilAsync(() => behavior.DeadLetters.Count == 1, "the item is a dead letter after two deliveries");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3").Result == 1, "the dead letter is recorded");

        Volatile.Write(ref fail, false);
        Assert.Equal(1, await node.Queue.RequeueDeadLettersAsync(DeadLetterSelection.ByIds([id])));

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the requeued item is handled");
        var delivery = Assert.Single(behavior.Deliveries);
        Assert.Equal(id, delivery.Id);
        Assert.Equal(3, delivery.Attempt); // the third delivery of the item: a handler can tell it may have run before
        Assert.Equal([producer, producer, producer], traces);
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id} AND state = 2").Result == 1, "the item completed");
        Assert.Equal(0, await node.Queue.RequeueDeadLettersAsync(DeadLetterSelection.ByIds([id]))); // no longer a dead letter
    }

    [Fact]
    public async Task RequeuedDeadLetter_GetsTheQueuesRetriesAgain_AndDiesAgainAfterThem()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior { Handle = (_, _) => throw new InvalidOperationException("still down") };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 2);
        var id = await node.Queue.EnqueueWithIdAsync(new Notice(1));
        await behavior.WaitUntilAsync(() => behavior.DeadLetters.Count == 1, "a dead letter after three deliveries");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3").Result == 1, "recorded");

        Assert.Equal(1, await node.Queue.RequeueDeadLettersAsync(DeadLetterSelection.All()));

        await behavior.WaitUntilAsync(() => behavior.DeadLetters.Count == 2, "a dead letter again after three more deliveries");
        Assert.Equal([3, 6], behavior.DeadLetters.Select(letter => letter.Attempts));
        // The handlers get a dead letter before the table records it: wait for the row, then read its deliveries.
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id} AND state = 3").Result == 1, "recorded again");
        Assert.Equal(6, await postgres.ScalarAsync<int>($"SELECT attempts FROM {schema}.items WHERE id = {id} AND state = 3")); // recorded with six deliveries
    }

    [Fact]
    public async Task RequeueAndPurge_TakeTheSelection_AndLeaveTheRest()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var ids = await InsertDeadLettersAsync(schema, 6); // dead 6, ..., 1 minutes ago
        await postgres.ExecuteAsync($$"""INSERT INTO {{schema}}.items (queue, payload, state, finished_at) VALUES ('other', '{"Number": 99}', 3, now())""");

        Assert.Equal(2, await node.Queue.PurgeDeadLettersAsync(DeadLetterSelection.ByIds([ids[0], ids[1], ids[1] + 1000])));
        Assert.Equal(2, await node.Queue.RequeueDeadLettersAsync(DeadLetterSelection.All(since: DateTimeOffset.UtcNow.AddMinutes(-2.5))));
        Assert.Equal(2, await node.Queue.PurgeDeadLettersAsync(DeadLetterSelection.All(until: DateTimeOffset.UtcNow.AddMinutes(-2.5))));

        var states = await postgres.ScalarAsync<string>($"SELECT string_agg(id || ':' || state, ',' ORDER BY id) FROM {schema}.items WHERE queue = 'notices'");
        Assert.Equal($"{ids[4]}:0,{ids[5]}:0", states);
        Assert.Equal(1L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE queue = 'other' AND state = 3")); // another queue's dead letter is not this queue's
        Assert.Equal(0, await node.Queue.PurgeDeadLettersAsync(DeadLetterSelection.All()));
    }

    [Fact]
    public async Task RequeuedDeadLetterOfAKey_WaitsForTheRunningItemOfItsKey_AndTheItemsBehindItWaitForIt()
    {
        var schema = await postgres.NewSchemaAsync();
        using var releaseB = new ManualResetEventSlim();
        using var bRunning = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (item, context) =>
            {
                if (item.Number == 0 && context.Attempt == 1)
                {
                    throw new InvalidOperationException("first time");
                }

                if (item.Number == 1)
                {
                    bRunning.Set();
                    releaseB.Wait(QueueNode.Patience);
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            queue: o => { o.OrderingKey = n => n.Key == "dies" ? "k" : n.Key; o.MaxRetryAttempts = 0; },
            executor: o => o.WorkerCount = 3);
        var a = await node.Queue.EnqueueWithIdAsync(new Notice(0, "dies"));
        await behavior.WaitUntilAsync(() => behavior.DeadLetters.Count == 1, "A is a dead letter");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3").Result == 1, "recorded");
        await node.Queue.EnqueueAsync(new Notice(1, "k"));
        Assert.True(bRunning.Wait(QueueNode.Patience)); // B, a newer item of the key, runs

        Assert.Equal(1, await node.Queue.RequeueDeadLettersAsync(DeadLetterSelection.ByIds([a])));
        await node.Queue.EnqueueAsync(new Notice(2, "k"));
        await DurableQueueTests.WaitAsync(() => node.Queue.ReadStatisticsAsync().Result is { Ready: 2, Running: 1 }, "A and C are ready, B runs");
        Assert.Empty(behavior.Deliveries); // A waits for B (one at a time per key), C waits for A (older)

        releaseB.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 3, "B, then A, then C");
        Assert.Equal([1, 0, 2], behavior.Deliveries.Select(d => d.Item.Number));
    }

    /// <summary>Inserts dead letters straight into the table, the i-th dead (count - i) minutes ago; returns their ids in order.</summary>
    private async Task<long[]> InsertDeadLettersAsync(string schema, int count)
    {
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, ordering_key, priority, state, attempts, finished_at, last_error, traceparent)
            SELECT 'notices', jsonb_build_object('Number', i, 'Key', 'k' || i), 'k' || i, -i % 3, 3, 3,
                   now() - ({{count}} - i) * interval '1 minute', 'Failed: System.InvalidOperationException: number ' || i,
                   '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
            FROM generate_series(0, {{count}} - 1) AS i ORDER BY i
            """);
        return await postgres.ScalarAsync<long[]>($"SELECT array_agg(id ORDER BY id) FROM {schema}.items WHERE queue = 'notices'");
    }
}
