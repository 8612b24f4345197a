using System.Collections.Concurrent;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Xunit.Abstractions;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The per-key reserve on real nodes (per-key limit M = 2, the queue's only cluster limit): the hand-off claims one
/// item of a key ahead, held unstarted, and the node starts it when one of its handlers of that key ends with a final
/// outcome, before that outcome is written. Handlers are held by gates the test opens one by one; the test waits on
/// conditions, never on time.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyReserveTests(PostgresFixture postgres, ITestOutputHelper output)
{
    private static readonly TimeSpan NoPolling = TimeSpan.FromHours(1);

    [Fact]
    public async Task ReservedItem_StartsWhenAHandlerOfItsKeyEnds_BeforeThatOutcomeCommits_AtMostMExecute()
    {
        await using var run = await GatedRun.StartAsync(postgres, items: 6);
        var queue = await run.StartConsumerAsync("consumer0");
        await run.ReserveHeldAsync(queue); // items 0 and 1 execute, 2 started through the hand-off, 3 reserved

        await using (var gate = await OutcomeGate.CloseAsync(postgres, run.Schema, queue.NodeId))
        {
            run.Finish(1); // ends with a final outcome: its write waits at the gate; the reserve starts at once
            await DurableQueueTests.WaitAsync(() => run.HasStarted(3), "the reserved item started");
            await gate.WaitUntilHoldingAsync();
            Assert.Equal(StorageSql.Running, await run.StateAsync(1)); // its predecessor's outcome is not written yet
            Assert.Equal(0, queue.PrefetchedCount);
            Assert.Equal(1L, queue.PrefetchesStartedCount);
            Assert.Equal(2, run.Executing);
            run.CompleteAll();
        }

        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 6, "every item ran");
        await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Completed).Result == 6, "every outcome is written");
        Assert.Equal(6, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        Assert.InRange(run.MaxExecuting, 1, 2);
        output.WriteLine($"reserves started: {queue.PrefetchesStartedCount}, released: {queue.PrefetchesReleasedCount}, handed off: {queue.HandedOffCount}, by the claim loop: {queue.ClaimedByLoopCount}");
        Assert.Equal(0L, queue.PrefetchesReleasedCount);
    }

    [Fact]
    public async Task StoppingWithAnUnstartedReserve_ReleasesIt_Counted_NeverRunsIt()
    {
        await using var run = await GatedRun.StartAsync(postgres, items: 5);
        var queue = await run.StartConsumerAsync("consumer0");
        await run.ReserveHeldAsync(queue);
        var reserved = run.IdOf(3);

        var stopping = Task.Run(() => run.StopConsumersAsync());
        await DurableQueueTests.WaitAsync(() => queue.PrefetchesReleasedCount == 1, "the reserve was released at the stop");
        Assert.Equal(0, queue.PrefetchedCount);
        run.CompleteAll(); // the running handlers end (final outcomes): no reserve is left to start, none is taken
        await stopping;

        Assert.False(run.HasStarted(3));
        Assert.Equal(StorageSql.Ready, await run.StateAsync(3));
        Assert.Equal(0L, await run.CountAsync(StorageSql.Running));
        Assert.Equal(0, await postgres.ScalarAsync<int>($"SELECT attempts FROM {run.Schema}.items WHERE id = {reserved}"));
        Assert.Equal(1L, queue.PrefetchesReleasedCount);
        Assert.Equal(0L, queue.PrefetchesStartedCount);
    }

    [Fact]
    public async Task ARetryEnd_StartsNoReserve_TheNextFinalEndDoes_AndTheLastPartnersRetryReleasesIt()
    {
        await using var run = await GatedRun.StartAsync(postgres, items: 6);
        var queue = await run.StartConsumerAsync("consumer0");
        await run.ReserveHeldAsync(queue); // 1 and 2 execute, 3 reserved

        run.Fail(1); // a stored retry (due in an hour): the row becomes scheduled, still unfinished
        await DurableQueueTests.WaitAsync(() => run.StateAsync(1).Result == StorageSql.Scheduled, "the retry is written");
        Assert.False(run.HasStarted(3)); // a reserve would have started before the retry was posted
        Assert.Equal(1, queue.PrefetchedCount); // 2 still runs: a partner for the reserve

        run.Fail(2); // the last partner ends without a final outcome: the reserve can no longer start, it is released
        await DurableQueueTests.WaitAsync(() => queue.PrefetchesReleasedCount == 1, "the reserve was released");
        await DurableQueueTests.WaitAsync(() => run.StateAsync(3).Result == StorageSql.Ready, "the released reserve is ready again");
        Assert.False(run.HasStarted(3));
        Assert.Equal(0L, queue.PrefetchesStartedCount);
        Assert.Equal(0, queue.PrefetchedCount);
    }

    [Fact]
    public async Task TwoNodes_OneKey_NeverMoreThanMHandlersExecute_EveryItemOnce()
    {
        const int Items = 40;
        await using var run = await GatedRun.StartAsync(postgres, items: Items);
        run.CompleteAll();
        var first = await run.StartConsumerAsync("consumer0");
        var second = await run.StartConsumerAsync("consumer1");

        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == Items, "every item ran");
        await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Completed).Result == Items, "every outcome is written");
        Assert.Equal(Items, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        Assert.InRange(run.MaxExecuting, 1, 2);
        output.WriteLine($"reserves started: {first.PrefetchesStartedCount + second.PrefetchesStartedCount}, released: {first.PrefetchesReleasedCount + second.PrefetchesReleasedCount}");
    }

    [Fact]
    public async Task CancellingAReservedItem_EndsItCancelled_WithoutRunningIt()
    {
        await using var run = await GatedRun.StartAsync(postgres, items: 6);
        var queue = await run.StartConsumerAsync("consumer0");
        await run.ReserveHeldAsync(queue); // 1 and 2 execute, 3 reserved

        Assert.Equal(CancelResult.CancellationRequested, await run.Producer.Queue.CancelAsync(run.IdOf(3)));
        await DurableQueueTests.WaitAsync(() => run.StateAsync(3).Result == StorageSql.Cancelled, "the reserved item ended cancelled");
        Assert.False(run.HasStarted(3));
        Assert.Equal(0L, queue.PrefetchesStartedCount);
        Assert.Equal(2, run.Executing);
    }

    [Fact]
    public async Task RequeuingADeadLetter_FencesMPlusOneNewerReadyItemsOfItsKey_TheHandOffsBound()
    {
        // Key a: a dead letter, then five ready items; M = 2. A hand-off whose snapshot predates the requeue may take the
        // third newer item as a reserve: the requeue makes the first three wait for the next claim, not the fourth.
        var claim = await KeyedClaim.CreateAsync(postgres);
        var ids = await claim.InsertAsync(("a", 0, 3), ("a", 0, 0), ("a", 0, 0), ("a", 0, 0), ("a", 0, 0), ("a", 0, 0));
        await postgres.ExecuteAsync($"INSERT INTO {claim.Sql.QueueSettings} (queue, max_running_per_key) VALUES ('{KeyedClaim.Queue}', 2)");
        Assert.Equal(1, await claim.RequeueAsync());

        var states = await postgres.ScalarAsync<short[]>($"SELECT array_agg(state ORDER BY id) FROM {claim.Items}");
        Assert.Equal([StorageSql.Ready, StorageSql.Scheduled, StorageSql.Scheduled, StorageSql.Scheduled, StorageSql.Ready, StorageSql.Ready], states);
        Assert.Equal(6, ids.Length);
    }

    [Fact]
    public async Task LoweredPerKeyLimit_AReserveClaimedUnderTheOldLimit_DoesNotStartAtTheNextEndOfItsKey()
    {
        await using var run = await GatedRun.StartAsync(postgres, items: 5);
        var queue = await run.StartConsumerAsync("consumer0");
        await run.ReserveHeldAsync(queue); // items 1 and 2 execute, 3 is reserved (claimed under M = 2)

        // Lowered fleet-wide, through the API; nothing running is interrupted (1 and 2 go on).
        await queue.UpdateSettingsAsync(s => s with { MaxRunningPerKey = 1 }, "test");
        await DurableQueueTests.WaitAsync(() => queue.ClusterPerKey == 1, "the node applied the lowered limit");
        var applied = run.Starts.Count;

        run.Finish(1); // a final end of a handler of the reserve's key: under M = 1 the reserve must not start now
        await DurableQueueTests.WaitAsync(() => run.StateAsync(1).Result == StorageSql.Completed, "item 1's outcome is written");
        Assert.Equal(0, queue.PrefetchedCount);
        run.Finish(2);
        run.CompleteAll();
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 5, "every item ran");

        // The witness: every handler that started after the change was applied ran alone.
        var after = run.Starts.Skip(applied).ToArray();
        Assert.Contains(after, s => s.Number == 3);
        Assert.All(after, s => Assert.True(s.Executing <= 1, $"item {s.Number} started with {s.Executing} handlers of its key executing; the limit is 1."));
        Assert.Equal(5, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        Assert.Equal(1L, queue.PrefetchesReleasedCount); // released back to ready when the node applied the change
    }

    [Fact]
    public async Task LoweredPerKeyLimit_AClaimThatReadTheOldLimit_RunsAfterTheChange_TakesNothingBeyondTheNewLimit()
    {
        await using var run = await GatedRun.StartAsync(postgres, items: 5);
        var queue = await run.StartConsumerAsync("consumer0");
        await run.ReserveHeldAsync(queue); // items 1 and 2 execute, 3 is reserved (claimed under M = 2)

        // The next claim is held after it read M = 2 (and its settings version), before its statement runs.
        var held = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var next = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var release = new ManualResetEventSlim();
        var claims = 0;
        queue.ClaimLoop.BeforeClaimStatement = () =>
        {
            if (Interlocked.Increment(ref claims) == 1)
            {
                held.SetResult();
                release.Wait();
            }
            else
            {
                next.TrySetResult();
            }
        };
        queue.ClaimLoop.Wake();
        await held.Task.WaitAsync(TimeSpan.FromSeconds(30));

        // Meanwhile the limit is lowered and applied (the reserve goes back to ready), and item 1's outcome commits:
        // under the old M, item 3 (one older item unfinished, item 2) would be eligible; under M = 1 it is not.
        await queue.UpdateSettingsAsync(s => s with { MaxRunningPerKey = 1 }, "test");
        await DurableQueueTests.WaitAsync(() => queue.ClusterPerKey == 1, "the node applied the lowered limit");
        await DurableQueueTests.WaitAsync(() => queue.PrefetchesReleasedCount == 1, "the reserve was released");
        var applied = run.Starts.Count;
        run.Finish(1);
        await DurableQueueTests.WaitAsync(() => run.StateAsync(1).Result == StorageSql.Completed, "item 1's outcome is written");
        Assert.Equal(StorageSql.Ready, await run.StateAsync(3));

        // The held claim runs its statement, then the loop claims again (woken): the held claim is over.
        queue.ClaimLoop.Wake();
        release.Set();
        await next.Task.WaitAsync(TimeSpan.FromSeconds(30));
        queue.ClaimLoop.BeforeClaimStatement = null;

        // The witness: item 2 still executes, so item 3 must not have been claimed.
        Assert.Equal(StorageSql.Ready, await run.StateAsync(3));
        Assert.Equal(StorageSql.Running, await run.StateAsync(2));
        run.Finish(2);
        run.CompleteAll();
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 5, "every item ran");
        var after = run.Starts.Skip(applied).ToArray();
        Assert.Contains(after, s => s.Number == 3);
        Assert.All(after, s => Assert.True(s.Executing <= 1, $"item {s.Number} started with {s.Executing} handlers of its key executing; the limit is 1."));
        Assert.Equal(5, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
    }

    /// <summary>
    /// Items 0, 1, ... of one key <c>k</c> stored before any consumer starts, under a per-key limit of two (no other
    /// limit); consumers of four workers that never poll and hold long leases. Each handler waits for its gate
    /// (<see cref="Finish"/>: completes, <see cref="Fail"/>: throws, a retry due in an hour) unless
    /// <see cref="CompleteAll"/> was called; handlers executing at once are counted.
    /// </summary>
    private sealed class GatedRun : IAsyncDisposable
    {
        private readonly ConcurrentDictionary<int, TaskCompletionSource<bool>> _gates = new();
        private readonly ConcurrentDictionary<int, long> _started = new();
        private readonly List<QueueNode> _consumers = [];
        private PostgresFixture _postgres = null!;
        private QueueNode _producer = null!;
        private volatile bool _completeAll;
        private int _executing;
        private int _maxExecuting;

        public Behavior Behavior { get; } = new();

        /// <summary>Gets every handler start: the item's number and the handlers executing then, itself included.</summary>
        public ConcurrentQueue<(int Number, int Executing)> Starts { get; } = new();

        public QueueNode Producer => _producer;

        public string Schema { get; private set; } = "";

        public int Executing => Volatile.Read(ref _executing);

        public int MaxExecuting => Volatile.Read(ref _maxExecuting);

        public static async Task<GatedRun> StartAsync(PostgresFixture postgres, int items)
        {
            var run = new GatedRun { _postgres = postgres, Schema = await postgres.NewSchemaAsync() };
            run.Behavior.Handle = (notice, context) => run.Handle(notice.Number, context.ItemId);
            run._producer = await QueueNode.StartAsync(postgres.ConnectionString, run.Schema, new Behavior(), node: "producer",
                storage: o => o.Consume = false, queue: o => o.OrderingKey = n => n.Key);
            await ClusterLimitSql.SetLimitsAsync(postgres, run.Schema, perKey: 2);
            await run._producer.Queue.EnqueueManyAsync([.. Enumerable.Range(0, items).Select(i => new Notice(i, "k"))]);
            return run;
        }

        public async Task<PostgreSqlWorkQueue<Notice>> StartConsumerAsync(string name)
        {
            var node = await QueueNode.StartAsync(_postgres.ConnectionString, Schema, Behavior, node: name,
                queue: o => (o.OrderingKey, o.RetryDelay, o.MaxRetryDelay) = (n => n.Key, TimeSpan.FromHours(1), TimeSpan.FromHours(1)),
                storage: o => (o.PollInterval, o.LeaseDuration) = (NoPolling, TimeSpan.FromMinutes(5)),
                executor: o => o.WorkerCount = 4);
            _consumers.Add(node);
            return (PostgreSqlWorkQueue<Notice>)node.Queue;
        }

        /// <summary>Items 0 and 1 start (the first claim); 0 ends: the hand-off starts 2 and reserves 3 (1 still runs here).</summary>
        public async Task ReserveHeldAsync(PostgreSqlWorkQueue<Notice> queue)
        {
            await DurableQueueTests.WaitAsync(() => HasStarted(0) && HasStarted(1), "the key's two oldest items run");
            Finish(0);
            await DurableQueueTests.WaitAsync(() => HasStarted(2) && queue.PrefetchedCount == 1, "the next item started and the one after it is reserved");
            Assert.False(HasStarted(3));
            var reserved = Assert.Single(queue.PrefetchedByKey);
            Assert.Equal("k", reserved.Key);
            Assert.Equal(StorageSql.Running, await StateAsync(3));
            Assert.Equal(reserved.Value, await _postgres.ScalarAsync<long>($"SELECT id FROM {Schema}.items ORDER BY id OFFSET 3 LIMIT 1"));
            Assert.Equal(2, Executing);
        }

        public bool HasStarted(int number) => _started.ContainsKey(number);

        public long IdOf(int number) => _postgres.ScalarAsync<long>($"SELECT id FROM {Schema}.items ORDER BY id OFFSET {number} LIMIT 1").Result;

        public void Finish(int number) => Gate(number).TrySetResult(true);

        public void Fail(int number) => Gate(number).TrySetResult(false);

        public void CompleteAll()
        {
            _completeAll = true;
            foreach (var gate in _gates.Values)
            {
                gate.TrySetResult(true);
            }
        }

        /// <summary>The state of the <paramref name="number"/>-th item (items are stored in id order).</summary>
        public Task<short> StateAsync(int number) => _postgres.ScalarAsync<short>($"SELECT state FROM {Schema}.items ORDER BY id OFFSET {number} LIMIT 1");

        public Task<long> CountAsync(short state) => _postgres.ScalarAsync<long>($"SELECT count(*) FROM {Schema}.items WHERE state = {state}");

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
            CompleteAll();
            await StopConsumersAsync();
            await _producer.DisposeAsync();
        }

        private TaskCompletionSource<bool> Gate(int number) => _gates.GetOrAdd(number, _ => new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously));

        private void Handle(int number, long id)
        {
            var now = Interlocked.Increment(ref _executing);
            int seen;
            while ((seen = Volatile.Read(ref _maxExecuting)) < now && Interlocked.CompareExchange(ref _maxExecuting, now, seen) != seen)
            {
            }

            _started[number] = id;
            Starts.Enqueue((number, now));
            var complete = true;
            try
            {
                if (!_completeAll)
                {
                    var gate = Gate(number);
                    if (_completeAll)
                    {
                        gate.TrySetResult(true);
                    }

                    Assert.True(gate.Task.Wait(QueueNode.Patience), $"item {number} was never let go");
                    complete = gate.Task.Result;
                }
            }
            finally
            {
                Interlocked.Decrement(ref _executing);
            }

            if (!complete)
            {
                throw new InvalidOperationException($"item {number} fails (the test asked for a retry)");
            }
        }
    }
}
