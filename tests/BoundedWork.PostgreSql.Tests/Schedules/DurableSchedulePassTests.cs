using BoundedWork.PostgreSql.Internal;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>
/// A pass enqueues the ticks of many schedules in one statement: run directly (no scheduler loop), two nodes' passes
/// over the same due rows at once, a pass killed before its commit, a commit whose answer is lost, ticks set back, and
/// a tick's key held by an item another transaction commits while the pass waits for it. The witness is the items
/// table: one item per (schedule, tick), and the rows' counters agree with it.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class DurableSchedulePassTests(PostgresFixture postgres)
{
    private const int Schedules = 1200;
    private const int TicksEach = 6; // every second from Frozen - 5 s to Frozen: due, and on time (within the minute)
    private static readonly DateTimeOffset Frozen = new(2026, 6, 1, 12, 0, 30, TimeSpan.Zero);

    [Fact]
    public async Task TwoNodes_SameBatchedPassAtOnce_EnqueueEachTickOnce()
    {
        var (schema, node, a, b) = await StartAsync();
        await using var _ = node;

        // A holds the rows of its first pass, uncommitted, while B runs whole passes over the same due rows.
        var aHolds = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var bDone = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var aFirst = true;
        a.BeforeCommit = async _ =>
        {
            if (aFirst)
            {
                aFirst = false;
                aHolds.SetResult();
                await bDone.Task;
            }
        };
        var aPasses = Task.Run(() => DrainAsync(a));
        var bTook = 0;
        try
        {
            await aHolds.Task.WaitAsync(QueueNode.Patience);
            bTook = await DrainAsync(b);
        }
        finally
        {
            bDone.TrySetResult();
        }

        var aTook = await aPasses;
        Assert.Equal((ScheduleSql.BatchSize, Schedules - ScheduleSql.BatchSize), (aTook, bTook)); // B took only the rows A did not hold
        await AssertEachTickOnceAsync(schema);

        // Every row set back to its first tick (as a change can set it): both nodes pass again at once; the keys hold.
        var before = await postgres.ScalarAsync<long>($"SELECT max(id) FROM {schema}.items");
        await postgres.ExecuteAsync($"UPDATE {schema}.schedules SET next_tick = '{Frozen.AddSeconds(1 - TicksEach):O}'");
        using var gate = new Barrier(2);
        var again = await Task.WhenAll(Task.Run(() => { gate.SignalAndWait(); return DrainAsync(a); }), Task.Run(() => { gate.SignalAndWait(); return DrainAsync(b); }));
        Assert.Equal(Schedules, again.Sum());
        Assert.Equal(before, await postgres.ScalarAsync<long>($"SELECT max(id) FROM {schema}.items"));
        await AssertEachTickOnceAsync(schema);
    }

    [Fact]
    public async Task PassKilledBeforeItsCommit_EnqueuesNothing_AndTheNextPassEnqueuesEachTickOnce()
    {
        var (schema, node, a, _) = await StartAsync();
        await using var __ = node;
        a.BeforeCommit = async connection =>
            await postgres.ExecuteAsync($"SELECT pg_terminate_backend({connection.ProcessID})");

        await Assert.ThrowsAnyAsync<Exception>(() => a.PassAsync(CancellationToken.None));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
        Assert.Equal((long)Schedules, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.schedules WHERE next_tick = '{Frozen.AddSeconds(1 - TicksEach):O}' AND enqueued = 0"));

        a.BeforeCommit = null;
        Assert.Equal(Schedules, await DrainAsync(a));
        await AssertEachTickOnceAsync(schema);
    }

    [Fact]
    public async Task CommitWhoseAnswerIsLost_NeitherLosesNorDoublesATick()
    {
        var (schema, node, a, b) = await StartAsync();
        await using var _ = node;
        a.AfterCommit = () => throw new NpgsqlException("the answer to the commit was lost");

        await Assert.ThrowsAsync<NpgsqlException>(() => a.PassAsync(CancellationToken.None));
        Assert.Equal((long)ScheduleSql.BatchSize * TicksEach, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));

        a.AfterCommit = null;
        Assert.Equal(Schedules - ScheduleSql.BatchSize, await DrainAsync(b) + await DrainAsync(a));
        await AssertEachTickOnceAsync(schema);
    }

    [Fact]
    public async Task TickKeyHeldByAnItemCommittedWhileThePassWaits_PassRunsAgain_AndCountsItAsHeld()
    {
        var (schema, node, a, _) = await StartAsync();
        await using var __ = node;
        var key = ScheduleSql.TickKey("job-7", Frozen);
        await using var other = new NpgsqlConnection(postgres.ConnectionString);
        await other.OpenAsync();
        long held;
        await using (var transaction = await other.BeginTransactionAsync())
        {
            var storage = node.Host.Services.GetRequiredKeyedService<IPostgreSqlWorkQueue<ScheduledTick>>("ticks");
            held = (await storage.EnqueueAsync(new ScheduledTick("job-7", Frozen), new BoundedWork.Hosting.EnqueueOptions { IdempotencyKey = key }, transaction)).ItemId;

            var pass = Task.Run(() => DrainAsync(a));
            await WaitAsync(async () => await postgres.ScalarAsync<long>(
                $"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%unnest($2::text[]%'") == 1, "the pass waits for the key");
            await transaction.CommitAsync();
            Assert.Equal(Schedules, await pass);
        }

        Assert.Equal(1L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE idempotency_key = '{key}'"));
        Assert.Equal(held, await postgres.ScalarAsync<long>($"SELECT last_item_id FROM {schema}.schedules WHERE name = 'job-7'"));
        Assert.Equal(TicksEach - 1L, await postgres.ScalarAsync<long>($"SELECT enqueued FROM {schema}.schedules WHERE name = 'job-7'"));
        Assert.Equal((long)Schedules * TicksEach, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
        Assert.Equal((long)Schedules * TicksEach - 1, await postgres.ScalarAsync<long>($"SELECT sum(enqueued)::bigint FROM {schema}.schedules"));
    }

    [Fact]
    public async Task QueueWithOrderingKeys_BatchedPassStoresEachTickWithItsKey()
    {
        var (schema, node, a, _) = await StartAsync(queue: o => o.OrderingKey = tick => tick.Schedule);
        await using var __ = node;

        Assert.Equal(Schedules, await DrainAsync(a));
        await AssertEachTickOnceAsync(schema);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE ordering_key IS DISTINCT FROM payload->>'Schedule'"));
    }

    /// <summary>A node that only stores (no schedules of its own, no consumer), the due schedules, and two schedulers of its queue that the test drives.</summary>
    private async Task<(string Schema, ScheduleNode Node, DurableScheduler A, DurableScheduler B)> StartAsync(Action<BoundedWork.Hosting.WorkQueueOptions<ScheduledTick>>? queue = null)
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        var clock = new SteppedClock();
        clock.Freeze(Frozen);
        var node = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", _ => { }, clock, o => o.Consume = false, queue);
        await postgres.ExecuteAsync($"""
            INSERT INTO {schema}.schedules (name, queue, interval_ms, time_zone, next_tick, changed_by)
            SELECT 'job-' || n, 'ticks', 1000, 'UTC', '{Frozen.AddSeconds(1 - TicksEach):O}'::timestamptz, 'test' FROM generate_series(1, {Schedules}) n
            """);
        var storage = (PostgreSqlWorkQueue<ScheduledTick>)node.Host.Services.GetRequiredKeyedService<IPostgreSqlWorkQueue<ScheduledTick>>("ticks");
        return (schema, node,
            new DurableScheduler("ticks", storage, [], clock, NullLogger.Instance),
            new DurableScheduler("ticks", storage, [], clock, NullLogger.Instance));
    }

    /// <summary>Runs passes until one takes fewer rows than a batch (as the scheduler's loop does); returns the rows taken.</summary>
    private static async Task<int> DrainAsync(DurableScheduler scheduler)
    {
        var taken = 0;
        int pass;
        do
        {
            pass = await scheduler.PassAsync(CancellationToken.None);
            taken += pass;
        }
        while (pass == ScheduleSql.BatchSize);
        return taken;
    }

    /// <summary>Every schedule's every tick is one item with its key; each row is advanced past them, its counters and last item agree with the items.</summary>
    private async Task AssertEachTickOnceAsync(string schema)
    {
        Assert.Equal((long)Schedules * TicksEach, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE queue = 'ticks'"));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"""
            SELECT count(*) FROM {schema}.schedules s CROSS JOIN generate_series(1 - {TicksEach}, 0) k
            WHERE (SELECT count(*) FROM {schema}.items i
                   WHERE i.queue = 'ticks' AND i.payload->>'Schedule' = s.name
                     AND (i.payload->>'ScheduledAt')::timestamptz = '{Frozen:O}'::timestamptz + k * interval '1 second'
                     AND i.idempotency_key = 'schedule:' || s.name || ':' || to_char(('{Frozen:O}'::timestamptz + k * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) <> 1
            """));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"""
            SELECT count(*) FROM {schema}.schedules s LEFT JOIN {schema}.items i ON i.id = s.last_item_id
            WHERE s.enqueued <> {TicksEach} OR s.missed <> 0 OR s.next_tick <> '{Frozen.AddSeconds(1):O}' OR s.last_tick <> '{Frozen:O}'
               OR s.last_enqueued_at IS NULL OR i.idempotency_key IS DISTINCT FROM 'schedule:' || s.name || ':{Frozen.UtcDateTime:yyyy-MM-dd'T'HH:mm:ss.fff'Z'}'
            """));
    }

    private static async Task WaitAsync(Func<Task<bool>> condition, string what)
    {
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "Timed out waiting until " + what);
            await Task.Delay(20);
        }
    }
}
