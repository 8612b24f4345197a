using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using BoundedWork.Testing;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>A stored queue keeps flowing while the ThreadPool is starved: its loops run on threads of their own.</summary>
[Collection(PostgresCollection.Name)]
public sealed class StarvationTests(PostgresFixture postgres)
{
    /// <summary>
    /// A new connection's connect and handshake come before the switch that keeps its socket's I/O off the ThreadPool,
    /// so a connection opened while the pool is starved can time out. A node opens the connections its threads and two
    /// blocking producers use at once as it starts (not starved then): its threads' pool holds them, consumer or
    /// producer only, within the connection string's maximum pool size.
    /// </summary>
    [Theory]
    [InlineData(true, null)]
    [InlineData(false, null)]
    [InlineData(true, 4)]
    public async Task ANodeOpensItsThreadsConnections_AndTwoForBlockingProducers_AsItStarts(bool consume, int? maxPoolSize)
    {
        var schema = await postgres.NewSchemaAsync();
        var connectionString = maxPoolSize is int max
            ? new NpgsqlConnectionStringBuilder(postgres.ConnectionString) { MaxPoolSize = max }.ConnectionString
            : postgres.ConnectionString;
        await using var node = await QueueNode.StartAsync(connectionString, schema, new Behavior(), storage: o => o.Consume = consume);

        var pool = ((PostgreSqlWorkQueue<Notice>)node.Queue).ThreadsDataSource;
        var (total, _, _) = ((int Total, int Idle, int Busy))typeof(NpgsqlDataSource).GetProperty("Statistics", System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic)!.GetValue(pool)!;
        var expected = Math.Min(
            (consume ? PostgreSqlWorkQueue<Notice>.ConsumingThreadsUsingThePool : PostgreSqlWorkQueue<Notice>.ProducingThreadsUsingThePool) + PostgreSqlWorkQueue<Notice>.BlockingProducersWarmed,
            maxPoolSize ?? int.MaxValue);
        Assert.True(total >= expected, $"The threads' pool holds {total} connections after the start; {expected} expected.");
        Assert.True(total <= (maxPoolSize ?? int.MaxValue), $"The threads' pool holds {total} connections, above its maximum {maxPoolSize}.");

        // The counts the warm-up opens for are the node's threads that use that pool, as started (a loop added later
        // must be counted there too).
        var threads = ((PostgreSqlWorkQueue<Notice>)node.Queue).ThreadsUsingThePool;
        Assert.Equal(consume ? PostgreSqlWorkQueue<Notice>.ConsumingThreadsUsingThePool : PostgreSqlWorkQueue<Notice>.ProducingThreadsUsingThePool, threads.Count);
        Assert.Equal(threads.Count, threads.Distinct().Count());
    }

    [Fact]
    public async Task StarvedThreadPool_ItemsAreStillClaimedHandledAndRecorded()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);
        EnqueueAndHandleWhileStarved(node, behavior, schema, number => new Notice(number));
    }

    [Fact]
    public async Task StarvedThreadPool_PerKeyLimit_KeysAreHandedOffInTheOutcomesTransaction()
    {
        // The per-key limit is stored before the node starts, which reads it before its first claim.
        var schema = await postgres.NewSchemaAsync();
        await using (var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString))
        {
            await SchemaMigrator.MigrateAsync(dataSource, new StorageSql(schema), CancellationToken.None);
        }

        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: 2);
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.OrderingKey = n => n.Key);
        EnqueueAndHandleWhileStarved(node, behavior, schema, number => new Notice(number, "k" + (number % 2)));

        // The outcome writer's hand-off (two statements in one transaction) ran while the pool was starved.
        Assert.True(((PostgreSqlWorkQueue<Notice>)node.Queue).HandedOffCount > 0, "No item was handed off.");
    }

    [Fact]
    public async Task StarvedThreadPool_FairShare_ItemsAreStillClaimedHandledAndRecorded()
    {
        // Fair share is on before the node starts, which reads it before its first claim: every claim is a fair claim.
        var schema = await postgres.NewSchemaAsync();
        await using (var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema))
        {
            await producer.Host.Services.GetServices<IWorkQueueCluster>().Single()
                .UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare() }, "test");
        }

        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);
        EnqueueAndHandleWhileStarved(node, behavior, schema, number => new Notice(number));
        Assert.True(((PostgreSqlWorkQueue<Notice>)node.Queue).ClaimLoop.FairClaims > 0, "No fair claim ran.");
    }

    [Fact]
    public async Task StarvedThreadPool_ABacklog_OutcomesRideWithTheClaims()
    {
        // A backlog in the table before the node starts; its handlers wait at a gate, so its claims come back full.
        const int Items = 40;
        var schema = await postgres.NewSchemaAsync();
        await using (var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema))
        {
            for (var number = 0; number < Items; number++)
            {
                await producer.Queue.EnqueueAsync(new Notice(number));
            }
        }

        using var gate = new ManualResetEventSlim();
        using var started = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (_, _) =>
            {
                started.Set();
                gate.Wait(QueueNode.Patience);
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            storage: o => o.ClaimsPerWorker = 2, executor: o => o.WorkerCount = 1);
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        if (!started.Wait(QueueNode.Patience))
        {
            Assert.Fail("The first item did not start.");
        }

        // Starved from here on: the claim loop carries the outcomes (a transaction of its own) on its own thread.
        using (var starvation = ThreadPoolStarvation.Begin())
        {
            gate.Set();
            if (!SpinWait.SpinUntil(() => CountCompleted(schema) == Items, QueueNode.Patience))
            {
                Assert.Fail($"{CountCompleted(schema)} of {Items} outcomes were written. " + ThreadStacks.Capture());
            }

            Assert.True(starvation.IsStarved, "The pool was not starved the whole time: the probe ran.");
        }

        Assert.True(queue.ClaimLoop.CarriedClaims > 0, "No claim carried outcomes.");
        Assert.Equal(Items, behavior.Deliveries.Count);
    }

    private void EnqueueAndHandleWhileStarved(QueueNode node, Behavior behavior, string schema, Func<int, Notice> notice)
    {
        // (The node opened its threads' connections, and the producer's, as it started: see ANodeOpensItsThreadsConnections_….)
        using var starvation = ThreadPoolStarvation.Begin();

        // Blocking code enqueues synchronously, on a thread of its own.
        var enqueued = 0;
        var producer = new Thread(() =>
        {
            for (var i = 0; i < 20; i++)
            {
                if (node.Queue.TryEnqueue(notice(i)))
                {
                    Interlocked.Increment(ref enqueued);
                }
            }
        });
        producer.Start();
        if (!producer.Join(QueueNode.Patience))
        {
            Assert.Fail("The producer did not finish. " + ThreadStacks.Capture());
        }

        Assert.True(enqueued == 20, $"{enqueued} of 20 enqueued: " + string.Join("; ", behavior.DeadLetters.Select(letter => letter.Exception?.ToString())));

        // Nothing below awaits: the checks block this thread (whichever it is) and need no other pool thread. A check that
        // gives up reports every thread's stack, so that what waited for what can be read from the failure.
        if (!SpinWait.SpinUntil(() => behavior.Deliveries.Count == 20, QueueNode.Patience))
        {
            Assert.Fail($"{behavior.Deliveries.Count} of 20 items were handled. " + ThreadStacks.Capture());
        }

        if (!SpinWait.SpinUntil(() => CountCompleted(schema) == 20, QueueNode.Patience))
        {
            Assert.Fail("The outcomes were not written. " + ThreadStacks.Capture());
        }

        if (!SpinWait.SpinUntil(() => node.Storage.Statistics is { Completed: 20, IsAvailable: true }, QueueNode.Patience))
        {
            Assert.Fail("The statistics were not read. " + ThreadStacks.Capture());
        }

        Assert.True(starvation.IsStarved, "The pool was not starved the whole time: the probe ran.");
    }

    private long CountCompleted(string schema)
    {
        using var connection = new NpgsqlConnection(postgres.ConnectionString);
        connection.Open();
        using var command = new NpgsqlCommand($"SELECT count(*) FROM {schema}.items WHERE state = 2", connection);
        return (long)command.ExecuteScalar()!;
    }
}
