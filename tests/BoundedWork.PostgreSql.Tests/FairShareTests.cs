using System.Collections.Concurrent;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Fair share across tenants on the durable queue, against a real server: the tenant an item carries (stored, searched,
/// validated), the fleet-wide settings (changed at runtime, refused when bad), and the fair claim watched by an
/// independent witness: each handler inserts its own start and end rows (the database's clock) into a table of the
/// test, so shares, waits and overlaps are read from what ran, not from the library's own counts.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class FairShareTests(PostgresFixture postgres)
{
    [Fact]
    public async Task Tenant_IsStoredWithTheItem_AndShownByTheSearch_ForOneItemAndABulkEnqueue()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        var one = await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Tenant = "acme" });
        var keyed = await node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { Tenant = "globex", IdempotencyKey = "k-2" });
        var many = await node.Queue.EnqueueManyAsync([new Notice(3), new Notice(4)], new EnqueueOptions { Tenant = "商店 ☕" });
        var none = await node.Queue.EnqueueAsync(new Notice(5), new EnqueueOptions());

        Assert.Equal("acme globex 商店 ☕ 商店 ☕ -", await postgres.ScalarAsync<string>(
            $"SELECT string_agg(coalesce(tenant, '-'), ' ' ORDER BY id) FROM {schema}.items"));
        var page = await node.Queue.SearchItemsAsync(new StoredItemQuery { State = StoredItemState.Ready, Limit = 10 });
        var tenants = page.Items.ToDictionary(i => i.ItemId, i => i.Tenant);
        Assert.Equal("acme", tenants[one.ItemId]);
        Assert.Equal("globex", tenants[keyed.ItemId]);
        Assert.Equal("商店 ☕", tenants[many[0]]);
        Assert.Equal("商店 ☕", tenants[many[1]]);
        Assert.Null(tenants[none.ItemId]);
    }

    [Theory]
    [InlineData("")]
    [InlineData("a\u0000b")]
    [InlineData("tab\there")]
    [InlineData("surrogate")]
    [InlineData("x101")]
    public async Task Tenant_Invalid_IsRefusedBeforeAnythingIsStored_TheErrorNamingTheField(string tenant)
    {
        tenant = tenant switch
        {
            "x101" => new string('x', EnqueueOptions.MaxTenantLength + 1),
            "surrogate" => "\ud800lone", // a lone surrogate: PostgreSQL text cannot store it (built here: test data does not keep it)
            _ => tenant,
        };
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        var single = await Assert.ThrowsAsync<ArgumentException>(() => node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Tenant = tenant }));
        var bulk = await Assert.ThrowsAsync<ArgumentException>(() => node.Queue.EnqueueManyAsync([new Notice(2)], new EnqueueOptions { Tenant = tenant }));

        Assert.Contains("EnqueueOptions.Tenant", single.Message, StringComparison.Ordinal);
        Assert.Contains("EnqueueOptions.Tenant", bulk.Message, StringComparison.Ordinal);
        Assert.Equal("options", single.ParamName);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
    }

    [Fact]
    public async Task Settings_AreStoredVersioned_ReadBack_AndBadOnesAreRefusedNamingTheSetting()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(node);

        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { DefaultWeight = 2, MaxRunningPerTenant = 3 }.WithWeight("acme", 5) }, "operator");
        var read = (await cluster.GetClusterAsync()).Settings;

        Assert.Equal(1, stored.Version);
        Assert.Equal(stored.FairShare, read.FairShare);
        Assert.Equal(5, read.FairShare!.GetWeight("acme"));
        Assert.Equal(2, read.FairShare.GetWeight("other"));
        Assert.Equal(3, read.FairShare.MaxRunningPerTenant);
        var again = await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { DefaultWeight = 2, MaxRunningPerTenant = 3 }.WithWeight("acme", 5) }, "operator");
        Assert.Equal(1, again.Version); // the same weights by value: no change, no new version

        async Task<string> Refused(WorkQueueFairShare fair, int perKey = 1) =>
            (await Assert.ThrowsAsync<ArgumentException>(() => cluster.UpdateSettingsAsync(s => s with { FairShare = fair, MaxRunningPerKey = perKey }, "operator"))).Message;

        Assert.Contains("FairShare.DefaultWeight", await Refused(new WorkQueueFairShare { DefaultWeight = 0 }), StringComparison.Ordinal);
        Assert.Contains("FairShare.Weights['acme']", await Refused(new WorkQueueFairShare().WithWeight("acme", 1001)), StringComparison.Ordinal);
        Assert.Contains("FairShare.Weights", await Refused(new WorkQueueFairShare().WithWeight("a\tb", 2)), StringComparison.Ordinal);
        Assert.Contains("FairShare.MaxRunningPerTenant", await Refused(new WorkQueueFairShare { MaxRunningPerTenant = 0 }), StringComparison.Ordinal);
        Assert.Contains("MaxRunningPerKey", await Refused(new WorkQueueFairShare(), perKey: 2), StringComparison.Ordinal);
        Assert.Equal(1, (await cluster.GetClusterAsync()).Settings.Version); // nothing refused was written

        var off = await cluster.UpdateSettingsAsync(s => s with { FairShare = null }, "operator");
        Assert.Null(off.FairShare);
        Assert.Null((await cluster.GetClusterAsync()).Settings.FairShare);
    }

    /// <summary>
    /// The node holds two items of a flooding tenant (both handlers blocked) and 200 more wait; a quiet tenant's item
    /// is enqueued; one flood handler ends. With fair share on, the very next start is the quiet item (the claim that
    /// follows the flood's end takes it: its tenant runs nothing). With fair share off, the next start is the flood's
    /// next item, in the global order: the control, showing the test tells the two apart.
    /// </summary>
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task FloodingTenant_DoesNotDelayAQuietTenantsItem_BeyondTheNextClaim(bool fair)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var witness = await Witness.CreateAsync(postgres, schema);
        if (fair)
        {
            await ClusterOf(producer).UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare() }, "test");
        }

        using var flood = await GatedFlood.EnqueueAsync(producer, witness);
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, flood.Behavior, node: "consumer",
            storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 2);
        await DurableQueueTests.WaitAsync(() => witness.Count("start") == 2, "two flood items started");

        var quiet = (await producer.Queue.EnqueueAsync(new Notice(-1), new EnqueueOptions { Tenant = "quiet" })).ItemId;
        flood.Gate.Release(1);
        await DurableQueueTests.WaitAsync(() => witness.Count("start") >= 3, "a third item started"); // (the quiet one ends at once: a fourth may follow)
        var third = await witness.StartsAsync();

        if (fair)
        {
            Assert.Equal(quiet, third[2].Item);
            Assert.Equal("quiet", third[2].Tenant);
        }
        else
        {
            Assert.Equal("flood", third[2].Tenant);
        }

        flood.Gate.Release(1000);
        await DurableQueueTests.WaitAsync(() => witness.Count("end") == 203, "every item ran");
    }

    /// <summary>
    /// Under fair share a node claims for its idle workers only, whatever its <c>ClaimsPerWorker</c>: a node of two
    /// workers and four claims per worker, a flooding tenant's backlog of 202 items, both handlers blocked. The node
    /// holds (rows in state running leased to it) no more than its two busy workers, not eight; a quiet tenant's item
    /// enqueued while both are busy is the next to start when one frees, not an item of the flood the node claimed ahead.
    /// </summary>
    [Fact]
    public async Task UnderFairShare_ANodeClaimsForItsIdleWorkersOnly_SoAQuietItemIsNotQueuedBehindItemsClaimedAhead()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var witness = await Witness.CreateAsync(postgres, schema);
        await ClusterOf(producer).UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare() }, "test");

        using var flood = await GatedFlood.EnqueueAsync(producer, witness);
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, flood.Behavior, node: "consumer",
            storage: o => o.ClaimsPerWorker = 4, executor: o => o.WorkerCount = 2);
        var owner = ((PostgreSqlWorkQueue<Notice>)node.Queue).NodeId;
        await DurableQueueTests.WaitAsync(() => witness.Count("start") == 2, "two flood items started");

        Assert.Equal(2L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1 AND lease_owner = '{owner}'"));

        var quiet = (await producer.Queue.EnqueueAsync(new Notice(-1), new EnqueueOptions { Tenant = "quiet" })).ItemId;
        flood.Gate.Release(1);
        await DurableQueueTests.WaitAsync(() => witness.Count("start") >= 3, "a third item started");
        var third = (await witness.StartsAsync())[2];
        Assert.Equal((quiet, "quiet"), (third.Item, third.Tenant));

        flood.Gate.Release(1000);
        await DurableQueueTests.WaitAsync(() => witness.Count("end") == 203, "every item ran");
    }

    /// <summary>
    /// Two consumer nodes in this process (two workers each, one claim per worker: four items held at once) drain two
    /// backlogged tenants of weights 3 and 1; settings turned on while the nodes run, and applied by both. While both
    /// tenants have a backlog, the heavy one's share of the starts stays within 0.1 of 3/4 (the order keeps each
    /// tenant's running items at its weight's share of what the fleet holds, here 3 and 1).
    /// </summary>
    [Fact]
    public async Task SharesFollowWeights_WhileBothTenantsAreBacklogged_AcrossTwoNodes()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var witness = await Witness.CreateAsync(postgres, schema);
        var behavior = new Behavior
        {
            Handle = (_, context) =>
            {
                witness.Record(context.ItemId, "start");
                Thread.Sleep(5); // the work: an item holds its worker a little while
                witness.Record(context.ItemId, "end");
            },
        };
        await using var a = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "a", storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 2);
        await using var b = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "b", storage: o => o.ClaimsPerWorker = 1, executor: o => o.WorkerCount = 2);
        var cluster = ClusterOf(producer);
        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare().WithWeight("heavy", 3) }, "test");
        await WaitForNodesAsync(cluster, 2, stored.Version);

        // Enqueued together in one transaction: both tenants backlogged from the first claim on.
        await using (var connection = new NpgsqlConnection(postgres.ConnectionString))
        {
            await connection.OpenAsync();
            await using var transaction = await connection.BeginTransactionAsync();
            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 200).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "light" }, transaction);
            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 300).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "heavy" }, transaction);
            await transaction.CommitAsync();
        }

        await DurableQueueTests.WaitAsync(() => witness.Count("end") == 500, "every item ran");
        var starts = await witness.StartsAsync();

        // Both backlogged until one tenant's last item started: take the starts before the first such last start.
        var lastHeavy = starts.FindLastIndex(s => s.Tenant == "heavy");
        var lastLight = starts.FindLastIndex(s => s.Tenant == "light");
        var window = starts.Take(Math.Min(lastHeavy, lastLight)).ToList();
        var heavyShare = window.Count(s => s.Tenant == "heavy") / (double)window.Count;
        Assert.True(window.Count >= 200, $"only {window.Count} starts while both were backlogged");
        Assert.InRange(heavyShare, 0.65, 0.85);
    }

    /// <summary>
    /// Two nodes of four workers each and a bound of two running items per tenant, turned on at runtime: three tenants
    /// of 30 items each. The witness's intervals (handler start to end, on the database's clock) never overlap more than
    /// twice for one tenant, while the fleet as a whole ran more than two at once (the workers were not the bound).
    /// </summary>
    [Fact]
    public async Task MaxRunningPerTenant_IsNeverExceededAcrossTwoNodes_AsTheWitnessSeesIt()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var witness = await Witness.CreateAsync(postgres, schema);
        var behavior = new Behavior
        {
            Handle = (notice, context) =>
            {
                witness.Record(context.ItemId, "start");
                Thread.Sleep(1 + (notice.Number % 4)); // the work
                witness.Record(context.ItemId, "end");
            },
        };
        await using var a = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "a", executor: o => o.WorkerCount = 4);
        await using var b = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "b", executor: o => o.WorkerCount = 4);
        var cluster = ClusterOf(producer);
        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { MaxRunningPerTenant = 2 } }, "test");
        await WaitForNodesAsync(cluster, 2, stored.Version);

        foreach (var tenant in new[] { "t0", "t1", "t2" })
        {
            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 30).Select(n => new Notice(n)), new EnqueueOptions { Tenant = tenant });
        }

        await DurableQueueTests.WaitAsync(() => witness.Count("end") == 90, "every item ran");
        var overlaps = await witness.MaxOverlapAsync();
        Assert.All(overlaps.PerTenant, o => Assert.True(o.Value <= 2, $"tenant {o.Key} ran {o.Value} at once"));
        Assert.Contains(overlaps.PerTenant, o => o.Value == 2);
        Assert.True(overlaps.Total > 2, $"the fleet never ran more than {overlaps.Total} at once");
    }

    /// <summary>
    /// A dead node's items of a tenant count against its bound until their lease expires and a live node reaps them:
    /// two running rows of tenant t owned by a node that is gone (lease ending a moment later), a bound of 2. Another
    /// tenant's item runs at once; t's ready item starts only after the dead node's leases ended (the database's clock).
    /// </summary>
    [Fact]
    public async Task DeadNodesItems_CountAgainstTheTenantsBound_UntilTheirLeaseExpires()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var witness = await Witness.CreateAsync(postgres, schema);
        await ClusterOf(producer).UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { MaxRunningPerTenant = 2 } }, "test");
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, state, attempts, lease_owner, lease_until, tenant)
            SELECT 'notices', '{"Number": 100}', 1, 1, 'a dead node', now() + interval '2 seconds', 't' FROM generate_series(1, 2);
            """);
        var leaseEnd = await postgres.ScalarAsync<DateTime>($"SELECT max(lease_until) FROM {schema}.items");
        var waiting = (await producer.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { Tenant = "t" })).ItemId;
        var other = (await producer.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { Tenant = "u" })).ItemId;
        var started = new ConcurrentDictionary<long, bool>();
        var behavior = new Behavior
        {
            Handle = (_, context) =>
            {
                witness.Record(context.ItemId, "start");
                started[context.ItemId] = true;
            },
        };

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "live");
        await DurableQueueTests.WaitAsync(() => started.ContainsKey(waiting) && started.ContainsKey(other), "both tenants' items ran");

        var waitingStart = await postgres.ScalarAsync<DateTime>($"SELECT at FROM {schema}.witness WHERE item = {waiting} AND event = 'start'");
        Assert.True(waitingStart >= leaseEnd, $"t's item started at {waitingStart:O}, before the dead node's leases ended at {leaseEnd:O}");
    }

    /// <summary>
    /// A fair queue with a paused ordering key: two tenants, each with items of the paused key first in its lane, items of
    /// another key and items without one. While the key is paused none of its items starts (the witness), the others all
    /// run; once resumed, its items start, every one after the resume (the database's clock), one at a time in order.
    /// </summary>
    [Fact]
    public async Task PausedKey_UnderTheFairClaim_NoneOfItsItemsStartUntilResumed_OthersFlow()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true);
        await using var witness = await Witness.CreateAsync(postgres, schema);
        await ClusterOf(producer).UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { MaxRunningPerTenant = 2 } }, "test");
        var control = (IWorkQueuePauseControl)producer.Storage;
        await control.PauseAsync("under review", Timeout.InfiniteTimeSpan, "ops", key: "hold");
        foreach (var tenant in new[] { "t0", "t1" })
        {
            var offset = tenant == "t0" ? 0 : 100;
            var items = Enumerable.Range(0, 5).Select(n => new Notice(offset + n, "hold"))
                .Concat(Enumerable.Range(5, 15).Select(n => new Notice(offset + n, n % 2 == 0 ? "a" + tenant : null)));
            await producer.Queue.EnqueueManyAsync(items, new EnqueueOptions { Tenant = tenant });
        }

        var behavior = new Behavior
        {
            Handle = (_, context) =>
            {
                witness.Record(context.ItemId, "start");
                witness.Record(context.ItemId, "end");
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer",
            queue: o => o.OrderingKey = n => n.Key, executor: o => o.WorkerCount = 4);
        await DurableQueueTests.WaitAsync(() => witness.Count("end") == 30, "every item of the other keys and every unkeyed item ran");

        var held = $"SELECT count(*) FROM {schema}.witness w JOIN {schema}.items i ON i.id = w.item WHERE i.ordering_key = 'hold'";
        Assert.Equal(0L, await postgres.ScalarAsync<long>(held));
        Assert.Equal(10L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE ordering_key = 'hold' AND state = 0 AND attempts = 0"));

        var beforeResume = await postgres.ScalarAsync<DateTime>("SELECT clock_timestamp()");
        Assert.NotNull(await control.ResumeAsync("ops", key: "hold"));
        await DurableQueueTests.WaitAsync(() => witness.Count("end") == 40, "the resumed key's items ran");

        Assert.Equal(10L, await postgres.ScalarAsync<long>(held + " AND w.event = 'start'"));
        Assert.Equal(0L, await postgres.ScalarAsync<long>(held + $" AND w.event = 'start' AND w.at < '{beforeResume:O}'::timestamptz"));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"""
            SELECT count(*) FROM {schema}.witness a JOIN {schema}.witness b ON b.item > a.item AND b.event = 'start' AND a.event = 'start'
            JOIN {schema}.items i ON i.id = a.item JOIN {schema}.items j ON j.id = b.item
            WHERE i.ordering_key = 'hold' AND j.ordering_key = 'hold' AND b.seq < a.seq
            """)); // the key's items started in enqueue order
    }

    private static IWorkQueueCluster ClusterOf(QueueNode node) => node.Host.Services.GetServices<IWorkQueueCluster>().Single();

    private static async Task WaitForNodesAsync(IWorkQueueCluster cluster, int consumers, long version) =>
        await DurableQueueTests.WaitAsync(
            () => cluster.GetClusterAsync().Result.Nodes.Count(n => n.WorkerCount > 0 && n.SettingsVersion == version) >= consumers,
            $"{consumers} nodes applied settings version {version}");

    /// <summary>
    /// A flooding tenant held at a gate: 202 items of tenant "flood" enqueued, and a behavior whose handlers record their
    /// start and end with the witness and hold each flood item (number 0 and up) until <see cref="Gate"/> lets it go; an
    /// item of a negative number (the quiet tenant's) runs at once.
    /// </summary>
    private sealed class GatedFlood : IDisposable
    {
        private GatedFlood(Witness witness)
        {
            Behavior = new Behavior
            {
                Handle = (notice, context) =>
                {
                    witness.Record(context.ItemId, "start");
                    if (notice.Number >= 0)
                    {
                        Gate.Wait(QueueNode.Patience);
                    }

                    witness.Record(context.ItemId, "end");
                },
            };
        }

        public SemaphoreSlim Gate { get; } = new(0);

        public Behavior Behavior { get; }

        public static async Task<GatedFlood> EnqueueAsync(QueueNode producer, Witness witness)
        {
            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 202).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "flood" });
            return new GatedFlood(witness);
        }

        public void Dispose() => Gate.Dispose();
    }

    /// <summary>The test's own record of what ran: a table the handlers write, on their own connections.</summary>
    private sealed class Witness : IAsyncDisposable
    {
        private readonly NpgsqlDataSource _source;
        private readonly string _schema;
        private readonly ConcurrentDictionary<string, int> _counts = new();

        private Witness(NpgsqlDataSource source, string schema)
        {
            _source = source;
            _schema = schema;
        }

        public static async Task<Witness> CreateAsync(PostgresFixture postgres, string schema)
        {
            await postgres.ExecuteAsync($"CREATE TABLE {schema}.witness (seq bigserial PRIMARY KEY, item bigint NOT NULL, tenant text, event text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())");
            return new Witness(NpgsqlDataSource.Create(postgres.ConnectionString), schema);
        }

        /// <summary>Records an event of item <paramref name="item"/> with the tenant its row holds (committed before this returns).</summary>
        public void Record(long item, string what)
        {
            using var connection = _source.OpenConnection();
            using var command = new NpgsqlCommand($"INSERT INTO {_schema}.witness (item, tenant, event) SELECT $1, (SELECT tenant FROM {_schema}.items WHERE id = $1), $2", connection)
            {
                Parameters = { new NpgsqlParameter<long> { TypedValue = item }, new NpgsqlParameter<string> { TypedValue = what } },
            };
            command.ExecuteNonQuery();
            _counts.AddOrUpdate(what, 1, (_, n) => n + 1);
        }

        public int Count(string what) => _counts.TryGetValue(what, out var n) ? n : 0;

        /// <summary>The starts in the order they were recorded.</summary>
        public async Task<List<(long Item, string? Tenant)>> StartsAsync()
        {
            var starts = new List<(long, string?)>();
            await using var connection = await _source.OpenConnectionAsync();
            await using var command = new NpgsqlCommand($"SELECT item, tenant FROM {_schema}.witness WHERE event = 'start' ORDER BY at, seq", connection);
            await using var reader = await command.ExecuteReaderAsync();
            while (await reader.ReadAsync())
            {
                starts.Add((reader.GetInt64(0), reader.IsDBNull(1) ? null : reader.GetString(1)));
            }

            return starts;
        }

        /// <summary>The most handlers of one tenant, and of all, running at once: a sweep of the intervals, an end before a start at the same instant.</summary>
        public async Task<(Dictionary<string, int> PerTenant, int Total)> MaxOverlapAsync()
        {
            var events = new List<(DateTime At, int Delta, string Tenant)>();
            await using var connection = await _source.OpenConnectionAsync();
            await using var command = new NpgsqlCommand($"SELECT at, event, coalesce(tenant, '-') FROM {_schema}.witness", connection);
            await using var reader = await command.ExecuteReaderAsync();
            while (await reader.ReadAsync())
            {
                events.Add((reader.GetDateTime(0), reader.GetString(1) == "start" ? 1 : -1, reader.GetString(2)));
            }

            var perTenant = new Dictionary<string, int>();
            var now = new Dictionary<string, int>();
            int total = 0, maxTotal = 0;
            foreach (var (_, delta, tenant) in events.OrderBy(e => e.At).ThenBy(e => e.Delta))
            {
                now[tenant] = now.GetValueOrDefault(tenant) + delta;
                perTenant[tenant] = Math.Max(perTenant.GetValueOrDefault(tenant), now[tenant]);
                total += delta;
                maxTotal = Math.Max(maxTotal, total);
            }

            return (perTenant, maxTotal);
        }

        public async ValueTask DisposeAsync() => await _source.DisposeAsync();
    }
}
