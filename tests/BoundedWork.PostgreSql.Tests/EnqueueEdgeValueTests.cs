using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The ends of every time, number and key a producer gives the storage: each either works end to end (stored, counted
/// in the statistics, claimed when due) or is refused at the enqueue with an error naming it; none poisons the queue.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class EnqueueEdgeValueTests(PostgresFixture postgres)
{
    [Fact]
    public async Task RunAtDefault_IsATimePast_RunsNow_AndTheStatisticsAndOtherKeysClaimsGoOn()
    {
        var schema = await postgres.NewSchemaAsync();
        using var release = new ManualResetEventSlim();
        using var holding = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (item, _) =>
            {
                if (item.Number == 0)
                {
                    holding.Set();
                    release.Wait(QueueNode.Patience);
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.OrderingKey = n => n.Key);

        // Key "k" is busy, so its next item, at RunAt default(DateTimeOffset), waits: every claim leaves it waiting.
        await node.Queue.EnqueueAsync(new Notice(0, "k"));
        Assert.True(holding.Wait(QueueNode.Patience));
        var waiting = await node.Queue.EnqueueAsync(new Notice(1, "k"), new EnqueueOptions { RunAt = default });
        await ((IWorkQueue<Notice>)node.Queue).EnqueueAsync(new Notice(4, "k"), new EnqueueOptions { RunAt = default(DateTimeOffset) });
        var bulk = await node.Queue.EnqueueManyAsync([new Notice(2, "m")], new EnqueueOptions { RunAt = DateTimeOffset.MinValue });

        var statistics = await node.Queue.ReadStatisticsAsync(); // the key's first item runs, the others may
        Assert.InRange(statistics.Running + statistics.Ready + statistics.Completed, 3, 4);
        await node.Host.Services.GetServices<IWorkQueueCluster>().Single().GetClusterAsync();

        // Another key's item is claimed while key k's item waits.
        await node.Queue.EnqueueAsync(new Notice(3, "other"));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count(d => d.Item.Number is 2 or 3) == 2, "the other keys' items run");
        release.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 5, "every item runs");
        Assert.Equal([0, 1, 4], behavior.Deliveries.Where(d => d.Item.Key == "k").Select(d => d.Item.Number)); // key k in enqueue order
        Assert.Contains(behavior.Deliveries, d => d.Id == waiting.ItemId);
        Assert.Contains(behavior.Deliveries, d => d.Id == bulk[0]);
        Assert.True((await node.Queue.ReadStatisticsAsync()).IsAvailable);
        Assert.True(await postgres.ScalarAsync<bool>($"SELECT bool_and(isfinite(run_at)) FROM {schema}.items"), "a run_at is infinite");
    }

    [Fact]
    public async Task OutOfRangeTimesAndPriorities_AreRefusedNamingTheField_AndTheEndsOfTheRangesWorkEndToEnd()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "producer");
        IWorkQueue<Notice> typed = node.Queue;

        foreach (var (options, field) in new (EnqueueOptions, string)[]
        {
            (new() { Delay = TimeSpan.FromTicks(-1) }, "Delay"),
            (new() { Delay = TimeSpan.MinValue }, "Delay"),
            (new() { Delay = TimeSpan.MaxValue }, "Delay"),
            (new() { Delay = EnqueueOptions.MaxDelay + TimeSpan.FromTicks(1) }, "Delay"),
            (new() { RunAt = DateTimeOffset.MaxValue }, "RunAt"),
            (new() { RunAt = DateTimeOffset.UtcNow.AddYears(2) }, "RunAt"),
            (new() { Priority = EnqueueOptions.MaxPriority + 1 }, "Priority"),
            (new() { Priority = int.MinValue }, "Priority"),
            (new() { Priority = short.MaxValue + 1 }, "Priority"),
        })
        {
            var refused = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => node.Queue.EnqueueAsync(new Notice(9), options));
            Assert.Contains("EnqueueOptions." + field, refused.Message, StringComparison.Ordinal);
            var refusedBulk = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => node.Queue.EnqueueManyAsync([new Notice(9)], options));
            Assert.Contains("EnqueueOptions." + field, refusedBulk.Message, StringComparison.Ordinal);
        }

        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(async () => await typed.EnqueueAsync(new Notice(9), new EnqueueOptions { Delay = TimeSpan.MaxValue }));
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(async () => await typed.EnqueueAsync(new Notice(9), new EnqueueOptions { RunAt = DateTimeOffset.MaxValue }));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));

        // The ends of the ranges: stored, counted, and run in priority order when due.
        await node.Queue.EnqueueAsync(new Notice(10), new EnqueueOptions { Delay = EnqueueOptions.MaxDelay });
        await node.Queue.EnqueueAsync(new Notice(11), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow + EnqueueOptions.MaxDelay - TimeSpan.FromMinutes(1) });
        await node.Queue.EnqueueAsync(new Notice(12), new EnqueueOptions { Delay = TimeSpan.FromTicks(1), Priority = EnqueueOptions.MinPriority });
        await node.Queue.EnqueueAsync(new Notice(13), new EnqueueOptions { Delay = TimeSpan.Zero, Priority = EnqueueOptions.MaxPriority });
        await node.Queue.EnqueueManyAsync([new Notice(14)], new EnqueueOptions { RunAt = DateTimeOffset.UnixEpoch, Priority = EnqueueOptions.MaxPriority });
        var stored = await node.Queue.ReadStatisticsAsync();
        Assert.Equal((2L, 3L), (stored.Scheduled, stored.Ready));

        await using var consumer = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 1);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 3, "the three items due now run");
        Assert.Equal([14, 13, 12], behavior.Deliveries.Select(d => d.Item.Number)); // the highest priority first, the earlier due first within it
        await DurableQueueTests.WaitAsync(() => node.Queue.ReadStatisticsAsync().Result is { Scheduled: 2, Completed: 3 }, "two scheduled, three completed");
        Assert.Equal(new short[] { EnqueueOptions.MinPriority, EnqueueOptions.MaxPriority, EnqueueOptions.MaxPriority },
            await postgres.ScalarAsync<short[]>($"SELECT array_agg(priority ORDER BY id) FROM {schema}.items WHERE state = 2"));

        // The far ones come due (moved forward by hand): claimed like any other.
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET run_at = now() WHERE state = 5");
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 5, "the far items run once due");
    }

    [Fact]
    public async Task OrderingKeys_EmptyAndLongestWorkEndToEnd_TooLongOrUnstorableAreRefusedNamingTheKey()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.OrderingKey = n => n.Key);

        var longest = new string('€', 512); // three bytes each in UTF-8
        foreach (var key in new[] { new string('k', 513), new string('€', 3000), "a\0b", "lone \uD800 surrogate" })
        {
            var refused = await Assert.ThrowsAsync<ArgumentException>(() => node.Queue.EnqueueWithIdAsync(new Notice(9, key)));
            Assert.Contains("ordering key", refused.Message, StringComparison.Ordinal);
            var refusedBulk = await Assert.ThrowsAsync<ArgumentException>(() => node.Queue.EnqueueManyAsync([new Notice(8, "fine"), new Notice(9, key)]));
            Assert.Contains("ordering key", refusedBulk.Message, StringComparison.Ordinal);
        }

        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));

        await node.Queue.EnqueueAsync(new Notice(1, ""));
        await node.Queue.EnqueueAsync(new Notice(2, ""));
        await node.Queue.EnqueueAsync(new Notice(3, longest));
        await node.Queue.EnqueueManyAsync([new Notice(4, longest), new Notice(5, "")]);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 5, "every item runs");
        Assert.Equal([1, 2, 5], behavior.Deliveries.Where(d => d.Item.Key == "").Select(d => d.Item.Number));
        Assert.Equal([3, 4], behavior.Deliveries.Where(d => d.Item.Key == longest).Select(d => d.Item.Number));
        await DurableQueueTests.WaitAsync(() => node.Queue.ReadStatisticsAsync().Result.Completed == 5, "the five are counted completed");
    }
}
