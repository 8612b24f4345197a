using System.Collections.Concurrent;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The per-tenant start rate of a fair queue (<see cref="WorkQueueFairShare.StartsPerSecondPerTenant"/> R,
/// <see cref="WorkQueueFairShare.StartsBurstPerTenant"/> B) under faults: a claim whose answer is lost after its commit,
/// and a PostgreSQL restart mid-run. Watched by an independent witness: each handler inserts its own start (the
/// database's clock) into a table of the test, and the assertions read that table only.
/// </summary>
/// <remarks>
/// The bound checked: the claims of a tenant are at most B + R × L in any span L of the database's clock (see
/// FairClaimSql). The test reads that clock (T0) before it enqueues the tenant's items, so the tenant's bucket is full at
/// T0 and each of its claims comes after T0; each start comes after its own claim (the handler's insert reads the same
/// clock later). So every claim behind a witnessed start lies in [T0, last start], and the starts (re-runs included: each
/// is a claim of its own) are at most B + R × (last − first + slack), the slack being first − T0, measured, not guessed.
/// A tenant whose bucket the fault reset or refilled beyond its clock would exceed it: the tenant is backlogged
/// throughout, so its claims run at the bound.
/// </remarks>
[Collection(PostgresCollection.Name)]
public sealed class TenantRateFaultTests(PostgresFixture postgres)
{
    /// <summary>
    /// A rated fair claim that took the tenant's items commits (its bucket spent) and its answer is lost: the node never
    /// reads the rows, they stay leased to it unheld, are reaped when the lease ends and claimed again (spending again).
    /// The tenant's starts, by the witness, stay within B + R × L, and every item runs.
    /// </summary>
    [Fact]
    public async Task RatedFairClaim_AnswerLostAfterCommit_TheTenantsStartsStayWithinTheBound_AndEveryItemRuns()
    {
        const int Burst = 4, Items = 24;
        const double Rate = 4;
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var witness = await StartWitness.CreateAsync(postgres, schema);
        var behavior = new Behavior { Handle = (_, context) => witness.Record(context.ItemId) };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer", executor: o => o.WorkerCount = 4);
        var cluster = ClusterOf(producer);
        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { StartsPerSecondPerTenant = Rate, StartsBurstPerTenant = Burst } }, "test");
        await WaitForNodesAsync(cluster, 1, stored.Version);

        // Once the burst has started (the bucket drained), the next claim that took rows loses its answer.
        var lostRows = 0;
        var queue = (PostgreSqlWorkQueue<Notice>)node.Queue;
        queue.ClaimLoop.AfterClaimCommit = rows =>
        {
            if (rows > 0 && witness.Started >= Burst && Interlocked.CompareExchange(ref lostRows, rows, 0) == 0)
            {
                throw new NpgsqlException("The answer to the claim's commit was lost (the test's fault).");
            }
        };

        var t0 = await postgres.ScalarAsync<DateTime>("SELECT clock_timestamp()");
        await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "m" });
        await DurableQueueTests.WaitAsync(() => witness.Distinct == Items, "every item started");
        queue.ClaimLoop.AfterClaimCommit = null;

        Assert.True(Volatile.Read(ref lostRows) > 0, "No claim's answer was lost.");
        var starts = await witness.ReadAsync();
        Assert.Equal(Items, starts.Items);
        AssertWithinBound(starts, t0, Burst, Rate);
    }

    /// <summary>
    /// PostgreSQL restarts (an immediate stop: the server crashes and recovers) while a rated tenant is backlogged and its
    /// bucket drained past its burst. The bucket is neither reset to full nor doubled: the tenant's starts, by the
    /// witness, stay within B + R × L over the whole run, the outage included (the tokens it earned meanwhile are its
    /// due), and every item runs. The handlers record their starts only while the server is up (a door the test closes
    /// before the restart, once every handler inside has recorded, and opens after).
    /// </summary>
    [Fact]
    public async Task ServerRestart_MidRun_DoesNotResetOrDoubleTheTenantsBucket_StartsStayWithinTheBound()
    {
        const int Burst = 8, Items = 24;
        const double Rate = 2;
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var witness = await StartWitness.CreateAsync(postgres, schema);
        var behavior = new Behavior { Handle = (_, context) => witness.Record(context.ItemId) };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            storage: o => o.LeaseDuration = TimeSpan.FromSeconds(30), executor: o => o.WorkerCount = 4); // no lease ends in the outage
        var cluster = ClusterOf(producer);
        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { StartsPerSecondPerTenant = Rate, StartsBurstPerTenant = Burst } }, "test");
        await WaitForNodesAsync(cluster, 1, stored.Version);

        var t0 = await postgres.ScalarAsync<DateTime>("SELECT clock_timestamp()");
        await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, Items).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "m" });
        await DurableQueueTests.WaitAsync(() => witness.Started >= Burst + 2, "the burst and two rated starts");

        await witness.CloseDoorAsync();
        await postgres.Server.RestartAsync();
        NpgsqlConnection.ClearAllPools(); // the test's own pooled connections died with the server
        witness.OpenDoor();
        await DurableQueueTests.WaitAsync(() => witness.Distinct == Items, "every item started");

        var starts = await witness.ReadAsync();
        Assert.Equal(Items, starts.Items);
        Assert.True(starts.Count > Burst + 2, $"only {starts.Count} starts: none after the restart");
        AssertWithinBound(starts, t0, Burst, Rate);
    }

    /// <summary>The starts are at most B + R × (L + slack): L from the first start to the last, the slack first − T0 (see the remarks).</summary>
    private static void AssertWithinBound((long Count, long Items, DateTime First, DateTime Last) starts, DateTime t0, int burst, double rate)
    {
        var span = (starts.Last - starts.First).TotalSeconds;
        var slack = (starts.First - t0).TotalSeconds;
        var allowed = burst + (rate * (span + slack));
        Assert.True(starts.Count <= allowed, $"{starts.Count} starts in {span:F3} s (first {slack:F3} s after T0): above {burst} + {rate}/s × {span + slack:F3} s = {allowed:F2}");
    }

    private static IWorkQueueCluster ClusterOf(QueueNode node) => node.Host.Services.GetServices<IWorkQueueCluster>().Single();

    private static async Task WaitForNodesAsync(IWorkQueueCluster cluster, int consumers, long version) =>
        await DurableQueueTests.WaitAsync(
            () => cluster.GetClusterAsync().Result.Nodes.Count(n => n.WorkerCount > 0 && n.SettingsVersion == version) >= consumers,
            $"{consumers} nodes applied settings version {version}");

    /// <summary>
    /// The test's own record of the handlers' starts: a table they insert into on their own connections (the database's
    /// clock), through a door the test can close (waiting for every handler inside to finish its insert) and open.
    /// </summary>
    private sealed class StartWitness : IAsyncDisposable
    {
        private const int DoorSlots = 64;
        private readonly NpgsqlDataSource _source;
        private readonly string _schema;
        private readonly SemaphoreSlim _door = new(DoorSlots, DoorSlots);
        private readonly ConcurrentDictionary<long, bool> _items = new();
        private int _started;

        private StartWitness(NpgsqlDataSource source, string schema)
        {
            _source = source;
            _schema = schema;
        }

        /// <summary>Gets how many starts were recorded.</summary>
        public int Started => Volatile.Read(ref _started);

        /// <summary>Gets how many items started at least once.</summary>
        public int Distinct => _items.Count;

        public static async Task<StartWitness> CreateAsync(PostgresFixture postgres, string schema)
        {
            await postgres.ExecuteAsync($"CREATE TABLE {schema}.rate_witness (seq bigserial PRIMARY KEY, item bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())");
            return new StartWitness(NpgsqlDataSource.Create(postgres.ConnectionString), schema);
        }

        /// <summary>Records a start of <paramref name="item"/> (committed before this returns), once the door is open.</summary>
        public void Record(long item)
        {
            Assert.True(_door.Wait(QueueNode.Patience), "The witness's door stayed closed.");
            try
            {
                using var connection = _source.OpenConnection();
                using var command = new NpgsqlCommand($"INSERT INTO {_schema}.rate_witness (item) VALUES ($1)", connection)
                {
                    Parameters = { new NpgsqlParameter<long> { TypedValue = item } },
                };
                command.ExecuteNonQuery();
            }
            finally
            {
                _door.Release();
            }

            _items[item] = true;
            Interlocked.Increment(ref _started);
        }

        /// <summary>Closes the door: returns once every handler inside has recorded; later ones wait.</summary>
        public async Task CloseDoorAsync()
        {
            for (var i = 0; i < DoorSlots; i++)
            {
                Assert.True(await _door.WaitAsync(QueueNode.Patience), "A handler never left the witness's door.");
            }
        }

        /// <summary>Opens the door after a restart: the pooled connections died with the server.</summary>
        public void OpenDoor()
        {
            _source.Clear();
            _door.Release(DoorSlots);
        }

        /// <summary>The starts recorded: how many, of how many items, the first and the last (the database's clock).</summary>
        public async Task<(long Count, long Items, DateTime First, DateTime Last)> ReadAsync()
        {
            await using var connection = await _source.OpenConnectionAsync();
            await using var command = new NpgsqlCommand($"SELECT count(*), count(DISTINCT item), min(at), max(at) FROM {_schema}.rate_witness", connection);
            await using var reader = await command.ExecuteReaderAsync();
            Assert.True(await reader.ReadAsync());
            return (reader.GetInt64(0), reader.GetInt64(1), reader.GetDateTime(2), reader.GetDateTime(3));
        }

        public async ValueTask DisposeAsync()
        {
            await _source.DisposeAsync();
            _door.Dispose();
        }
    }
}
