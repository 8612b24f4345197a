using System.Collections.Concurrent;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// While its claims come back full (a backlog), a node's claim carries the outcomes posted meanwhile: one transaction
/// writes them and claims the room they free. The node still holds no more than <c>WorkerCount × ClaimsPerWorker</c>
/// rows in the table, and a carrying claim that fails leaves its outcomes to the outcome writer (nothing lost, nothing
/// run twice). The witness is the table itself: the transaction that last wrote a row (<c>xmin</c>) and the rows
/// leased to the node.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClaimCarriesOutcomesTests(PostgresFixture postgres)
{
    private const int Items = 8;
    private const int Bound = 1 * 2; // one worker × two claims per worker

    [Fact]
    public async Task Backlog_AnOutcomeRidesWithTheNextClaim_InOneTransaction_AndTheNodeHoldsNoMoreThanItsLimit()
    {
        await using var run = await GatedBacklog.StartAsync(postgres);

        // Item 1 runs, item 2 waits on the executor: the node holds its limit. Whichever way item 1's outcome is
        // written, the claim after it is full, so from then on the node carries outcomes with its claims.
        await run.StartedAsync(1);
        await run.AssertHeldWithinLimitAsync();
        run.Finish(1);
        await run.StartedAsync(2);
        await run.ClaimedAsync(3);
        await run.AssertHeldWithinLimitAsync();

        // Item 2's outcome and item 4's claim commit in one transaction.
        run.Finish(2);
        await run.StartedAsync(3);
        await run.ClaimedAsync(4);
        await run.AssertHeldWithinLimitAsync();
        Assert.Equal(StorageSql.Completed, await run.StateAsync(2));
        Assert.Equal(await run.WrittenByAsync(2), await run.WrittenByAsync(4));

        await run.FinishAllAsync();
    }

    [Fact]
    public async Task ACarryingClaimThatFails_LeavesItsOutcomesToTheWriter_NothingLostOrRunTwice()
    {
        await using var run = await GatedBacklog.StartAsync(postgres);
        await run.StartedAsync(1);
        run.Finish(1);
        await run.StartedAsync(2);
        await run.ClaimedAsync(3);

        // The next claim carries item 2's outcome: it fails before its transaction begins.
        var atClaim = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var proceed = new ManualResetEventSlim();
        var failed = 0;
        run.Queue.ClaimLoop.BeforeClaimStatement = () =>
        {
            if (Interlocked.Increment(ref failed) == 1)
            {
                atClaim.SetResult();
                proceed.Wait();
                throw new InvalidOperationException("the claim fails (test)");
            }
        };
        run.Finish(2);
        await atClaim.Task.WaitAsync(QueueNode.Patience);

        // The claim took the outcome to carry it (the writer waits meanwhile): item 2's row is still the node's.
        Assert.Equal(StorageSql.Running, await run.StateAsync(2));
        proceed.Set();

        // The writer writes it; the node goes on claiming; every item runs once.
        await DurableQueueTests.WaitAsync(() => run.StateAsync(2).Result == StorageSql.Completed, "item 2's outcome is written by the writer");
        run.Queue.ClaimLoop.BeforeClaimStatement = null;
        await run.FinishAllAsync();
        Assert.True(Volatile.Read(ref failed) >= 1);
    }

    /// <summary>
    /// A backlog of <see cref="Items"/> items drained by one node of one worker and two claims per worker, each handler
    /// held until the test finishes its item.
    /// </summary>
    private sealed class GatedBacklog : IAsyncDisposable
    {
        private readonly PostgresFixture _postgres;
        private readonly string _schema;
        private readonly ConcurrentDictionary<int, ManualResetEventSlim> _gates = new();
        private readonly ConcurrentDictionary<int, TaskCompletionSource> _started = new();
        private QueueNode? _producer;
        private QueueNode? _consumer;

        private GatedBacklog(PostgresFixture postgres, string schema)
        {
            _postgres = postgres;
            _schema = schema;
        }

        public Behavior Behavior { get; } = new();

        public PostgreSqlWorkQueue<Notice> Queue => (PostgreSqlWorkQueue<Notice>)_consumer!.Queue;

        public static async Task<GatedBacklog> StartAsync(PostgresFixture postgres)
        {
            var run = new GatedBacklog(postgres, await postgres.NewSchemaAsync());
            run.Behavior.Handle = (notice, _) =>
            {
                run.Started(notice.Number).TrySetResult();
                run.Gate(notice.Number).Wait(QueueNode.Patience);
            };

            // The backlog is in the table before the consumer starts, enqueued in number order (so in claim order).
            run._producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, run._schema);
            for (var number = 1; number <= Items; number++)
            {
                await run._producer.Queue.EnqueueAsync(new Notice(number));
            }

            // A lease that outlasts the test: no renewal rewrites a running row meanwhile.
            run._consumer = await QueueNode.StartAsync(postgres.ConnectionString, run._schema, run.Behavior, node: "consumer",
                storage: o => { o.ClaimsPerWorker = 2; o.LeaseDuration = TimeSpan.FromMinutes(5); },
                executor: o => o.WorkerCount = 1);
            return run;
        }

        public Task StartedAsync(int number) => Started(number).Task.WaitAsync(QueueNode.Patience);

        public void Finish(int number) => Gate(number).Set();

        public Task ClaimedAsync(int number) =>
            DurableQueueTests.WaitAsync(() => StateAsync(number).Result == StorageSql.Running, $"item {number} is claimed");

        public Task<short> StateAsync(int number) =>
            _postgres.ScalarAsync<short>($"SELECT state FROM {_schema}.items ORDER BY id OFFSET {number - 1} LIMIT 1");

        /// <summary>The transaction that last wrote item <paramref name="number"/>'s row.</summary>
        public Task<long> WrittenByAsync(int number) =>
            _postgres.ScalarAsync<long>($"SELECT xmin::text::bigint FROM {_schema}.items ORDER BY id OFFSET {number - 1} LIMIT 1");

        public async Task AssertHeldWithinLimitAsync()
        {
            var held = await _postgres.ScalarAsync<long>($"SELECT count(*) FROM {_schema}.items WHERE state = 1 AND lease_owner = '{Queue.NodeId}'");
            Assert.True(held <= Bound, $"The node holds {held} rows in the table; it may hold {Bound}.");
        }

        public async Task FinishAllAsync()
        {
            for (var number = 1; number <= Items; number++)
            {
                Finish(number);
            }

            await Behavior.WaitUntilAsync(() => Behavior.Deliveries.Count == Items, "every item ran");
            await DurableQueueTests.WaitAsync(() => _postgres.ScalarAsync<long>($"SELECT count(*) FROM {_schema}.items WHERE state = 2").Result == Items, "every outcome is written");
            Assert.Equal(Enumerable.Range(1, Items), Behavior.Deliveries.Select(d => d.Item.Number).Order());
            Assert.All(Behavior.Deliveries, d => Assert.Equal(1, d.Attempt));
        }

        public async ValueTask DisposeAsync()
        {
            foreach (var gate in _gates.Values)
            {
                gate.Set();
            }

            if (_consumer is not null)
            {
                await _consumer.DisposeAsync();
            }

            if (_producer is not null)
            {
                await _producer.DisposeAsync();
            }
        }

        private ManualResetEventSlim Gate(int number) => _gates.GetOrAdd(number, static _ => new ManualResetEventSlim());

        private TaskCompletionSource Started(int number) => _started.GetOrAdd(number, static _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
    }
}
