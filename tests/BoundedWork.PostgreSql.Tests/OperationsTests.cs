using System.Diagnostics.Metrics;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>Statistics, health, metrics and retention of a stored queue.</summary>
[Collection(PostgresCollection.Name)]
public sealed class OperationsTests(PostgresFixture postgres)
{
    [Fact]
    public async Task Statistics_ComeFromTheDatabase_AcrossNodes()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        for (var i = 0; i < 5; i++)
        {
            await producer.Queue.EnqueueAsync(new Notice(i));
        }

        await postgres.ExecuteAsync($"UPDATE {schema}.items SET state = 5, run_at = now() + interval '1 hour', enqueued_at = now() - interval '1 minute' WHERE id = (SELECT min(id) FROM {schema}.items)");
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET run_at = now() - interval '30 seconds' WHERE id = (SELECT min(id) + 1 FROM {schema}.items)");

        var statistics = await producer.Queue.ReadStatisticsAsync();
        Assert.Equal(4, statistics.Ready);
        Assert.Equal(1, statistics.Scheduled);
        Assert.Equal(0, statistics.Running);
        Assert.InRange(statistics.OldestReadyAge, TimeSpan.FromSeconds(29), TimeSpan.FromMinutes(5)); // due 30 s ago; the scheduled one is not ready
        Assert.True(statistics.IsAvailable);

        // The monitoring view is the same reading, refreshed in the background.
        await DurableQueueTests.WaitAsync(() => producer.Storage.Statistics is { Ready: 4, Scheduled: 1, IsAvailable: true }, "the background reading catches up");
        Assert.Equal("PostgreSql", producer.Storage.StorageKind);
        Assert.Equal("notices", producer.Storage.QueueName);
    }

    [Fact]
    public async Task HealthCheck_IsUnhealthyWhileTheDatabaseIsDown_AndHealthyAfter()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), services: s => s.AddHealthChecks().AddBoundedWork());
        var health = node.Host.Services.GetRequiredService<HealthCheckService>();
        await DurableQueueTests.WaitAsync(() => health.CheckHealthAsync().Result.Status == HealthStatus.Healthy, "the node is healthy");

        await postgres.Server.RestartAsync(whileDown: async () =>
        {
            await DurableQueueTests.WaitAsync(() => health.CheckHealthAsync().Result.Status == HealthStatus.Unhealthy, "the health check reports the outage");
            var report = await health.CheckHealthAsync();
            var entry = report.Entries["boundedwork"];
            Assert.Contains("Work queue 'notices' cannot reach its PostgreSql storage", entry.Description, StringComparison.Ordinal);
            var storage = (IReadOnlyDictionary<string, object>)((IReadOnlyDictionary<string, object>)entry.Data["notices"])["storage"];
            Assert.Equal(false, storage["available"]);
        });
        Npgsql.NpgsqlConnection.ClearAllPools();

        await DurableQueueTests.WaitAsync(() => health.CheckHealthAsync().Result.Status == HealthStatus.Healthy, "the node is healthy again");
    }

    [Fact]
    public async Task Metrics_ReportStoredDepthAndWhatTheNodeDid()
    {
        var schema = await postgres.NewSchemaAsync();
        var measurements = new System.Collections.Concurrent.ConcurrentDictionary<string, double>();

        // A MeterListener, not MetricCollector<T>: the test reads every instrument of the meter, and a collector follows one.
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "BoundedWork.PostgreSql")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        void Record(Instrument instrument, double value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            string? queue = null, state = null;
            foreach (var tag in tags)
            {
                if (tag.Key == "boundedwork.queue")
                {
                    queue = (string?)tag.Value;
                }
                else if (tag.Key == "boundedwork.storage.state")
                {
                    state = (string?)tag.Value;
                }
            }

            if (queue == "notices")
            {
                measurements.AddOrUpdate(instrument.Name + (state is null ? string.Empty : "/" + state), value, (_, old) => instrument is Counter<long> ? old + value : value);
            }
        }

        listener.SetMeasurementEventCallback<long>((i, v, t, _) => Record(i, v, t));
        listener.SetMeasurementEventCallback<int>((i, v, t, _) => Record(i, v, t));
        listener.SetMeasurementEventCallback<double>((i, v, t, _) => Record(i, v, t));
        listener.Start();

        var behavior = new Behavior { Handle = (item, _) => ThrowIf(item.Number == 0) };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 1);
        for (var i = 0; i < 10; i++)
        {
            await node.Queue.EnqueueAsync(new Notice(i));
        }

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 9 && behavior.DeadLetters.Count == 1, "nine handled and one dead letter");
        await DurableQueueTests.WaitAsync(() => node.Storage.Statistics is { DeadLettered: 1, Ready: 0, Running: 0 }, "the statistics show the outcome");
        listener.RecordObservableInstruments();

        Assert.Equal(11, measurements["boundedwork.storage.claimed"]); // nine items once, the failing one twice
        Assert.Equal(9, measurements["boundedwork.storage.completed"]);
        Assert.Equal(1, measurements["boundedwork.storage.retried"]);
        Assert.Equal(1, measurements["boundedwork.storage.dead_lettered"]);
        Assert.Equal(1, measurements["boundedwork.storage.items/dead_lettered"]);
        Assert.Equal(0, measurements["boundedwork.storage.items/ready"]);
        Assert.Equal(1, measurements["boundedwork.storage.available"]);
    }

    [Fact]
    public async Task Cleanup_DeletesFinishedItemsOnceTheirRetentionEnds_AndZeroRetentionDeletesOnCompletion()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior { Handle = (item, _) => ThrowIf(item.Number < 0) };
        await using (var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 0, storage: o =>
        {
            o.CompletedRetention = TimeSpan.FromHours(1);
            o.DeadLetterRetention = TimeSpan.FromHours(1);
            o.CleanupInterval = TimeSpan.FromMilliseconds(100);
            o.StatisticsInterval = TimeSpan.FromHours(1); // cleanup keeps its own schedule
        }))
        {
            for (var i = -2; i < 5; i++)
            {
                await node.Queue.EnqueueAsync(new Notice(i));
            }

            await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 5 && behavior.DeadLetters.Count == 2, "five handled and two dead letters");
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (2, 3)").Result == 7, "the outcomes are written");

            // Within their retention, they stay; once three of them are older than it, exactly those go.
            await postgres.ExecuteAsync($"UPDATE {schema}.items SET finished_at = now() - interval '2 hours' WHERE id IN (SELECT id FROM {schema}.items ORDER BY id LIMIT 3)");
            await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items").Result == 4, "the three expired rows are deleted");
            Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE finished_at < now() - interval '1 hour'"));
        }

        var immediate = new Behavior();
        await using var next = await QueueNode.StartAsync(postgres.ConnectionString, schema, immediate, node: "b", storage: o => o.CompletedRetention = TimeSpan.Zero);
        var id = await next.Queue.EnqueueWithIdAsync(new Notice(100));
        await immediate.WaitUntilAsync(() => immediate.Deliveries.Count == 1, "the item is handled");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id}").Result == 0, "the completed row is deleted at once");
    }

    private static void ThrowIf(bool fail)
    {
        if (fail)
        {
            throw new InvalidOperationException("this item always fails");
        }
    }
}
