using System.Collections.Concurrent;
using System.Diagnostics;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Xunit.Abstractions;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The start rate bounds handler starts, not claims: every handler records the moment it starts in a list of the
/// test's own (the witness), and the test counts the starts in every span between two of them.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterRateStartTests(PostgresFixture postgres, ITestOutputHelper output)
{
    /// <summary>
    /// How much later than its token a start may be recorded: the handler records its start a few microseconds after
    /// the node spent the token, or later when the machine preempts the worker in between. Over a span of L seconds
    /// the starts recorded are the tokens spent in L plus this, so at most burst + rate × (L + this) of them.
    /// </summary>
    private const double RecordDelaySeconds = 0.2;

    [Fact]
    public async Task StartsPerSecond_HandlersHeldThenReleased_StartsInAnySpanStayWithinBurstPlusRateTimesItsLength()
    {
        // One node of 8 workers, 4 starts a second with a burst of 4: the 8 workers fill up in about a second, and are
        // held (a gate, not a sleep) for 3 s while the backlog waits. A node that spent its tokens when it claimed went
        // on claiming 4 a second into its executor's queue meanwhile, and at the release started those together with
        // its burst: 15 or so handler starts within a second, against the 8 the rate allows.
        const double Rate = 4;
        const int Burst = 4;
        const int Workers = 8;
        const int Items = 24;
        var gate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var starts = new ConcurrentQueue<long>();
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior
        {
            Handle = (_, _) =>
            {
                starts.Enqueue(Stopwatch.GetTimestamp());
                Assert.True(gate.Task.Wait(QueueNode.Patience));
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.PollInterval = TimeSpan.FromMilliseconds(100),
            executor: o => (o.WorkerCount, o.MaxWorkerCount) = (Workers, Workers));
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: Rate, burst: Burst);
        try
        {
            await DurableQueueTests.WaitAsync(() => queue.IsClusterLimited, "the node holds its rate share");
            await node.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i)));
            await DurableQueueTests.WaitAsync(() => starts.Count == Workers, "every worker runs a held handler");

            // Every worker is held: no handler can start, so the node's figure of starts during the last second is 0
            // once a second has passed since the last start (a figure of claims showed the claims made meanwhile).
            await Task.Delay(TimeSpan.FromSeconds(1.5));
            Assert.Equal(Workers, starts.Count);
            Assert.Equal(0.0, queue.StartsLastSecond);
            await Task.Delay(TimeSpan.FromSeconds(1.5));
        }
        finally
        {
            gate.TrySetResult();
        }

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == Items, "every item ran");

        var times = starts.Select(t => (double)t / Stopwatch.Frequency).Order().ToArray();
        Assert.Equal(Items, times.Length);
        var (worst, worstSpan, worstBound) = (1, 0.0, (double)Burst);
        for (var i = 0; i < times.Length; i++)
        {
            for (var j = i; j < times.Length; j++)
            {
                var span = times[j] - times[i];
                var count = j - i + 1;
                var bound = Burst + (Rate * (span + RecordDelaySeconds));
                if (count - bound > worst - worstBound)
                {
                    (worst, worstSpan, worstBound) = (count, span, bound);
                }
            }
        }

        output.WriteLine($"worst span: {worst} starts in {worstSpan:0.000} s (bound {worstBound:0.0}); most in one second: {MostInOneSecond(times)}");
        Assert.True(worst <= worstBound, $"{worst} handlers started within {worstSpan:0.000} s; the rate allows {Burst} + {Rate} x (that + {RecordDelaySeconds}) = {worstBound:0.0}.");
        Assert.True(MostInOneSecond(times) <= Burst + Rate, $"{MostInOneSecond(times)} handlers started within one second; the rate allows {Burst} + {Rate}.");
    }

    [Fact]
    public async Task StartsPerSecond_BurstOfOne_StandingBacklog_TheNodeWakesForEachToken_NotAtItsNextPoll()
    {
        // A burst of 1 under the default poll interval (1 s): a node that spent its burst and then waited for its next
        // poll started one handler a second, 5% of the rate. The bound here is generous (a third of the rate: 40
        // starts in 6 s where the rate allows them in 2 s), so that only a node that waits for its polls can miss it,
        // not a busy machine delaying each of 40 claims by a hundred milliseconds.
        const double Rate = 20;
        const int Items = 41;
        var starts = new ConcurrentQueue<long>();
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior { Handle = (_, _) => starts.Enqueue(Stopwatch.GetTimestamp()) };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.PollInterval = TimeSpan.FromSeconds(1),
            executor: o => o.WorkerCount = 4);
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: Rate, burst: 1);
        await DurableQueueTests.WaitAsync(() => queue.IsClusterLimited, "the node holds its rate share");
        await node.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i)));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == Items, "every item ran");

        var times = starts.Select(t => (double)t / Stopwatch.Frequency).Order().ToArray();
        var took = times[^1] - times[0];
        output.WriteLine($"{Items - 1} starts after the first took {took:0.000} s: {(Items - 1) / took:0.0} a second against a rate of {Rate}");
        Assert.True(took < (Items - 1) / Rate * 3, $"{Items - 1} starts after the first took {took:0.000} s: {(Items - 1) / took:0.0} a second against a rate of {Rate}.");
        Assert.True(MostInOneSecond(times) <= 1 + Rate, $"{MostInOneSecond(times)} handlers started within one second; the rate allows 1 + {Rate}.");
    }

    [Fact]
    public async Task StartsPerSecond_RateAboveTenTimesTheBurst_HandlerStartsWitnessedInTheDatabase_StayWithinBurstPlusRateTimesSpan()
    {
        // 1,000 starts a second with a burst of 10: a tenth of a second's worth of the rate (100, what the claim bucket
        // holds) is ten times the burst, so claims run ahead of the burst; the starts may not. Each handler, first thing,
        // reads its own clock and inserts a row of its own (the witness, outside the library's counters); every span
        // between two witnessed starts holds at most burst + rate x (span + the record delay). The node runs a first
        // round before the limit is set: on a cold node the first handlers are entered late by the compilation of the
        // delivery's path, after their tokens were spent, and arrive bunched (31 within 2 ms in one run).
        const double Rate = 1000;
        const int Burst = 10;
        const int Workers = 32;
        const int Items = 400;
        const double RecordDelay = 0.01; // a handler is entered this late after its token at most (a preempted worker)
        var schema = await postgres.NewSchemaAsync();
        await postgres.ExecuteAsync($"CREATE TABLE {schema}.witnessed_starts (item_id bigint NOT NULL, at bigint NOT NULL)");
        await using var witness = Npgsql.NpgsqlDataSource.Create(postgres.ConnectionString);
        var behavior = new Behavior
        {
            Handle = (_, context) =>
            {
                var at = Stopwatch.GetTimestamp();
                using var insert = witness.CreateCommand($"INSERT INTO {schema}.witnessed_starts (item_id, at) VALUES ($1, $2)");
                insert.Parameters.Add(new() { Value = context.ItemId });
                insert.Parameters.Add(new() { Value = at });
                insert.ExecuteNonQuery();
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.PollInterval = TimeSpan.FromMilliseconds(100),
            executor: o => (o.WorkerCount, o.MaxWorkerCount) = (Workers, Workers));
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;

        // A first round without limits, so that no start of the measured round is late by the first run's compilation.
        await node.Queue.EnqueueManyAsync(Enumerable.Range(0, Workers * 2).Select(i => new Notice(-1)));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count >= Workers * 2, "every warm-up item ran");
        await postgres.ExecuteAsync($"TRUNCATE {schema}.witnessed_starts");

        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: Rate, burst: Burst);
        await DurableQueueTests.WaitAsync(() => queue.IsClusterLimited, "the node holds its rate share");
        await node.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i)));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count >= Items + (Workers * 2), "every item ran");

        var rows = await postgres.ScalarAsync<long[]>($"SELECT array_agg(at ORDER BY at) FROM {schema}.witnessed_starts");
        Assert.Equal(Items, rows.Length);
        var times = rows.Select(t => (double)t / Stopwatch.Frequency).ToArray();
        var (worst, worstSpan, worstBound, worstAt) = (1, 0.0, (double)Burst, 0);
        for (var i = 0; i < times.Length; i++)
        {
            for (var j = i; j < times.Length; j++)
            {
                var span = times[j] - times[i];
                var count = j - i + 1;
                var bound = Burst + (Rate * (span + RecordDelay));
                if (count - bound > worst - worstBound)
                {
                    (worst, worstSpan, worstBound, worstAt) = (count, span, bound, i);
                }
            }
        }

        output.WriteLine($"worst span: {worst} starts in {worstSpan * 1000:0.000} ms from the start #{worstAt} (bound {worstBound:0.0}); {Items} starts in {(times[^1] - times[0]) * 1000:0} ms");
        Assert.True(worst <= worstBound, $"{worst} handlers started within {worstSpan * 1000:0.000} ms; the rate allows {Burst} + {Rate} x (that + {RecordDelay * 1000} ms) = {worstBound:0.0}.");
    }

    private static int MostInOneSecond(double[] times)
    {
        var most = 0;
        for (int i = 0, j = 0; j < times.Length; j++)
        {
            while (times[j] - times[i] > 1)
            {
                i++;
            }

            most = Math.Max(most, j - i + 1);
        }

        return most;
    }
}
