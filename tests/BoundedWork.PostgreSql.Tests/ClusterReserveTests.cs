using System.Collections.Concurrent;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The node's reserve under a binding MaxRunning: one item claimed ahead per permit held, started by the permit a
/// handler's end frees (no claim in between), released when the node stops or its grant no longer covers it.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterReserveTests(PostgresFixture postgres)
{
    [Fact]
    public async Task BindingMaxRunning_ReservedItemStartsWhenAPermitFrees_WithNoClaimInBetween_AndTheAllowanceHolds()
    {
        await using var run = await Gated.StartAsync(postgres, maxRunning: 1);
        await run.WaitReservedAsync();
        Assert.Equal(1, run.Queue.ClusterPermitsInUse);
        Assert.Equal(2L, await run.CountAsync(StorageSql.Running)); // one runs, one is reserved (claimed, not started)

        // The database is held: no claim (nor anything else on the items table) can run until the lock goes.
        await using (var blocker = new NpgsqlConnection(postgres.ConnectionString))
        {
            await blocker.OpenAsync();
            await using var transaction = await blocker.BeginTransactionAsync();
            await using (var hold = new NpgsqlCommand($"LOCK TABLE {run.Schema}.items IN ACCESS EXCLUSIVE MODE", blocker, transaction))
            {
                await hold.ExecuteNonQueryAsync();
            }

            run.Release.Release(); // the first handler ends: its permit goes to the reserved item, which starts now
            await DurableQueueTests.WaitAsync(() => Volatile.Read(ref run.Started) == 2, "the reserved item started with the database held");
            await transaction.RollbackAsync();
        }

        run.Release.Release(2);
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 3, "every item ran");
        Assert.Equal(1, Volatile.Read(ref run.MaxConcurrent));
        Assert.Equal(3, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
    }

    [Fact]
    public async Task ClusterView_HandlersRunning_CountsTheHandlersStartedAndNotEnded_TheReservedItemsApart()
    {
        // Four workers, a running limit of two, six items: two handlers run (held at their gate), items wait in the reserve.
        await using var run = await Gated.StartAsync(postgres, maxRunning: 2, heartbeat: TimeSpan.FromMilliseconds(100), workers: 4, items: 6);
        await DurableQueueTests.WaitAsync(() => Volatile.Read(ref run.Started) == 2 && run.Queue.ClusterReservedCount > 0, "two items run, others are reserved");
        var reserved = run.Queue.ClusterReservedCount;
        await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Running).Result == 2 + reserved, "the reserved items are claimed rows");

        // The view, once a heartbeat has written the handlers: the two gated handlers (the test's own count) against the
        // limit, the reserved items apart; every stored running row is one or the other (no outcome is being written).
        var cluster = run.Queue;
        var view = await cluster.GetClusterAsync();
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (view.LimitUse.HandlersRunning != 2)
        {
            Assert.True(DateTime.UtcNow < deadline, $"Timed out waiting until the view shows two handlers running (it shows {view.LimitUse.HandlersRunning}).");
            await Task.Delay(20);
            view = await cluster.GetClusterAsync();
        }

        Assert.Equal(2, Volatile.Read(ref run.Started));
        Assert.Equal(2L, view.LimitUse.HandlersRunning);
        Assert.Equal(2 + reserved, view.LimitUse.Running);
        Assert.True(view.LimitUse.Running > view.Settings.MaxRunning, $"Running {view.LimitUse.Running} is not above the limit: nothing waits in the reserve.");
        Assert.Equal(reserved, view.LimitUse.Running - view.LimitUse.HandlersRunning);
        Assert.Equal(2, Assert.Single(view.Nodes).HandlersRunning);

        // Every handler ended and every outcome written: none running, none reserved or settling.
        run.Release.Release(6);
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 6, "every item ran");
        await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Completed).Result == 6, "every outcome is written");
        deadline = DateTime.UtcNow + QueueNode.Patience;
        while ((view = await cluster.GetClusterAsync()).LimitUse.HandlersRunning != 0)
        {
            Assert.True(DateTime.UtcNow < deadline, "Timed out waiting until the view shows no handler running.");
            await Task.Delay(20);
        }

        Assert.Equal(0L, view.LimitUse.Running);
        Assert.Equal(2, Volatile.Read(ref run.MaxConcurrent));
    }

    [Fact]
    public async Task GrantThatLapses_ReleasesTheReserveToReady_AtOnce_AndNothingRunsTwice()
    {
        await using var run = await Gated.StartAsync(postgres, maxRunning: 1, heartbeat: TimeSpan.FromMilliseconds(100));
        await run.WaitReservedAsync();

        await using (var blocker = new NpgsqlConnection(postgres.ConnectionString))
        {
            await blocker.OpenAsync();
            await using var transaction = await blocker.BeginTransactionAsync();
            await using (var hold = new NpgsqlCommand($"SELECT 1 FROM {run.Schema}.queue_settings FOR UPDATE", blocker, transaction))
            {
                await hold.ExecuteScalarAsync();
            }

            // Leases stay renewed while the node holds an item: a ready row here is the release, not an expiry.
            await DurableQueueTests.WaitAsync(() => run.Queue.IsClusterPermitGrantLapsed, "the grant lapsed");
            await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Ready).Result == 2, "the reserved item is ready again");
            Assert.Equal(0, run.Queue.ClusterReservedCount);
            Assert.Equal(1, Volatile.Read(ref run.Started));
            await transaction.RollbackAsync();
        }

        run.Release.Release(3);
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 3, "every item ran");
        Assert.Equal(3, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        Assert.Equal(1, Volatile.Read(ref run.MaxConcurrent));
    }

    [Fact]
    public async Task LimitLifted_ReleasesTheReserve_AndEveryItemRunsOnce()
    {
        await using var run = await Gated.StartAsync(postgres, maxRunning: 1);
        await run.WaitReservedAsync();

        await ClusterLimitSql.SetLimitsAsync(postgres, run.Schema, maxRunning: null);
        await DurableQueueTests.WaitAsync(() => run.Queue.ClusterPermitsAllowed is null, "the node has no running limit");

        // No limit: the reserve was released (not left to its lease), and the items run on the free worker.
        await DurableQueueTests.WaitAsync(() => Volatile.Read(ref run.Started) == 2, "a second item runs");
        Assert.Equal(0, run.Queue.ClusterReservedCount);
        run.Release.Release(3);
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 3, "every item ran");

        // Every outcome written: a released item run a second time would have run by now.
        await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Completed).Result == 3, "every outcome is written");
        Assert.Equal(3, run.Behavior.Deliveries.Select(d => d.Id).Distinct().Count());
        Assert.Equal(3, run.Behavior.Deliveries.Count);
    }

    [Fact]
    public async Task Shutdown_ReleasesTheReserveToReady_WhileTheRunningHandlerStillRuns()
    {
        var run = await Gated.StartAsync(postgres, maxRunning: 1);
        await run.WaitReservedAsync();
        var stopping = Task.Run(() => run.Node.DisposeAsync().AsTask());

        await DurableQueueTests.WaitAsync(() => run.CountAsync(StorageSql.Ready).Result == 2, "the reserved item is ready again");
        Assert.Equal(1, Volatile.Read(ref run.Started));
        run.Release.Release(3);
        await stopping;
        Assert.Single(run.Behavior.Deliveries);
        Assert.Equal(2L, await run.CountAsync(StorageSql.Ready));
        Assert.Equal(0L, await run.CountAsync(StorageSql.Running));
    }

    [Fact]
    public async Task CancellationOfAReservedItem_EndsItCancelled_WithoutRunningIt()
    {
        await using var run = await Gated.StartAsync(postgres, maxRunning: 1);
        await run.WaitReservedAsync();
        var reserved = await postgres.ScalarAsync<long>($"SELECT max(id) FROM {run.Schema}.items WHERE state = 1"); // the oldest holds the permit

        await run.Node.Queue.CancelAsync(reserved);
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<short>($"SELECT state FROM {run.Schema}.items WHERE id = {reserved}").Result == StorageSql.Cancelled, "the reserved item is cancelled");
        Assert.Equal(1, Volatile.Read(ref run.Started));

        run.Release.Release(3);
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 2, "the other items ran");
        Assert.DoesNotContain(run.Behavior.Deliveries, d => d.Id == reserved);
    }

    [Fact]
    public async Task RateLimit_NoReserve_OnlyItemsWithAPermitAndATokenAreClaimed()
    {
        await using var run = await Gated.StartAsync(postgres, maxRunning: 1, startsPerSecond: 1000);
        await DurableQueueTests.WaitAsync(() => Volatile.Read(ref run.Started) == 1, "one item runs");
        await DurableQueueTests.WaitAsync(() => run.Queue.ClusterPermitWaiting == 2, "the others wait for a permit");
        Assert.Equal(0, run.Queue.ClusterReservedCount);
        Assert.Equal(1L, await run.CountAsync(StorageSql.Running));
        run.Release.Release(3);
        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == 3, "every item ran");
    }

    [Fact]
    public async Task BindingMaxRunning_AHigherPriorityItemClaimedWithALowerOne_TakesThePermit_TheLowerOneWaitsInTheReserve()
    {
        // Both ready before the node's first claim under MaxRunning 1: that claim takes one item with the permit and
        // one for the reserve. The permit goes to the higher priority, as the claim order says, not to the lower id.
        var schema = await postgres.NewSchemaAsync();
        var started = new ConcurrentQueue<int>();
        using var release = new SemaphoreSlim(0);
        var behavior = new Behavior
        {
            Handle = (notice, _) =>
            {
                started.Enqueue(notice.Number);
                Assert.True(release.Wait(QueueNode.Patience));
            },
        };
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 1);
        await producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Priority = 0 });
        await producer.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { Priority = 10 });
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            storage: o => (o.NodeHeartbeatInterval, o.PollInterval, o.ClaimsPerWorker) = (TimeSpan.FromMinutes(1), TimeSpan.FromMilliseconds(50), 2),
            executor: o => o.WorkerCount = 2);
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;

        await DurableQueueTests.WaitAsync(() => started.Count == 1 && queue.ClusterReservedCount == 1, "one item runs, the other is reserved");
        release.Release(2);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "both items ran");
        Assert.Equal([2, 1], started.ToArray());
    }

    /// <summary>One node (two workers, two claims per worker) under a MaxRunning, three items enqueued; each handler waits for <see cref="Release"/>.</summary>
    private sealed class Gated : IAsyncDisposable
    {
        public int Started;
        public int MaxConcurrent;
        private int _running;
        private PostgresFixture _postgres = null!;

        public SemaphoreSlim Release { get; } = new(0);

        public Behavior Behavior { get; private set; } = null!;

        public QueueNode Node { get; private set; } = null!;

        public PostgreSqlWorkQueue<Notice> Queue => (PostgreSqlWorkQueue<Notice>)Node.Queue;

        public string Schema { get; private set; } = "";

        public static async Task<Gated> StartAsync(PostgresFixture postgres, int maxRunning, double? startsPerSecond = null, TimeSpan? heartbeat = null, int workers = 2, int items = 3)
        {
            var run = new Gated { _postgres = postgres, Schema = await postgres.NewSchemaAsync() };
            run.Behavior = new Behavior
            {
                Handle = (_, _) =>
                {
                    Interlocked.Increment(ref run.Started);
                    var now = Interlocked.Increment(ref run._running);
                    int max;
                    while ((max = Volatile.Read(ref run.MaxConcurrent)) < now && Interlocked.CompareExchange(ref run.MaxConcurrent, now, max) != max)
                    {
                    }

                    try
                    {
                        Assert.True(run.Release.Wait(QueueNode.Patience));
                    }
                    finally
                    {
                        Interlocked.Decrement(ref run._running);
                    }
                },
            };
            run.Node = await QueueNode.StartAsync(postgres.ConnectionString, run.Schema, run.Behavior,
                storage: o => (o.NodeHeartbeatInterval, o.PollInterval, o.ClaimsPerWorker) = (heartbeat ?? TimeSpan.FromMinutes(1), TimeSpan.FromMilliseconds(50), 2),
                executor: o => o.WorkerCount = workers);
            await ClusterLimitSql.SetLimitsAsync(postgres, run.Schema, maxRunning: maxRunning, startsPerSecond: startsPerSecond, burst: startsPerSecond is null ? null : 10);
            await DurableQueueTests.WaitAsync(() => run.Queue.ClusterPermitsAllowed == maxRunning, "the node holds its grant");
            await run.Node.Queue.EnqueueManyAsync([.. Enumerable.Range(1, items).Select(static i => new Notice(i))]);
            return run;
        }

        /// <summary>Waits until one item runs and one waits in the reserve.</summary>
        public async Task WaitReservedAsync()
        {
            await DurableQueueTests.WaitAsync(() => Volatile.Read(ref Started) == 1 && Queue.ClusterReservedCount == 1, "one item runs, one is reserved");
            Assert.Equal(1, Volatile.Read(ref Started));
        }

        public Task<long> CountAsync(short state) => _postgres.ScalarAsync<long>($"SELECT count(*) FROM {Schema}.items WHERE state = {state}");

        public async ValueTask DisposeAsync()
        {
            Release.Release(10);
            await Node.DisposeAsync();
        }
    }
}
