using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The per-tenant start rate of a fair queue (<see cref="WorkQueueFairShare.StartsPerSecondPerTenant"/>), against a
/// real server and two consumer nodes, watched by an independent witness: each handler inserts the instant it started
/// (its own clock, read first thing in the handler) into a table of the test.
/// </summary>
/// <remarks>
/// The bound checked: in every window [t, t + w] between two of a tenant's starts, its starts are at most
/// <c>B + R × (w + Slack)</c>. The library spends a token when it claims an item (the database's clock, the same
/// machine's clock as the handlers'), and under the rate a node claims no more items than it has idle workers, so each
/// item starts right after its claim; <see cref="Slack"/> allows for that hand-off (claim committed, item handed to an
/// idle worker, handler entered) on a loaded test machine. The clocks' resolution (a microsecond) is far below it.
/// </remarks>
[Collection(PostgresCollection.Name)]
public sealed class FairShareRateTests(PostgresFixture postgres)
{
    /// <summary>The claim-to-start allowance (see the remarks).</summary>
    private static readonly TimeSpan Slack = TimeSpan.FromMilliseconds(250);

    [Fact]
    public async Task Settings_AreStoredAndReadBack_AndHostileValuesAreRefusedNamingTheSetting()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(node);

        var fair = new WorkQueueFairShare { StartsPerSecondPerTenant = 2.5, StartsBurstPerTenant = 4 };
        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = fair }, "operator");
        var read = (await cluster.GetClusterAsync()).Settings.FairShare!;
        Assert.Equal(fair, read);
        Assert.Equal(fair.GetHashCode(), read.GetHashCode());
        Assert.Equal(2.5, read.StartsPerSecondPerTenant);
        Assert.Equal(4, read.StartsBurstPerTenant);
        Assert.NotEqual(fair, fair with { StartsPerSecondPerTenant = 3 });
        Assert.NotEqual(fair, fair with { StartsBurstPerTenant = null });
        Assert.Contains("StartsPerSecondPerTenant = 2.5, StartsBurstPerTenant = 4", read.ToString(), StringComparison.Ordinal);
        Assert.Contains("StartsPerSecondPerTenant = none, StartsBurstPerTenant = none", new WorkQueueFairShare().ToString(), StringComparison.Ordinal);

        async Task<string> Refused(WorkQueueFairShare bad) =>
            (await Assert.ThrowsAsync<ArgumentException>(() => cluster.UpdateSettingsAsync(s => s with { FairShare = bad }, "operator"))).Message;

        foreach (var rate in new[] { double.NaN, -1, 0, double.PositiveInfinity, double.NegativeInfinity })
        {
            Assert.Contains("FairShare.StartsPerSecondPerTenant", await Refused(new WorkQueueFairShare { StartsPerSecondPerTenant = rate }), StringComparison.Ordinal);
        }

        foreach (var burst in new[] { 0, -3, int.MinValue })
        {
            Assert.Contains("FairShare.StartsBurstPerTenant", await Refused(new WorkQueueFairShare { StartsPerSecondPerTenant = 1, StartsBurstPerTenant = burst }), StringComparison.Ordinal);
        }

        Assert.Equal(stored.Version, (await cluster.GetClusterAsync()).Settings.Version); // nothing refused was written
    }

    /// <summary>
    /// Without a per-tenant rate the fair claim is the one it was (no bucket read or written: the statement does not
    /// name the buckets' table), and a fair queue drained without one leaves that table empty; with one, the rated claim
    /// keeps one row per tenant whose items it claimed.
    /// </summary>
    [Fact]
    public async Task WithoutARate_TheFairClaimTouchesNoBucket_WithOneOnlyTheClaimedTenantsRowsAreWritten()
    {
        var fairSql = new FairClaimSql(new StorageSql("s"));
        Assert.DoesNotContain("tenant_tokens", fairSql.Claim, StringComparison.Ordinal);
        Assert.DoesNotContain("clock_timestamp", fairSql.Claim, StringComparison.Ordinal);
        Assert.Contains("tenant_tokens", fairSql.RatedClaim, StringComparison.Ordinal);

        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "consumer");
        var cluster = ClusterOf(producer);
        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare() }, "test");
        await WaitForNodesAsync(cluster, 1, stored.Version);
        await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 20).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "a" });
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 20, "the items ran");
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.tenant_tokens"));

        stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = s.FairShare! with { StartsPerSecondPerTenant = 1000 } }, "test");
        await WaitForNodesAsync(cluster, 1, stored.Version);
        await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 5).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "b" });
        await producer.Queue.EnqueueAsync(new Notice(99), new EnqueueOptions());
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 26, "the items ran");
        Assert.Equal("b", await postgres.ScalarAsync<string>($"SELECT string_agg(tenant, ',') FROM {schema}.tenant_tokens"));
    }

    /// <summary>
    /// Two nodes of four workers, two tenants flooding at once: "limited" at 2 starts per second with a burst of 1,
    /// "free" without a rate. While the first rate holds, every window of the limited tenant's starts obeys it, and the
    /// free tenant runs far above it (it is not slowed to the limited rate). Then the rate is raised at runtime to 40 per
    /// second with a burst of 3: the limited tenant's later starts exceed the old bound (the change took effect) and obey
    /// the new one.
    /// </summary>
    [Fact]
    public async Task StartsPerTenant_BoundEveryWindowAcrossTwoNodes_OtherTenantsAreNotSlowed_AndARuntimeChangeBinds()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await postgres.ExecuteAsync($"CREATE TABLE {schema}.tenant_starts (item bigint NOT NULL, tenant text NOT NULL, at timestamptz NOT NULL)");
        await using var witness = NpgsqlDataSource.Create(postgres.ConnectionString);
        var limitedStarts = 0;
        var behavior = new Behavior
        {
            Handle = (notice, context) =>
            {
                var at = DateTime.UtcNow; // first thing: the handler's start
                var tenant = notice.Number >= 1000 ? "limited" : "free";
                using var connection = witness.OpenConnection();
                using var insert = new NpgsqlCommand($"INSERT INTO {schema}.tenant_starts (item, tenant, at) VALUES ($1, $2, $3)", connection)
                {
                    Parameters =
                    {
                        new NpgsqlParameter<long> { TypedValue = context.ItemId },
                        new NpgsqlParameter<string> { TypedValue = tenant },
                        new NpgsqlParameter<DateTime> { TypedValue = at },
                    },
                };
                insert.ExecuteNonQuery();
                if (tenant == "limited")
                {
                    Interlocked.Increment(ref limitedStarts);
                }
            },
        };
        await using var a = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "a", executor: o => o.WorkerCount = 4);
        await using var b = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "b", executor: o => o.WorkerCount = 4);
        var cluster = ClusterOf(producer);
        var first = new WorkQueueFairShare { StartsPerSecondPerTenant = 2, StartsBurstPerTenant = 1 };
        var stored = await cluster.UpdateSettingsAsync(s => s with { FairShare = first }, "test");
        await WaitForNodesAsync(cluster, 2, stored.Version);

        // Both tenants backlogged from the first claim on.
        await using (var connection = new NpgsqlConnection(postgres.ConnectionString))
        {
            await connection.OpenAsync();
            await using var transaction = await connection.BeginTransactionAsync();
            await producer.Queue.EnqueueManyAsync(Enumerable.Range(1000, 40).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "limited" }, transaction);
            await producer.Queue.EnqueueManyAsync(Enumerable.Range(0, 300).Select(n => new Notice(n)), new EnqueueOptions { Tenant = "free" }, transaction);
            await transaction.CommitAsync();
        }

        await DurableQueueTests.WaitAsync(() => Volatile.Read(ref limitedStarts) >= 6, "six starts of the limited tenant under the first rate");
        var beforeChange = DateTime.UtcNow;
        await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { StartsPerSecondPerTenant = 40, StartsBurstPerTenant = 3 } }, "test");
        var changed = DateTime.UtcNow; // committed: every claim from now on is under the new rate
        await DurableQueueTests.WaitAsync(() => behavior.Deliveries.Count == 340, "every item ran");

        var starts = await ReadStartsAsync(witness, schema);
        var limited = starts.Where(s => s.Tenant == "limited").Select(s => s.At).ToList();
        var free = starts.Where(s => s.Tenant == "free").Select(s => s.At).ToList();
        Assert.Equal(40, limited.Count);
        Assert.Equal(300, free.Count);

        // Under the first rate: the starts before the change was sent.
        var firstPhase = limited.Where(t => t < beforeChange).ToList();
        Assert.True(firstPhase.Count >= 6, $"{firstPhase.Count} starts before the change");
        Assert.Null(Violation(firstPhase, 1, 2));

        // The free tenant is not held to that rate: some window of its starts is far beyond it.
        Assert.NotNull(Violation(free, 1 * 4, 2 * 4));

        // After the change: every window of the starts after it (plus the hand-off allowance) obeys the new rate, and the
        // old bound no longer holds (the new rate took effect).
        var secondPhase = limited.Where(t => t >= changed + Slack).ToList();
        Assert.True(secondPhase.Count >= 20, $"{secondPhase.Count} starts after the change");
        Assert.Null(Violation(secondPhase, 3, 40));
        Assert.NotNull(Violation(limited.Where(t => t >= beforeChange).ToList(), 1, 2));
    }

    /// <summary>The first window [t_i, t_j] of <paramref name="starts"/> holding more than B + R × (w + Slack) starts, or null.</summary>
    private static string? Violation(List<DateTime> starts, int burst, double rate)
    {
        starts.Sort();
        for (var i = 0; i < starts.Count; i++)
        {
            for (var j = i; j < starts.Count; j++)
            {
                var w = (starts[j] - starts[i]) + Slack;
                var count = j - i + 1;
                if (count > burst + (rate * w.TotalSeconds))
                {
                    return $"{count} starts in {(starts[j] - starts[i]).TotalMilliseconds:F1} ms from {starts[i]:O}, above {burst} + {rate}/s";
                }
            }
        }

        return null;
    }

    private static async Task<List<(string Tenant, DateTime At)>> ReadStartsAsync(NpgsqlDataSource source, string schema)
    {
        var starts = new List<(string, DateTime)>();
        await using var connection = await source.OpenConnectionAsync();
        await using var command = new NpgsqlCommand($"SELECT tenant, at FROM {schema}.tenant_starts ORDER BY at", connection);
        await using var reader = await command.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            starts.Add((reader.GetString(0), reader.GetDateTime(1)));
        }

        return starts;
    }

    private static IWorkQueueCluster ClusterOf(QueueNode node) => node.Host.Services.GetServices<IWorkQueueCluster>().Single();

    private static async Task WaitForNodesAsync(IWorkQueueCluster cluster, int consumers, long version) =>
        await DurableQueueTests.WaitAsync(
            () => cluster.GetClusterAsync().Result.Nodes.Count(n => n.WorkerCount > 0 && n.SettingsVersion == version) >= consumers,
            $"{consumers} nodes applied settings version {version}");
}
