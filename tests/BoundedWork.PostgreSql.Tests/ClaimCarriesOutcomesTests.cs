using System.Collections.Concurrent;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Npgsql;

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

    [Fact]
    public async Task ACarryingClaimWhoseAnswerIsLostAfterItsCommit_RecordsItsOutcomeOnce_AndItsItemRunsLater_NeverTwiceAtOnce()
    {
        // A lease short enough for the reaper to return the lost claim's item within the test, long enough for the
        // heartbeat to keep the held items' leases on a loaded machine.
        var collector = new FakeLogCollector();
        await using var run = await GatedBacklog.StartAsync(postgres, TimeSpan.FromSeconds(5), new FakeLoggerProvider(collector));
        await run.StartedAsync(1);
        run.Finish(1);
        await run.StartedAsync(2);
        await run.ClaimedAsync(3);

        // The claim that carries item 2's outcome (and claims item 4) commits; then its answer is lost. (A claim that
        // committed before item 2's outcome was written may still be on its way out when the hook is set: it passes.
        // Were item 2's outcome written apart from the claim, the writers of items 2 and 4 would differ: checked below.)
        var lost = new TaskCompletionSource<(short Two, long TwoBy, short Four, long FourBy)>(TaskCreationOptions.RunContinuationsAsynchronously);
        run.Queue.ClaimLoop.AfterClaimCommit = _ =>
        {
            if (lost.Task.IsCompleted || run.StateAsync(2).Result != StorageSql.Completed)
            {
                return;
            }

            lost.SetResult((run.StateAsync(2).Result, run.WrittenByAsync(2).Result, run.StateAsync(4).Result, run.WrittenByAsync(4).Result));
            throw new NpgsqlException("The answer to the claim was lost (the test's fault).");
        };
        run.Finish(2);
        var committed = await lost.Task.WaitAsync(QueueNode.Patience);

        // The one transaction wrote item 2's outcome and leased item 4 to the node, which never got it.
        Assert.Equal(StorageSql.Completed, committed.Two);
        Assert.Equal(StorageSql.Running, committed.Four);
        Assert.Equal(committed.TwoBy, committed.FourBy);

        // Item 4 is reaped when its lease ends and runs then; every item runs once, never two at once (the witness).
        await run.FinishEveryItemAsync();
        Assert.All(run.Behavior.Deliveries, d => Assert.Equal(d.Item.Number == 4 ? 2 : 1, d.Attempt));
        await run.AssertWitnessedOnceEachAsync();

        // Item 2's outcome was recorded once: the writer wrote it again after the lost answer, and that changed nothing.
        Assert.Equal(committed.TwoBy, await run.WrittenByAsync(2));
        var logs = collector.GetSnapshot();
        Assert.DoesNotContain(logs, log => log.Id.Name == "OutcomesNotRecorded");
        Assert.Single(logs, log => log.Id.Name == "OutcomesWrittenAgain");
    }

    /// <summary>
    /// While a node drains a backlog, its next claim waits until the node's items still to finish (held, outcome not
    /// posted) fall to a low water, then carries every outcome posted meanwhile and claims the room they freed: one full
    /// claim, not a claim for each outcome. Two workers and eight claims per worker: the node holds 16 and its low water
    /// is max(2 × 2, 16 / 4) = 4. The loop never polls here, so only the low water ends the wait.
    /// </summary>
    [Fact]
    public async Task Backlog_TheNextClaimWaitsForTheLowWater_ThenCarriesEveryOutcome_AndClaimsTheirRoomAtOnce()
    {
        const int Held = 16;
        const int LowWater = 4;
        await using var run = await GatedBacklog.StartAsync(postgres, items: 40, workers: 2, claimsPerWorker: 8, pollInterval: TimeSpan.FromHours(1));
        await run.StartedAsync(1);
        await run.StartedAsync(2);
        await DurableQueueTests.WaitAsync(() => run.Queue.ClaimedByLoopCount == Held, "the first claim takes the node's room");

        // Items end one by one down to one above the low water: each outcome is posted and none is written, nothing claimed.
        const int Finished = Held - LowWater - 1;
        for (var number = 1; number <= Finished; number++)
        {
            run.Finish(number);
            await run.StartedAsync(number + 2);
        }

        await run.Behavior.WaitUntilAsync(() => run.Behavior.Deliveries.Count == Finished, "the handlers returned");
        Assert.Equal(Held, run.Queue.ClaimedByLoopCount);
        Assert.Equal(0L, await run.CountAsync(StorageSql.Completed));

        // One more: the low water. One statement writes the 12 outcomes and claims the 12 places they free.
        run.Finish(Finished + 1);
        await DurableQueueTests.WaitAsync(() => run.Queue.ClaimedByLoopCount > Held, "the next claim");
        Assert.Equal(Held + Finished + 1, run.Queue.ClaimedByLoopCount);
        Assert.Equal((long)Finished + 1, await run.CountAsync(StorageSql.Completed));
        Assert.Equal(await run.WrittenByAsync(1), await run.WrittenByAsync(Held + Finished + 1));
        Assert.Equal(await run.WrittenByAsync(Finished + 1), await run.WrittenByAsync(Held + 1));

        await run.FinishAllAsync();
    }

    /// <summary>
    /// The claim that ends a low-water wait carries many outcomes and claims their room; its answer is lost after its
    /// commit. Every outcome it carried is recorded once (the writer writes them again, which changes nothing), every
    /// item it leased runs later, once, after its lease ends, and no item runs twice at once (the witness). Two workers
    /// and eight claims per worker, as above; the poll interval (2 s) bounds the wait, so on a slow machine the claim
    /// may carry fewer outcomes: the assertions hold for any number.
    /// </summary>
    [Fact]
    public async Task Backlog_TheClaimAfterTheLowWaterLosesItsAnswer_EachCarriedOutcomeIsRecordedOnce_AndItsItemsRunLater_NeverTwiceAtOnce()
    {
        const int Held = 16;
        const int LowWater = 4;
        var collector = new FakeLogCollector();
        await using var run = await GatedBacklog.StartAsync(postgres, TimeSpan.FromSeconds(5), new FakeLoggerProvider(collector), items: 40, workers: 2, claimsPerWorker: 8, pollInterval: TimeSpan.FromSeconds(2));
        await run.StartedAsync(1);
        await run.StartedAsync(2);
        await DurableQueueTests.WaitAsync(() => run.Queue.ClaimedByLoopCount == Held, "the first claim takes the node's room");

        // The next claim is the one after the low-water wait: in the transaction that committed it (the newest writer
        // of a completed row: the outcome writer waits while the loop carries), count the outcomes it carried and the
        // rows it leased (not held by the node, so no heartbeat rewrites them), then lose its answer.
        var lost = new TaskCompletionSource<(long Carried, long Leased, int Read)>(TaskCreationOptions.RunContinuationsAsynchronously);
        run.Queue.ClaimLoop.AfterClaimCommit = read =>
        {
            if (lost.Task.IsCompleted)
            {
                return;
            }

            var by = run.NewestCompletedWriterAsync().Result;
            lost.SetResult((run.CountWrittenByAsync(by, StorageSql.Completed).Result, run.CountWrittenByAsync(by, StorageSql.Running).Result, read));
            throw new NpgsqlException("The answer to the claim was lost (the test's fault).");
        };
        for (var number = 1; number <= Held - LowWater; number++)
        {
            run.Finish(number);
        }

        var committed = await lost.Task.WaitAsync(QueueNode.Patience);
        run.Queue.ClaimLoop.AfterClaimCommit = null;

        // One transaction wrote the carried outcomes and leased as many items (the room they freed), none of them held.
        Assert.InRange(committed.Carried, 1, Held - LowWater);
        Assert.Equal(committed.Carried, committed.Leased);
        Assert.Equal(committed.Carried, committed.Read);

        // The leased items are reaped when their leases end and run then; every item runs once, never two at once.
        await run.FinishEveryItemAsync();
        Assert.Equal(committed.Leased, run.Behavior.Deliveries.Count(d => d.Attempt == 2));
        Assert.All(run.Behavior.Deliveries, d => Assert.InRange(d.Attempt, 1, 2));
        await run.AssertWitnessedOnceEachAsync();
        var logs = collector.GetSnapshot();
        Assert.DoesNotContain(logs, log => log.Id.Name == "OutcomesNotRecorded");
        Assert.Single(logs, log => log.Id.Name == "OutcomesWrittenAgain");
    }

    /// <summary>
    /// Outcomes a carrying claim took back after a lost answer (possibly recorded by the claim that lost it) and a later
    /// carrying claim wrote again change nothing: that is reported as outcomes written again (Information), as the
    /// writer reports them, not as outcomes that were not recorded because their items were no longer the node's
    /// (a Warning). An outcome that was never carried before and is not recorded is still that warning. No server is
    /// needed: the writer's bookkeeping is given what the statement recorded.
    /// </summary>
    [Fact]
    public void OutcomesCarriedAgainAfterALostAnswer_ThatChangeNothing_AreReportedAsWrittenAgain_NotAsNotRecorded()
    {
        var collector = new FakeLogCollector();
        using var logs = new FakeLoggerProvider(collector);
        using var dataSource = NpgsqlDataSource.Create("Host=localhost");
        var settled = 0;
        using var writer = new OutcomeWriter(dataSource, new StorageSql("boundedwork"), "notices", "a node", deleteCompleted: false, logs.CreateLogger("writer"),
            new StorageHealth(() => { }), TimeSpan.FromSeconds(1), written => settled += written.Count, () => { });
        var owner = new NoOwner();
        StoredItem Item(long id) => new(owner, id, "{}", 1, 0, DateTimeOffset.UtcNow, false, null, null, null);

        // A claim carries items 1 and 2; its answer is lost (it may have committed): the outcomes go back, marked.
        writer.Post(Item(1), OutcomeKind.Completed);
        writer.Post(Item(2), OutcomeKind.Completed);
        var lost = writer.TakeRiders(out _);
        Assert.Equal(2, lost!.Count);
        writer.RidersFailed(lost, attempted: true);

        // The next carrying claim takes them with item 3's outcome; the lost claim had recorded 1 and 2, so it records 3 only.
        writer.Post(Item(3), OutcomeKind.Completed);
        var again = writer.TakeRiders(out _);
        Assert.Equal(3, again!.Count);
        writer.RidersWritten(again, recorded: 1);
        Assert.Equal(3, settled);
        var written = collector.GetSnapshot();
        Assert.DoesNotContain(written, log => log.Id.Name == "OutcomesNotRecorded");
        Assert.Contains("2 outcomes written again", Assert.Single(written, log => log.Id.Name == "OutcomesWrittenAgain").Message, StringComparison.Ordinal);

        // An outcome carried for the first time and not recorded: its item was no longer this node's.
        collector.Clear();
        writer.Post(Item(4), OutcomeKind.Completed);
        writer.RidersWritten(writer.TakeRiders(out _)!, recorded: 0);
        Assert.Single(collector.GetSnapshot(), log => log.Id.Name == "OutcomesNotRecorded");
    }

    /// <summary>
    /// A backlog of <see cref="Items"/> items (or as many as asked) drained by one node of one worker and two claims per
    /// worker (or as asked), each handler held until the test finishes its item.
    /// </summary>
    private sealed class GatedBacklog : IAsyncDisposable
    {
        private readonly PostgresFixture _postgres;
        private readonly string _schema;
        private readonly ConcurrentDictionary<int, ManualResetEventSlim> _gates = new();
        private readonly ConcurrentDictionary<int, TaskCompletionSource> _started = new();
        private QueueNode? _producer;
        private QueueNode? _consumer;
        private readonly int _items;
        private int _overlaps;

        private GatedBacklog(PostgresFixture postgres, string schema, int items)
        {
            _postgres = postgres;
            _schema = schema;
            _items = items;
        }

        public Behavior Behavior { get; } = new();

        public PostgreSqlWorkQueue<Notice> Queue => (PostgreSqlWorkQueue<Notice>)_consumer!.Queue;

        /// <summary>
        /// Starts the backlog and its consumer. With a <paramref name="lease"/> (default: one that outlasts the test),
        /// each handler also writes a witness table: a row per run, and a row while it runs (unique per item, so an item
        /// run twice at once is counted, see <see cref="AssertWitnessedOnceEachAsync"/>).
        /// </summary>
        public static async Task<GatedBacklog> StartAsync(
            PostgresFixture postgres, TimeSpan? lease = null, ILoggerProvider? logs = null, int items = Items, int workers = 1, int claimsPerWorker = 2, TimeSpan? pollInterval = null)
        {
            var run = new GatedBacklog(postgres, await postgres.NewSchemaAsync(), items);
            var witness = lease is not null;
            if (witness)
            {
                await postgres.ExecuteAsync($"CREATE TABLE {run._schema}.witness_runs (number integer NOT NULL, attempt integer NOT NULL); CREATE TABLE {run._schema}.witness_running (number integer PRIMARY KEY)");
            }

            run.Behavior.Handle = (notice, context) =>
            {
                if (witness)
                {
                    run.Witness($"INSERT INTO {run._schema}.witness_runs VALUES ({notice.Number}, {context.Attempt}); INSERT INTO {run._schema}.witness_running VALUES ({notice.Number})");
                }

                run.Started(notice.Number).TrySetResult();
                run.Gate(notice.Number).Wait(QueueNode.Patience);
                if (witness)
                {
                    run.Witness($"DELETE FROM {run._schema}.witness_running WHERE number = {notice.Number}");
                }
            };

            // The backlog is in the table before the consumer starts, enqueued in number order (so in claim order).
            run._producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, run._schema);
            for (var number = 1; number <= items; number++)
            {
                await run._producer.Queue.EnqueueAsync(new Notice(number));
            }

            // A lease that outlasts the test: no renewal rewrites a running row meanwhile.
            run._consumer = await QueueNode.StartAsync(postgres.ConnectionString, run._schema, run.Behavior, node: "consumer",
                storage: o =>
                {
                    o.ClaimsPerWorker = claimsPerWorker;
                    o.LeaseDuration = lease ?? TimeSpan.FromMinutes(5);
                    o.PollInterval = pollInterval ?? o.PollInterval;
                },
                executor: o => o.WorkerCount = workers,
                services: logs is null ? null : s => s.AddSingleton(logs));
            return run;
        }

        public Task StartedAsync(int number) => Started(number).Task.WaitAsync(QueueNode.Patience);

        public void Finish(int number) => Gate(number).Set();

        public Task ClaimedAsync(int number) =>
            DurableQueueTests.WaitAsync(() => StateAsync(number).Result == StorageSql.Running, $"item {number} is claimed");

        public Task<long> CountAsync(short state) => _postgres.ScalarAsync<long>($"SELECT count(*) FROM {_schema}.items WHERE state = {state}");

        public Task<short> StateAsync(int number) =>
            _postgres.ScalarAsync<short>($"SELECT state FROM {_schema}.items ORDER BY id OFFSET {number - 1} LIMIT 1");

        /// <summary>The transaction that last wrote item <paramref name="number"/>'s row.</summary>
        public Task<long> WrittenByAsync(int number) =>
            _postgres.ScalarAsync<long>($"SELECT xmin::text::bigint FROM {_schema}.items ORDER BY id OFFSET {number - 1} LIMIT 1");

        /// <summary>The newest transaction that wrote a completed row (transaction ids grow; no wraparound in a test).</summary>
        public Task<long> NewestCompletedWriterAsync() =>
            _postgres.ScalarAsync<long>($"SELECT max(xmin::text::bigint) FROM {_schema}.items WHERE state = {StorageSql.Completed}");

        /// <summary>How many rows in <paramref name="state"/> transaction <paramref name="by"/> wrote last.</summary>
        public Task<long> CountWrittenByAsync(long by, short state) =>
            _postgres.ScalarAsync<long>($"SELECT count(*) FROM {_schema}.items WHERE state = {state} AND xmin::text::bigint = {by}");

        public async Task AssertHeldWithinLimitAsync()
        {
            var held = await _postgres.ScalarAsync<long>($"SELECT count(*) FROM {_schema}.items WHERE state = 1 AND lease_owner = '{Queue.NodeId}'");
            Assert.True(held <= Bound, $"The node holds {held} rows in the table; it may hold {Bound}.");
        }

        public async Task FinishAllAsync()
        {
            await FinishEveryItemAsync();
            Assert.All(Behavior.Deliveries, d => Assert.Equal(1, d.Attempt));
        }

        /// <summary>Lets every handler end; every item runs once and its outcome is written.</summary>
        public async Task FinishEveryItemAsync()
        {
            for (var number = 1; number <= _items; number++)
            {
                Finish(number);
            }

            await Behavior.WaitUntilAsync(() => Behavior.Deliveries.Count == _items, "every item ran");
            await DurableQueueTests.WaitAsync(() => CountAsync(StorageSql.Completed).Result == _items, "every outcome is written");
            Assert.Equal(Enumerable.Range(1, _items), Behavior.Deliveries.Select(d => d.Item.Number).Order());
        }

        /// <summary>The witness table saw every item run once, and no item run while it ran already.</summary>
        public async Task AssertWitnessedOnceEachAsync()
        {
            Assert.Equal(0, Volatile.Read(ref _overlaps));
            Assert.Equal(_items, await _postgres.ScalarAsync<long>($"SELECT count(DISTINCT number) FROM {_schema}.witness_runs"));
            Assert.Equal(_items, await _postgres.ScalarAsync<long>($"SELECT count(*) FROM {_schema}.witness_runs"));
            Assert.Equal(0, await _postgres.ScalarAsync<long>($"SELECT count(*) FROM {_schema}.witness_running"));
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

        /// <summary>Writes the witness table (an item already running when it starts again is counted in <c>_overlaps</c>).</summary>
        private void Witness(string sql)
        {
            using var connection = new NpgsqlConnection(_postgres.ConnectionString);
            connection.Open();
            using var command = new NpgsqlCommand(sql, connection);
            try
            {
                command.ExecuteNonQuery();
            }
            catch (PostgresException ex) when (ex.SqlState == PostgresErrorCodes.UniqueViolation)
            {
                Interlocked.Increment(ref _overlaps);
            }
        }

        private ManualResetEventSlim Gate(int number) => _gates.GetOrAdd(number, static _ => new ManualResetEventSlim());

        private TaskCompletionSource Started(int number) => _started.GetOrAdd(number, static _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
    }
}
