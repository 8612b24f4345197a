using System.Collections.Concurrent;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;
using Xunit.Abstractions;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The hand-off under a per-key limit above one: the next item of a key is claimed in the transaction that writes its
/// predecessor's final outcome, not by the claim loop after the commit. Handlers of a key are counted as they start and
/// end (at most M at any instant, one node or two); every claim is recorded by a trigger, in order (a key's items are
/// claimed in id order, and none twice).
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class HandOffTests(PostgresFixture postgres, ITestOutputHelper output)
{
    /// <summary>The consumers never poll: a next item that waited for a poll would not run within the test's patience.</summary>
    private static readonly TimeSpan NoPolling = TimeSpan.FromHours(1);

    [Fact]
    public async Task BindingPerKeyLimit_EveryLaterItemOfTheKey_StartsThroughTheHandOff_NotTheClaimLoop()
    {
        const int Items = 12;
        await using var run = await KeyedRun.StartAsync(postgres, perKey: 2, keys: 1, itemsPerKey: Items);
        await run.StartConsumersAsync(1);

        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == Items, "every item ran");
        var queue = run.Queue(0);
        output.WriteLine($"started through the hand-off: {queue.HandedOffCount}; by the claim loop: {queue.ClaimedByLoopCount}");

        // The first claim takes the key's two oldest; each later item is claimed in the transaction of an outcome: the
        // claim loop, woken at every handler's end and after every written batch, never finds one of them.
        Assert.Equal(2, queue.ClaimedByLoopCount);
        Assert.Equal(Items - 2, queue.HandedOffCount);
        Assert.InRange(run.MaxRunning("k0"), 1, 2);
        await run.AssertClaimedOnceInIdOrderAsync(Items);
    }

    /// <summary>
    /// A hand-off takes the node's whole free room, not one item per finished item: what the claim loop would otherwise
    /// claim after the commit. A node of four workers (room for 8) runs the 3 items of its only key (a limit of 10 that
    /// does not bind); one of them ends: room for 8 - 3 + 1 = 6 items, of which 1 is the successor, 1 the key's reserve
    /// and 4 the rest. The node's claim loop may have a claim in flight at any moment, holding the free room for its
    /// statement's duration: a plan made then gets less (never more), so plans are made, and given back, until one is
    /// made with no claim in flight.
    /// </summary>
    [Fact]
    public async Task HandOff_PlansForTheNodesWholeFreeRoom_NotOneItemPerFinishedItem()
    {
        await using var run = await KeyedRun.StartAsync(postgres, perKey: 10, keys: 1, itemsPerKey: 3, gated: true);
        await run.StartConsumersAsync(1);
        await DurableQueueTests.WaitAsync(() => Volatile.Read(ref run.Started) == 3, "the key's three items run");
        IOutcomeHandOff handOff = run.Queue(0);
        var counts = new List<int>();

        await DurableQueueTests.WaitAsync(
            () =>
            {
                var plan = handOff.Begin(["k0"], finished: 1, settling: 1);
                Assert.NotNull(plan); // the successor's room is there whatever a claim in flight holds
                handOff.Failed(plan); // given back: the next plan finds the same room
                counts.Add(plan.Count);
                return plan.Count == 6;
            },
            "a plan for the node's whole free room (6 items)");

        Assert.All(counts, count => Assert.InRange(count, 2, 6));
    }

    [Theory]
    [InlineData(null)]
    [InlineData(3)]
    public async Task TwoNodes_AtMostMHandlersOfAKeyAtEveryInstant_EachKeyInIdOrder_EveryItemOnce(int? maxRunning)
    {
        const int Keys = 3;
        const int PerKeyItems = 15;
        await using var run = await KeyedRun.StartAsync(postgres, perKey: 2, keys: Keys, itemsPerKey: PerKeyItems, maxRunning: maxRunning);
        await run.StartConsumersAsync(2);

        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == Keys * PerKeyItems, "every item ran");
        for (var key = 0; key < Keys; key++)
        {
            Assert.InRange(run.MaxRunning("k" + key), 1, 2);
        }

        Assert.Equal(Keys * PerKeyItems, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        Assert.InRange(run.MaxRunningOverall, 1, maxRunning ?? Keys * 2);
        output.WriteLine($"started through the hand-off: {run.Queue(0).HandedOffCount + run.Queue(1).HandedOffCount}; by the claim loops: {run.Queue(0).ClaimedByLoopCount + run.Queue(1).ClaimedByLoopCount}");
        if (maxRunning is null)
        {
            // (Under MaxRunning a claim in flight may hold the permit a handler's end freed: the claim loop takes it.)
            Assert.True(run.Queue(0).HandedOffCount + run.Queue(1).HandedOffCount > 0, "nothing was handed off");
        }

        await run.AssertClaimedOnceInIdOrderAsync(Keys * PerKeyItems);
    }

    [Fact]
    public async Task AnOutcomeBatchThatFailsAtItsCommit_ClaimsNothing_LosesNothing_AndIsWrittenAgain()
    {
        const int Items = 6;
        await using var run = await KeyedRun.StartAsync(postgres, perKey: 2, keys: 1, itemsPerKey: Items);
        // The first transaction that completes an item and claims one fails at its commit (a deferred check, after the
        // hand-off's claim ran in it; the claim trigger marks its transaction). Only such a transaction fails: an outcome
        // written without a claim (one the node's claim loop also wanted, or one written again) commits as usual. A
        // sequence counts the failures, as it is not rolled back.
        await postgres.ExecuteAsync($"""
            CREATE SEQUENCE {run.Schema}.commits_failed;
            CREATE FUNCTION {run.Schema}.fail_first_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF coalesce(current_setting('bw_test.claimed_here', true), '') = 'yes'
                   AND nextval('{run.Schema}.commits_failed') = 1 THEN
                    RAISE EXCEPTION 'the first completion''s commit fails';
                END IF;
                RETURN NULL;
            END $$;
            CREATE CONSTRAINT TRIGGER fail_first_commit AFTER UPDATE ON {run.Schema}.items DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (OLD.state = 1 AND NEW.state = 2) EXECUTE FUNCTION {run.Schema}.fail_first_commit();
            """);
        await run.StartConsumersAsync(1);

        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count >= Items, "every item ran");
        await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Completed).Result == Items, "every outcome is written");

        // The failed batch was written again: every item is completed, and the failing check ran at least once.
        Assert.True(await postgres.ScalarAsync<bool>($"SELECT is_called FROM {run.Schema}.commits_failed"), "no commit failed");
        // A claim ran in the failed transaction (counted by the sequence) and was rolled back with it (not recorded).
        var attempted = await postgres.ScalarAsync<long>($"SELECT last_value FROM {run.Schema}.claim_attempts");
        Assert.True(attempted > Items, $"no claim was rolled back: {attempted} claims attempted for {Items} items");
        Assert.Equal(Items, run.Behavior.Deliveries.Count);
        Assert.Equal(Items, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        Assert.Equal(Items - 2, run.Queue(0).HandedOffCount);
        Assert.InRange(run.MaxRunning("k0"), 1, 2);
        await run.AssertClaimedOnceInIdOrderAsync(Items);
    }

    [Fact]
    public async Task ItemsHandedOffAfterTheNodeBeganToStop_AreReleasedNotStarted()
    {
        const int Items = 5;
        await using var run = await KeyedRun.StartAsync(postgres, perKey: 2, keys: 1, itemsPerKey: Items, gated: true, lease: TimeSpan.FromMinutes(5));
        await run.StartConsumersAsync(1);
        await DurableQueueTests.WaitAsync(() => Volatile.Read(ref run.Started) == 2, "the key's two oldest items run");

        var queue = run.Queue(0);
        await using (var gate = await OutcomeGate.CloseAsync(postgres, run.Schema, queue.NodeId))
        {
            run.Release.Release(); // the first handler ends: its outcome (and the hand-off) wait at the gate
            await gate.WaitUntilHoldingAsync();
            var stopping = Task.Run(() => run.StopConsumersAsync());
            await DurableQueueTests.WaitAsync(() => queue.IsClaimingStopped, "the node began to stop");
            await gate.OpenAsync(); // the outcome commits with the item it handed off; the node releases that item
            await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Completed).Result == 1, "the first outcome is written");
            run.Release.Release();
            await stopping;
        }

        Assert.Equal(2, run.Behavior.Deliveries.Count);
        Assert.Equal(0L, await run.CountAsync(StorageSql.Running));
        Assert.Equal(Items - 2L, await run.CountAsync(StorageSql.Ready));
        // The third item was claimed in the outcome's transaction (a committed claim), and the fourth with it as the
        // key's reserve (the second item still ran on the node: see KeyReserveTests), then both released unrun.
        var claimed = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {run.Schema}.claim_order");
        Assert.Equal(4L, claimed);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {run.Schema}.items WHERE state = 0 AND attempts > 0"));
        Assert.Equal(0, queue.HandedOffCount); // counted only when started
    }

    [Fact]
    public async Task OnlyFinalOutcomesOfKeyedItems_AskForAHandOff_NotAStoredRetryNorARelease()
    {
        var schema = await postgres.NewSchemaAsync();
        var sql = new StorageSql(schema);
        await using (var producer = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), storage: o => o.Consume = false))
        {
        }

        var handOff = new RecordingHandOff();
        var settled = 0;
        await using var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString);
        using var writer = new OutcomeWriter(dataSource, sql, "notices", "a node", deleteCompleted: false, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance,
            new StorageHealth(() => { }), TimeSpan.FromSeconds(1), written => settled += written.Count, () => { }, handOff);
        var owner = new NoOwner();
        StoredItem Keyed(long id, string? key) => new(owner, id, "{}", 1, 0, DateTimeOffset.UtcNow, key is not null, null, null, key);

        writer.Post(Keyed(1, "a"), OutcomeKind.Retry, TimeSpan.FromSeconds(1), "failed");
        writer.Post(Keyed(2, "b"), OutcomeKind.Released);
        writer.Post(Keyed(3, null), OutcomeKind.Completed);
        writer.Complete();
        writer.Run(CancellationToken.None);
        Assert.Empty(handOff.Asked);

        using var second = new OutcomeWriter(dataSource, sql, "notices", "a node", deleteCompleted: false, Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance,
            new StorageHealth(() => { }), TimeSpan.FromSeconds(1), written => settled += written.Count, () => { }, handOff);
        second.Post(Keyed(4, "a"), OutcomeKind.Retry, TimeSpan.FromSeconds(1), "failed");
        second.Post(Keyed(5, "c"), OutcomeKind.Completed);
        second.Post(Keyed(6, "d"), OutcomeKind.Dead, error: "dead");
        second.Post(Keyed(7, "d"), OutcomeKind.Cancelled, error: "cancelled");
        second.Complete();
        second.Run(CancellationToken.None);
        var asked = Assert.Single(handOff.Asked);
        Assert.Equal(["c", "d"], asked.Keys.Order());
        Assert.Equal(3, asked.Finished);
        Assert.Equal(4, asked.Settling);
        Assert.Equal(7, settled);
    }

    /// <summary>Records what the writer asks; never hands off.</summary>
    private sealed class RecordingHandOff : IOutcomeHandOff
    {
        public List<(string[] Keys, int Finished, int Settling)> Asked { get; } = [];

        public HandOffPlan? Begin(string[] keys, int finished, int settling)
        {
            Asked.Add((keys, finished, settling));
            return null;
        }

        public NpgsqlCommand Command(HandOffPlan plan, NpgsqlConnection connection, NpgsqlTransaction transaction) => throw new InvalidOperationException();

        public StoredItem Read(NpgsqlDataReader reader) => throw new InvalidOperationException();

        public List<StoredItem> Committed(HandOffPlan plan, List<StoredItem> claimed) => throw new InvalidOperationException();

        public void Failed(HandOffPlan plan) => throw new InvalidOperationException();
    }

    /// <summary>
    /// Keyed items (<c>k0</c>, <c>k1</c>, ...) stored before any consumer starts, under a per-key limit; consumers of
    /// four workers that never poll. A trigger records each claim (a row entering running) in order, and counts every
    /// claim in a sequence (rolled-back ones too). Handlers count, per key, how many run at once.
    /// </summary>
    private sealed class KeyedRun : IAsyncDisposable
    {
        public int Started;
        private readonly ConcurrentDictionary<string, int> _running = new();
        private readonly ConcurrentDictionary<string, int> _max = new();
        private int _runningOverall;
        private int _maxOverall;
        private readonly List<QueueNode> _consumers = [];
        private PostgresFixture _postgres = null!;
        private QueueNode _producer = null!;
        private bool _gated;
        private TimeSpan _lease;

        public Behavior Behavior { get; } = new();

        public SemaphoreSlim Release { get; } = new(0);

        public string Schema { get; private set; } = "";

        public static async Task<KeyedRun> StartAsync(PostgresFixture postgres, int perKey, int keys, int itemsPerKey, bool gated = false, TimeSpan? lease = null, int? maxRunning = null)
        {
            var run = new KeyedRun { _postgres = postgres, Schema = await postgres.NewSchemaAsync(), _gated = gated, _lease = lease ?? TimeSpan.FromSeconds(30) };
            run.Behavior.Handle = (notice, _) => run.Handle(notice.Key!);
            run._producer = await QueueNode.StartAsync(postgres.ConnectionString, run.Schema, new Behavior(), node: "producer",
                storage: o => o.Consume = false, queue: o => o.OrderingKey = n => n.Key);
            await ClusterLimitSql.SetLimitsAsync(postgres, run.Schema, maxRunning: maxRunning, perKey: perKey);
            await postgres.ExecuteAsync($"""
                CREATE SEQUENCE {run.Schema}.claim_attempts;
                CREATE TABLE {run.Schema}.claim_order (seq bigserial PRIMARY KEY, item_id bigint NOT NULL, key text);
                CREATE FUNCTION {run.Schema}.record_claim_order() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM nextval('{run.Schema}.claim_attempts');
                    PERFORM set_config('bw_test.claimed_here', 'yes', true); -- marks the transaction as one that claimed
                    INSERT INTO {run.Schema}.claim_order (item_id, key) VALUES (NEW.id, NEW.ordering_key);
                    RETURN NULL;
                END $$;
                CREATE TRIGGER record_claim_order AFTER UPDATE ON {run.Schema}.items FOR EACH ROW
                    WHEN (NEW.state = 1 AND OLD.state <> 1) EXECUTE FUNCTION {run.Schema}.record_claim_order();
                """);
            await run._producer.Queue.EnqueueManyAsync([.. Enumerable.Range(0, keys * itemsPerKey).Select(i => new Notice(i, "k" + (i % keys)))]);
            return run;
        }

        public async Task StartConsumersAsync(int nodes)
        {
            for (var i = 0; i < nodes; i++)
            {
                _consumers.Add(await QueueNode.StartAsync(_postgres.ConnectionString, Schema, Behavior, node: "consumer" + i,
                    queue: o => o.OrderingKey = n => n.Key,
                    storage: o => (o.PollInterval, o.LeaseDuration) = (NoPolling, _lease),
                    executor: o => o.WorkerCount = 4));
            }
        }

        public PostgreSqlWorkQueue<Notice> Queue(int node) => (PostgreSqlWorkQueue<Notice>)_consumers[node].Queue;

        public int MaxRunning(string key) => _max.GetValueOrDefault(key);

        public int MaxRunningOverall => Volatile.Read(ref _maxOverall);

        public Task<long> CountAsync(short state) => _postgres.ScalarAsync<long>($"SELECT count(*) FROM {Schema}.items WHERE state = {state}");

        /// <summary>Each item claimed once (no committed claim twice), and each key's items claimed in id order.</summary>
        public async Task AssertClaimedOnceInIdOrderAsync(int items)
        {
            Assert.Equal((long)items, await _postgres.ScalarAsync<long>($"SELECT count(*) FROM {Schema}.claim_order"));
            Assert.Equal((long)items, await _postgres.ScalarAsync<long>($"SELECT count(DISTINCT item_id) FROM {Schema}.claim_order"));
            var outOfOrder = await _postgres.ScalarAsync<long>($"""
                SELECT count(*) FROM (
                    SELECT item_id < lag(item_id) OVER (PARTITION BY key ORDER BY seq) AS earlier FROM {Schema}.claim_order) c
                WHERE earlier
                """);
            Assert.Equal(0L, outOfOrder);
        }

        public async Task StopConsumersAsync()
        {
            foreach (var consumer in _consumers)
            {
                await consumer.DisposeAsync();
            }

            _consumers.Clear();
        }

        public async ValueTask DisposeAsync()
        {
            Release.Release(100);
            await StopConsumersAsync();
            await _producer.DisposeAsync();
        }

        private void Handle(string key)
        {
            Interlocked.Increment(ref Started);
            var now = _running.AddOrUpdate(key, 1, (_, n) => n + 1);
            _max.AddOrUpdate(key, now, (_, max) => Math.Max(max, now));
            var overall = Interlocked.Increment(ref _runningOverall);
            int seen;
            while ((seen = Volatile.Read(ref _maxOverall)) < overall && Interlocked.CompareExchange(ref _maxOverall, overall, seen) != seen)
            {
            }

            try
            {
                if (_gated)
                {
                    Assert.True(Release.Wait(QueueNode.Patience));
                }
                else
                {
                    Thread.Yield(); // let another handler of the key overlap this one, if one may
                }
            }
            finally
            {
                Interlocked.Decrement(ref _runningOverall);
                _running.AddOrUpdate(key, 0, (_, n) => n - 1);
            }
        }
    }
}
