using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Text.Json;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The per-tenant statistics of a durable queue against a real server: each tenant's ready and running items read with
/// the statistics (on demand and by the node's background read), the busiest first and the rest counted together past
/// the series limit, published as a gauge per tenant, and the ready items read through the partial tenant index only.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class TenantStatisticsTests(PostgresFixture postgres)
{
    [Fact]
    public async Task Statistics_CountEachTenantsReadyAndRunningItems_BusiestFirst_TheRestTogether_AndPublishAGaugePerTenant()
    {
        var schema = await postgres.NewSchemaAsync();
        // Tenants unique to the test: the meter is the process's, shared with the other tests' queues.
        string T(string name) => $"{schema}-{name}";
        var gauge = new ConcurrentDictionary<(string Tenant, string State), long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "BoundedWork.PostgreSql" && instrument.Name == "boundedwork.storage.tenant.items")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            string? tenant = null, state = null;
            foreach (var tag in tags)
            {
                (tenant, state) = tag.Key switch
                {
                    "boundedwork.tenant" => ((string?)tag.Value, state),
                    "boundedwork.storage.state" => (tenant, (string?)tag.Value),
                    _ => (tenant, state),
                };
            }

            if (tenant is not null && state is not null && (tenant.StartsWith(schema, StringComparison.Ordinal) || tenant == BoundedWork.TenantStatistics.OtherTenants))
            {
                gauge[(tenant, state)] = value;
            }
        });
        listener.Start();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), storage: static o =>
        {
            o.Consume = false;
            o.TenantSeriesLimit = 2;
        });

        foreach (var (tenant, count) in new[] { ("acme", 5), ("globex", 4), ("initech", 2), ("umbrella", 1) })
        {
            await node.Queue.EnqueueManyAsync([.. Enumerable.Range(0, count).Select(i => new Notice(i))], new EnqueueOptions { Tenant = T(tenant) });
        }

        await node.Queue.EnqueueManyAsync([new Notice(1), new Notice(2)], new EnqueueOptions()); // no tenant: not counted per tenant
        await node.Queue.EnqueueAsync(new Notice(3), new EnqueueOptions { Tenant = T("acme"), Delay = TimeSpan.FromHours(1) }); // scheduled: not ready
        // Two of globex's items claimed by some node (as a claim leaves them): running, not ready.
        await postgres.ScalarAsync<long>($"""
            WITH c AS (UPDATE {schema}.items SET state = 1, lease_owner = 'elsewhere', lease_until = now() + interval '1 hour'
                       WHERE id IN (SELECT id FROM {schema}.items WHERE tenant = '{T("globex")}' ORDER BY id LIMIT 2) RETURNING 1)
            SELECT count(*) FROM c
            """);

        var read = await node.Queue.ReadStatisticsAsync();

        WorkQueueTenantStatistics[] expected =
        [
            new() { Tenant = T("acme"), Ready = 5, Running = 0 },
            new() { Tenant = T("globex"), Ready = 2, Running = 2 },
            new() { Tenant = BoundedWork.TenantStatistics.OtherTenants, Ready = 3, Running = 0 },
        ];
        Assert.Equal(expected, read.Tenants);
        Assert.Equal((12L, 2L), (read.Ready, read.Running)); // the queue's own counts hold the items without a tenant too

        // The node's background read (every StatisticsInterval) carries them, and the gauge publishes them.
        await DurableQueueTests.WaitAsync(() => node.Storage.Statistics.Tenants.SequenceEqual(expected), "the background read counts the tenants");
        listener.RecordObservableInstruments();
        Assert.Equal(5, gauge[(T("acme"), "ready")]);
        Assert.Equal(0, gauge[(T("acme"), "running")]);
        Assert.Equal(2, gauge[(T("globex"), "running")]);
        Assert.False(gauge.ContainsKey((T("initech"), "ready"))); // past the series limit: counted in "(other)"
        Assert.False(gauge.ContainsKey((T("umbrella"), "ready")));
    }

    [Fact]
    public async Task Statistics_AQueueWithoutTenants_HasNoTenantRows_AndALimitOfZeroCountsEveryTenantTogether()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), storage: static o =>
        {
            o.Consume = false;
            o.TenantSeriesLimit = 0;
        });

        await node.Queue.EnqueueManyAsync([new Notice(1), new Notice(2)], new EnqueueOptions());
        Assert.Empty((await node.Queue.ReadStatisticsAsync()).Tenants);

        await node.Queue.EnqueueAsync(new Notice(3), new EnqueueOptions { Tenant = "acme" });
        await node.Queue.EnqueueAsync(new Notice(4), new EnqueueOptions { Tenant = "globex" });
        var only = Assert.Single((await node.Queue.ReadStatisticsAsync()).Tenants);
        Assert.Equal(new WorkQueueTenantStatistics { Tenant = BoundedWork.TenantStatistics.OtherTenants, Ready = 2 }, only);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(1001)]
    public void Options_TenantSeriesLimitOutOfRange_IsRefusedNamingIt(int limit)
    {
        var options = new PostgreSqlWorkQueueOptions<Notice> { TenantSeriesLimit = limit };

        Assert.Contains(options.GetValidationErrors(), e => e.StartsWith($"TenantSeriesLimit must be between 0 and 1000 (was {limit})", StringComparison.Ordinal));
    }

    [Fact]
    public async Task TenantStatistics_ReadsThePartialTenantIndex_OneEntryPerReadyTenantItem()
    {
        var schema = await postgres.NewSchemaAsync();
        await using (var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema))
        {
            // Many items without a tenant and a few with: the read must not visit the former.
            await node.Queue.EnqueueManyAsync([.. Enumerable.Range(0, 2000).Select(i => new Notice(i))], new EnqueueOptions());
            await node.Queue.EnqueueManyAsync([.. Enumerable.Range(0, 30).Select(i => new Notice(i))], new EnqueueOptions { Tenant = "acme" });
            await node.Queue.EnqueueManyAsync([.. Enumerable.Range(0, 20).Select(i => new Notice(i))], new EnqueueOptions { Tenant = "globex" });
        }

        await postgres.ExecuteAsync($"ANALYZE {schema}.items");
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using (var settings = new NpgsqlCommand("SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan; SET jit = off", connection))
        {
            await settings.ExecuteNonQueryAsync();
        }

        await using var command = new ItemStatements(new StorageSql(schema)).TenantStatistics.Command(connection, "notices", 20);
        command.CommandText = "EXPLAIN (ANALYZE, FORMAT JSON) " + command.CommandText;
        var plan = (string)(await command.ExecuteScalarAsync())!;
        using var document = JsonDocument.Parse(plan);
        var scans = new List<(string Type, string? Index, double Rows)>();
        Collect(document.RootElement[0].GetProperty("Plan"), scans);

        Assert.DoesNotContain(scans, s => s.Type.Contains("Seq Scan", StringComparison.Ordinal));
        Assert.True(scans.Any(s => s.Index == "items_ready_tenant"), plan);
        // The running items are read through an index of running items only (few: no more than the fleet's workers).
        Assert.Contains(scans, s => s.Index is "items_running_tenant" or "items_running");
        Assert.True(scans.Sum(s => s.Rows) <= 50, plan); // the tenant items, not the 2,000 without a tenant
    }

    [Fact]
    public async Task Outcomes_AreCountedPerTenantOnTheNode_CompletedFailedDeadLettered_AsACounterPerTenant()
    {
        var schema = await postgres.NewSchemaAsync();
        string T(string name) => $"{schema}-{name}";
        var counted = new ConcurrentDictionary<(string Tenant, string Outcome), long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "BoundedWork.PostgreSql" && instrument.Name == "boundedwork.storage.tenant.outcomes")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            string? tenant = null, outcome = null;
            foreach (var tag in tags)
            {
                (tenant, outcome) = tag.Key switch
                {
                    "boundedwork.tenant" => ((string?)tag.Value, outcome),
                    "boundedwork.outcome" => (tenant, (string?)tag.Value),
                    _ => (tenant, outcome),
                };
            }

            if (tenant is not null && outcome is not null && tenant.StartsWith(schema, StringComparison.Ordinal))
            {
                counted[(tenant, outcome)] = value;
            }
        });
        listener.Start();
        using var gate = new ManualResetEventSlim();
        using var started = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (notice, _) =>
            {
                if (notice.Number == 99)
                {
                    started.Set();
                    gate.Wait(QueueNode.Patience); // held running: the tenant keeps a row in the statistics
                }

                if (notice.Number < 0)
                {
                    throw new InvalidOperationException("declined");
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: static o => o.MaxRetryAttempts = 1);

        await node.Queue.EnqueueManyAsync([new Notice(1), new Notice(2), new Notice(3), new Notice(-1)], new EnqueueOptions { Tenant = T("acme") });
        await node.Queue.EnqueueManyAsync([new Notice(4), new Notice(5)], new EnqueueOptions { Tenant = T("globex") });
        await node.Queue.EnqueueAsync(new Notice(6), new EnqueueOptions()); // no tenant: only the queue's own counters
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 6 && behavior.DeadLetters.Count == 1, "six items handled and one dead-lettered");
        // The outcome is counted right after it is posted, on the worker: wait for the last one.
        await DurableQueueTests.WaitAsync(
            () => { listener.RecordObservableInstruments(); return counted.GetValueOrDefault((T("acme"), "dead_lettered")) == 1 && counted.GetValueOrDefault((T("globex"), "completed")) == 2 && counted.GetValueOrDefault((T("acme"), "completed")) == 3; },
            "the outcomes are counted");

        Assert.Equal(Assert.Single(behavior.DeadLetters).Attempts - 1, counted[(T("acme"), "failed")]); // the deliveries of -1 before its last, each a retry stored
        Assert.True(counted[(T("acme"), "failed")] >= 1);
        Assert.Equal(0, counted[(T("globex"), "failed")]);
        Assert.Equal(0, counted[(T("globex"), "dead_lettered")]);

        // The statistics' row of a tenant with items running carries this node's outcomes of it.
        await node.Queue.EnqueueAsync(new Notice(99), new EnqueueOptions { Tenant = T("acme") });
        Assert.True(started.Wait(QueueNode.Patience));
        var acme = Assert.Single((await node.Queue.ReadStatisticsAsync()).Tenants);
        gate.Set();
        Assert.Equal((T("acme"), 0L, 1L, 3L, counted[(T("acme"), "failed")], 1L), (acme.Tenant, acme.Ready, acme.Running, acme.Completed, acme.Failed, acme.DeadLettered));
    }

    [Fact]
    public void TenantOutcomes_PastTheSeriesLimit_AreCountedTogetherAsOther_ItemsWithoutATenantNotAtAll()
    {
        var book = new TenantOutcomes(seriesLimit: 2);

        book.Add("a", TenantOutcomes.Outcome.Completed);
        book.Add("b", TenantOutcomes.Outcome.Failed);
        book.Add("c", TenantOutcomes.Outcome.Completed);
        book.Add("d", TenantOutcomes.Outcome.DeadLettered);
        book.Add("a", TenantOutcomes.Outcome.Completed);
        book.Add(null, TenantOutcomes.Outcome.Completed);

        Assert.Equal(
            [("a", 2L, 0L, 0L), ("b", 0L, 1L, 0L), (BoundedWork.TenantStatistics.OtherTenants, 1L, 0L, 1L)],
            book.Read().OrderBy(t => t.Tenant == BoundedWork.TenantStatistics.OtherTenants).ThenBy(t => t.Tenant, StringComparer.Ordinal));

        var none = new TenantOutcomes(seriesLimit: 0);
        none.Add("a", TenantOutcomes.Outcome.Completed);
        Assert.Equal([(BoundedWork.TenantStatistics.OtherTenants, 1L, 0L, 0L)], none.Read());
    }

    /// <summary>The plan's scans: each index named (a bitmap's index scan names no relation), and the rows read from the items table by each scan of it.</summary>
    private static void Collect(JsonElement node, List<(string Type, string? Index, double Rows)> scans)
    {
        var type = node.GetProperty("Node Type").GetString()!;
        var index = node.TryGetProperty("Index Name", out var name) ? name.GetString() : null;
        var onItems = node.TryGetProperty("Relation Name", out var relation) && relation.GetString() == "items";
        if (type.Contains("Scan", StringComparison.Ordinal) && (onItems || index is not null))
        {
            var removed = node.TryGetProperty("Rows Removed by Filter", out var r) ? r.GetDouble() : 0;
            scans.Add((type, index, onItems ? (node.GetProperty("Actual Rows").GetDouble() + removed) * node.GetProperty("Actual Loops").GetDouble() : 0));
        }

        if (node.TryGetProperty("Plans", out var children))
        {
            foreach (var child in children.EnumerateArray())
            {
                Collect(child, scans);
            }
        }
    }
}
