using System.Threading.RateLimiting;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;
using Polly;
using Polly.RateLimiting;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The queue's cluster limits as a <see cref="RateLimiter"/> (<see cref="IPostgreSqlWorkQueue{T}.CreateClusterRateLimiter"/>),
/// measured outside the library: the handlers and the code under the limiter record their starts and ends in
/// <c>runs</c> (<see cref="ClusterLimitSql"/>), the code under a limiter in a child process also the moment its lease was
/// granted (<c>acquired_at</c>, the machine's clock).
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterRateLimiterTests(PostgresFixture postgres)
{
    private static readonly TimeSpan Lease = TimeSpan.FromSeconds(2);

    [Fact]
    public async Task CreateAndAcquire_BadArguments_AreRefusedNamingTheArgument()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        Assert.Equal("options", Assert.Throws<ArgumentNullException>(() => node.Queue.CreateClusterRateLimiter(null!)).ParamName);
        foreach (var bad in new[] { 0, -1, 100_001 })
        {
            var ex = Assert.Throws<ArgumentOutOfRangeException>(() => node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = bad }));
            Assert.Equal("PermitLimit", ex.ParamName);
            Assert.Contains("PermitLimit must be 1 to 100000", ex.Message, StringComparison.Ordinal);
        }

        Assert.Equal("QueueLimit", Assert.Throws<ArgumentOutOfRangeException>(
            () => node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 1, QueueLimit = -1 })).ParamName);
        foreach (var name in new[] { string.Empty, "   ", "a\nb", new string('x', 201) })
        {
            Assert.Equal("Name", Assert.Throws<ArgumentException>(
                () => node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 1, Name = name })).ParamName);
        }

        using var limiter = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 2 });
        Assert.Equal("permitCount", Assert.Throws<ArgumentOutOfRangeException>(() => limiter.AttemptAcquire(-1)).ParamName);
        var tooMany = Assert.Throws<ArgumentOutOfRangeException>(() => limiter.AttemptAcquire(3));
        Assert.Equal("permitCount", tooMany.ParamName);
        Assert.Contains("PermitLimit (2)", tooMany.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(async () => await limiter.AcquireAsync(3));
        limiter.Dispose();
        Assert.Throws<ObjectDisposedException>(() => limiter.AttemptAcquire(1));
    }

    [Fact]
    public async Task Limiter_WithMaxRunning_GrantsItsShare_QueuesAndCancels_ReportsRealStatistics_AndDisposeGivesTheShareBack()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 2);
        var first = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 2, QueueLimit = 1, Name = "first" });
        try
        {
            await DurableQueueTests.WaitAsync(() => first.GetStatistics()!.CurrentAvailablePermits == 2, "the limiter holds its share");
            Assert.Equal(2, await postgres.ScalarAsync<int>($"SELECT granted_running FROM {schema}.nodes WHERE node = 'first'"));

            using var one = first.AttemptAcquire(1);
            using var two = await first.AcquireAsync(1);
            Assert.True(one.IsAcquired && two.IsAcquired);
            using (var refused = first.AttemptAcquire(1))
            {
                Assert.False(refused.IsAcquired);
                Assert.True(refused.TryGetMetadata(MetadataName.ReasonPhrase, out var reason));
                Assert.Contains("in use", reason, StringComparison.Ordinal);
            }

            // One request may wait (QueueLimit 1); the next is refused at once; the waiting one is cancelled.
            using var cancel = new CancellationTokenSource();
            var waiting = first.AcquireAsync(1, cancel.Token).AsTask();
            Assert.False(waiting.IsCompleted);
            using (var beyond = await first.AcquireAsync(1))
            {
                Assert.False(beyond.IsAcquired);
                Assert.True(beyond.TryGetMetadata(MetadataName.ReasonPhrase, out var reason));
                Assert.Contains("QueueLimit (1)", reason, StringComparison.Ordinal);
            }

            var statistics = first.GetStatistics()!;
            Assert.Equal((0L, 1L, 2L, 2L), (statistics.CurrentAvailablePermits, statistics.CurrentQueuedCount, statistics.TotalSuccessfulLeases, statistics.TotalFailedLeases));
            await cancel.CancelAsync();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting);
            Assert.Equal(0, first.GetStatistics()!.CurrentQueuedCount);

            // A waiter is granted the permit a lease gives back; the leases' handlers show in the cluster view.
            var next = first.AcquireAsync(1).AsTask();
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<int>($"SELECT handlers_running FROM {schema}.nodes WHERE node = 'first'").Result == 2, "its row shows its leases");
            one.Dispose();
            using var granted = await next.WaitAsync(QueueNode.Patience);
            Assert.True(granted.IsAcquired); // held on: the first limiter's permits stay in use

            // A second limiter finds no room while the first holds the whole limit; once the first is disposed (its
            // waiter refused, its row gone), the second takes the share long before the row would have expired.
            using var second = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 2, QueueLimit = 2, Name = "second" });
            var secondWaits = second.AcquireAsync(2).AsTask();
            var firstWaits = first.AcquireAsync(1).AsTask();
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE node = 'second'").Result == 1, "the second limiter joined");
            Assert.False(secondWaits.IsCompleted);
            first.Dispose();
            using (var refusedAtDispose = await firstWaits)
            {
                Assert.False(refusedAtDispose.IsAcquired);
            }

            Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE node = 'first'"));
            using var taken = await secondWaits.WaitAsync(QueueNode.Patience);
            Assert.True(taken.IsAcquired);
        }
        finally
        {
            first.Dispose();
        }
    }

    [Fact]
    public async Task Limiter_SharesMaxRunningWithTheQueuesHandlers_TheWitnessNeverSeesMoreThanTheLimitAtOnce()
    {
        const int Limit = 3;
        const int Items = 40;
        var schema = await postgres.NewSchemaAsync();
        await CreateRunsAsync(schema);
        await using var data = NpgsqlDataSource.Create(postgres.ConnectionString);
        var behavior = new Behavior
        {
            Handle = (notice, context) =>
            {
                Record(data, schema, context.ItemId, notice.Number, 1, () => Thread.Sleep(30));
            },
        };

        // A node whose workers alone could exceed the limit, and a limiter whose permits alone could too.
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, executor: o => o.WorkerCount = 4);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: Limit);
        using var limiter = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 4, QueueLimit = 100 });
        await node.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(i => new Notice(i)));
        long outside = 0;
        var callers = Enumerable.Range(0, 6).Select(_ => Task.Run(async () =>
        {
            while (Interlocked.Read(ref outside) < Items)
            {
                using var lease = await limiter.AcquireAsync(1);
                if (lease.IsAcquired)
                {
                    Record(data, schema, -Interlocked.Increment(ref outside), -1, 2, () => Thread.Sleep(30));
                }
            }
        })).ToArray();
        await Task.WhenAll(callers).WaitAsync(QueueNode.Patience);
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state <> 2").Result == 0, "every item is completed");

        var overlap = await ClusterLimitSql.MaxOverlapAsync(postgres, schema);
        Assert.True(overlap <= Limit, $"{overlap} handlers and leases ran at once; the cluster limit is {Limit}.");
        Assert.Equal(Items, await postgres.ScalarAsync<long>($"SELECT count(DISTINCT item_id) FROM {schema}.runs WHERE node = 1"));
        Assert.True(await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node = 2") >= Items);
    }

    [Fact]
    public async Task Limiter_GrantThatCannotBeRenewed_Lapses_RefusesWithTheReason_AndGrantsAgainOnceRenewed()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(),
            storage: o => (o.Consume, o.NodeHeartbeatInterval) = (false, TimeSpan.FromMilliseconds(100)));
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 2);
        using var limiter = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 2, QueueLimit = 1 });
        await DurableQueueTests.WaitAsync(() => limiter.GetStatistics()!.CurrentAvailablePermits == 2, "the limiter holds its share");
        using var held = limiter.AttemptAcquire(1);
        Assert.True(held.IsAcquired);

        // The grant transaction locks the settings row: held by the test, no renewal can finish, as when the database
        // does not answer. The limiter's grant expires on its own clock three heartbeats after its last renewal began.
        Task<RateLimitLease> waiting;
        await using (var blocker = new NpgsqlConnection(postgres.ConnectionString))
        {
            await blocker.OpenAsync();
            await using var transaction = await blocker.BeginTransactionAsync();
            await using (var hold = new NpgsqlCommand($"SELECT 1 FROM {schema}.queue_settings WHERE queue = '{ClusterLimitSql.Queue}' FOR UPDATE", blocker, transaction))
            {
                await hold.ExecuteScalarAsync();
            }

            await DurableQueueTests.WaitAsync(() => limiter.GetStatistics()!.CurrentAvailablePermits == 0, "the grant lapsed");
            using (var refused = limiter.AttemptAcquire(1))
            {
                Assert.False(refused.IsAcquired);
                Assert.True(refused.TryGetMetadata(MetadataName.ReasonPhrase, out var reason));
                Assert.Contains("could not renew", reason, StringComparison.Ordinal);
            }

            waiting = limiter.AcquireAsync(1).AsTask();
            Assert.False(waiting.IsCompleted); // a queued request waits for the renewal (or its cancellation)
            await transaction.RollbackAsync();
        }

        using var renewed = await waiting.WaitAsync(QueueNode.Patience);
        Assert.True(renewed.IsAcquired);
        Assert.True(held.IsAcquired); // a lease granted before the lapse is the caller's until disposed
    }

    [Fact]
    public async Task Limiter_RenewalsFail_ItFailsClosedOnItsOwnClock_AndGrantsAgainOnceTheDatabaseAnswers()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(),
            storage: o => (o.Consume, o.NodeHeartbeatInterval) = (false, TimeSpan.FromMilliseconds(100)));
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: 1000, burst: 5);
        using var limiter = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 5, QueueLimit = 1 });
        await DurableQueueTests.WaitAsync(() => limiter.GetStatistics()!.CurrentAvailablePermits > 0, "the limiter holds its share of the rate");

        // Every statement of the renewal fails (the table it writes is gone), as when the database does not answer.
        await postgres.ExecuteAsync($"ALTER TABLE {schema}.nodes RENAME TO nodes_away");
        Task<RateLimitLease> waiting;
        try
        {
            await DurableQueueTests.WaitAsync(() => limiter.GetStatistics()!.CurrentAvailablePermits == 0, "the grant lapsed");
            using (var refused = limiter.AttemptAcquire(1))
            {
                Assert.False(refused.IsAcquired);
                Assert.True(refused.TryGetMetadata(MetadataName.ReasonPhrase, out var reason));
                Assert.Contains("is the database reachable?", reason, StringComparison.Ordinal);
            }

            waiting = limiter.AcquireAsync(1).AsTask();
            Assert.False(waiting.IsCompleted);
        }
        finally
        {
            await postgres.ExecuteAsync($"ALTER TABLE {schema}.nodes_away RENAME TO nodes");
        }

        using var renewed = await waiting.WaitAsync(QueueNode.Patience);
        Assert.True(renewed.IsAcquired);
    }

    [Fact]
    public async Task PollyPipeline_WithTheLimiter_RejectsBeyondTheFleetsBudget_AndRunsOnceAPermitIsBack()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 1);
        using var limiter = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = 1 });
        await DurableQueueTests.WaitAsync(() => limiter.GetStatistics()!.CurrentAvailablePermits == 1, "the limiter holds its share");
        var pipeline = new ResiliencePipelineBuilder().AddRateLimiter(limiter).Build();

        var entered = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var running = pipeline.ExecuteAsync(async _ =>
        {
            entered.SetResult();
            await release.Task;
        }).AsTask();
        await entered.Task.WaitAsync(QueueNode.Patience);

        await Assert.ThrowsAsync<RateLimiterRejectedException>(async () => await pipeline.ExecuteAsync(static _ => ValueTask.CompletedTask));
        Assert.Equal(1, limiter.GetStatistics()!.TotalFailedLeases);

        release.SetResult();
        await running.WaitAsync(QueueNode.Patience);
        var ran = false;
        await pipeline.ExecuteAsync(_ =>
        {
            ran = true;
            return ValueTask.CompletedTask;
        });
        Assert.True(ran);
    }

    [Fact]
    public async Task TwoProcesses_AcquiringFromTheQueuesLimiter_NeverHoldMoreThanMaxRunningTogether()
    {
        const int Limit = 4;
        var schema = await postgres.NewSchemaAsync();
        await CreateRunsAsync(schema);
        await using (await QueueNode.StartProducerAsync(postgres.ConnectionString, schema))
        {
            await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: Limit);
        }

        await using var a = await StartLimiterAsync(schema, permitLimit: Limit, hold: TimeSpan.FromMilliseconds(20));
        await using var b = await StartLimiterAsync(schema, permitLimit: Limit, hold: TimeSpan.FromMilliseconds(20));
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node = {a.Id} AND ended_at IS NOT NULL").Result >= 50
               && postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node = {b.Id} AND ended_at IS NOT NULL").Result >= 50,
            "both processes used leases");
        await a.KillAsync();
        await b.KillAsync();
        var overlap = await ClusterLimitSql.MaxOverlapAsync(postgres, schema, openEnd: await ClusterLimitSql.NowAsync(postgres));
        Assert.True(overlap <= Limit, $"{overlap} leases were held at once by the two processes; MaxRunning is {Limit}.");
    }

    [Fact]
    public async Task ProcessKilledWhileHoldingLeases_ItsPermitsComeBack_OnceItsRowExpires()
    {
        const int Limit = 2;
        var schema = await postgres.NewSchemaAsync();
        await CreateRunsAsync(schema);
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: Limit);

        // The victim holds every permit, each for ten minutes.
        await using var victim = await StartLimiterAsync(schema, permitLimit: Limit, hold: TimeSpan.FromMinutes(10));
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node = {victim.Id}").Result == Limit, "the victim holds the whole limit");
        using var survivor = node.Queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = Limit, QueueLimit = Limit, Name = "survivor" });
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE node = 'survivor'").Result == 1, "the survivor joined");
        using (var none = survivor.AttemptAcquire(1))
        {
            Assert.False(none.IsAcquired);
        }

        var waiting = survivor.AcquireAsync(Limit).AsTask();
        Assert.False(waiting.IsCompleted);
        await victim.KillAsync();
        var killedAt = await ClusterLimitSql.NowAsync(postgres);

        using var lease = await waiting.WaitAsync(QueueNode.Patience);
        Assert.True(lease.IsAcquired);
        var grantedAt = await ClusterLimitSql.NowAsync(postgres);
        await postgres.ExecuteAsync($"""
            INSERT INTO {schema}.runs (item_id, number, key, node, attempt, started_at, ended_at) VALUES (-1, -1, 'survivor', 0, 0, '{grantedAt:O}', '{grantedAt.AddMilliseconds(1):O}'), (-2, -1, 'survivor', 0, 0, '{grantedAt:O}', '{grantedAt.AddMilliseconds(1):O}')
            """);
        var overlap = await ClusterLimitSql.MaxOverlapAsync(postgres, schema, openEnd: killedAt);
        Assert.True(overlap <= Limit, $"{overlap} leases held at once; MaxRunning is {Limit}.");
        Assert.True(grantedAt > killedAt);
    }

    [Fact]
    public async Task StartsPerSecond_TwoProcesses_LeasesGrantedInAnySpanStayWithinBurstPlusRate()
    {
        const double Rate = 10;
        const int Burst = 2;
        var schema = await postgres.NewSchemaAsync();
        await CreateRunsAsync(schema);
        await using (await QueueNode.StartProducerAsync(postgres.ConnectionString, schema))
        {
            await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: Rate, burst: Burst);
        }

        await using var a = await StartLimiterAsync(schema, permitLimit: 4, hold: TimeSpan.Zero);
        await using var b = await StartLimiterAsync(schema, permitLimit: 4, hold: TimeSpan.Zero);
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE node IN ({a.Id}, {b.Id})").Result >= 40, "40 leases granted");
        await a.KillAsync();
        await b.KillAsync();

        // Each lease spent a token when it was granted; the grant's time is recorded right after, on the machine's clock
        // (shared by both processes). In any one second, at most Burst + Rate; over the whole run, Burst + Rate × its span.
        var perSecond = await postgres.ScalarAsync<long>($"""
            SELECT max((SELECT count(*) FROM {schema}.runs o WHERE o.acquired_at >= r.acquired_at AND o.acquired_at < r.acquired_at + interval '1 second'))
            FROM {schema}.runs r
            """);
        Assert.True(perSecond <= Burst + Rate, $"{perSecond} leases granted within one second; the budget is {Burst} + {Rate}.");
        var count = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs");
        var span = await postgres.ScalarAsync<double>($"SELECT extract(epoch FROM max(acquired_at) - min(acquired_at))::double precision FROM {schema}.runs");
        Assert.True(count <= Burst + (Rate * span) + 1, $"{count} leases in {span:F2} s; the budget is {Burst} + {Rate} × span.");
        Assert.True(await postgres.ScalarAsync<long>($"SELECT count(DISTINCT node) FROM {schema}.runs") == 2);
    }

    private Task<ConsumerProcess> StartLimiterAsync(string schema, int permitLimit, TimeSpan hold) =>
        ConsumerProcess.StartAsync(postgres.ConnectionString, schema, permitLimit, hold, Lease, mode: "limiter");

    private async Task CreateRunsAsync(string schema)
    {
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        await postgres.ExecuteAsync($"ALTER TABLE {schema}.runs ADD COLUMN acquired_at timestamptz");
    }

    /// <summary>Records a run's start and end in <c>runs</c> around <paramref name="work"/> (the database's clock).</summary>
    private static void Record(NpgsqlDataSource data, string schema, long id, int number, int who, Action work)
    {
        using (var start = data.CreateCommand($"INSERT INTO {schema}.runs (item_id, number, node, attempt, started_at) VALUES ($1, $2, $3, 0, clock_timestamp())"))
        {
            start.Parameters.Add(new NpgsqlParameter<long> { TypedValue = id });
            start.Parameters.Add(new NpgsqlParameter<int> { TypedValue = number });
            start.Parameters.Add(new NpgsqlParameter<int> { TypedValue = who });
            start.ExecuteNonQuery();
        }

        work();
        using var end = data.CreateCommand($"UPDATE {schema}.runs SET ended_at = clock_timestamp() WHERE item_id = $1 AND node = $2 AND ended_at IS NULL");
        end.Parameters.Add(new NpgsqlParameter<long> { TypedValue = id });
        end.Parameters.Add(new NpgsqlParameter<int> { TypedValue = who });
        end.ExecuteNonQuery();
    }
}
