using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The cluster view end to end: an app with the admin console on real Kestrel over a real PostgreSQL queue, and three
/// consumer nodes in child processes. What the console shows is checked against the tables, and what it changes
/// against the nodes themselves (their rows, their executors' worker counts, the handlers' own start and end stamps).
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterConsoleTests(PostgresFixture postgres)
{
    private const string Cluster = "/bounded-work/queues/notices/cluster";
    private static readonly TimeSpan Lease = TimeSpan.FromSeconds(5);

    [Fact]
    public async Task ThreeConsumerNodes_TheConsoleListsThem_ResizesEveryOne_AndItsLimitsHold()
    {
        var schema = await postgres.NewSchemaAsync();
        await ClusterLimitSql.CreateRunsAsync(postgres, schema);
        var logs = new FakeLogCollector();
        await using var app = await StartAsync(schema, logs);
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };
        var queue = app.Services.GetRequiredService<IPostgreSqlWorkQueue<Notice>>();
        var nodes = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                nodes.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.FromMilliseconds(100), Lease, limits: true, environment: Member("node-" + i)));
            }

            // The nodes, by name, with their workers.
            var listed = await UntilAsync(client, c => c.GetProperty("nodes").GetArrayLength() == 3, "three nodes are listed");
            Assert.Equal(["node-0", "node-1", "node-2"], listed.GetProperty("nodes").EnumerateArray().Select(n => n.GetProperty("name").GetString()));
            Assert.All(listed.GetProperty("nodes").EnumerateArray(), n => Assert.Equal(2, n.GetProperty("workers").GetInt32()));
            Assert.Equal(nodes.Select(n => n.Id).Order(), listed.GetProperty("nodes").EnumerateArray().Select(n => n.GetProperty("processId").GetInt32()).Order());

            // Stored items by state, as the table holds them once the queue is still: a few completed, dead and scheduled.
            for (var i = 0; i < 6; i++)
            {
                await queue.EnqueueAsync(new Notice(i));
            }

            await queue.EnqueueAsync(new Notice(99), new EnqueueOptions { Delay = TimeSpan.FromHours(1) });
            await DurableQueueTests.WaitAsync(() => Count(schema, "state = 2").Result == 6, "the six items are completed");
            var still = await client.GetFromJsonAsync<JsonElement>(Cluster);
            var storage = still.GetProperty("storage");
            Assert.Equal(await Count(schema, "state = 0"), storage.GetProperty("ready").GetInt64());
            Assert.Equal(await Count(schema, "state = 1"), storage.GetProperty("running").GetInt64());
            Assert.Equal(await Count(schema, "state = 2"), storage.GetProperty("completed").GetInt64());
            Assert.Equal(await Count(schema, "state = 3"), storage.GetProperty("deadLettered").GetInt64());
            Assert.Equal(await Count(schema, "state = 4"), storage.GetProperty("cancelled").GetInt64());
            Assert.Equal(1L, storage.GetProperty("scheduled").GetInt64());
            Assert.Equal(0L, still.GetProperty("limits").GetProperty("running").GetInt64());

            // Workers per node, once, from the console: every node applies it (its executor and its row), audited.
            var resized = await PatchAsync(client, """{"workersPerNode": 3}""");
            Assert.Equal(1, resized.GetProperty("current").GetProperty("version").GetInt64());
            Assert.Equal(3, resized.GetProperty("current").GetProperty("workersPerNode").GetInt32());
            await UntilAsync(client, c => c.GetProperty("nodes").EnumerateArray().Count(n => n.GetProperty("workers").GetInt32() == 3 && n.GetProperty("settingsVersion").GetInt64() == 1) == 3,
                "every node runs three workers, settings version 1");
            Assert.Equal(3L, await Count(schema, "worker_count = 3 AND settings_version = 1 AND NOT pinned_locally", "nodes"));
            foreach (var node in nodes)
            {
                await DurableQueueTests.WaitAsync(() => node.Output.Contains("WORKERS 3", StringComparison.Ordinal), $"node {node.Id} reports three workers");
            }

            var audit = Assert.Single(logs.GetSnapshot(), e => e.Id.Id == 211);
            Assert.Equal("alice", audit.GetStructuredStateValue("User"));
            Assert.Equal("3", audit.GetStructuredStateValue("WorkersPerNode"));
            Assert.Equal("none", audit.GetStructuredStateValue("PreviousWorkersPerNode"));

            // At most two running across the three nodes (nine workers): the handlers' own stamps, read while items run
            // and afterwards. (A row stays in state running until its outcome is written, after its handler ended and
            // gave its permit back, so the rows can briefly exceed the limit; the view reads the rows.)
            await PatchAsync(client, """{"maxRunning": 2}""");
            var since = await postgres.ScalarAsync<DateTime>("SELECT now()");
            for (var i = 100; i < 130; i++)
            {
                await queue.EnqueueAsync(new Notice(i));
            }

            var reads = 0;
            while (await Count(schema, "state IN (0, 1)") > 0)
            {
                var read = await client.GetFromJsonAsync<JsonElement>(Cluster);
                var running = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.runs WHERE ended_at IS NULL AND started_at >= '{since:O}'::timestamptz");
                Assert.True(running <= 2, $"{running} handlers were running with maxRunning 2: {read}");
                Assert.Equal(2, read.GetProperty("limits").GetProperty("maxRunning").GetInt32());
                Assert.True(++reads < 10_000, "the thirty items did not finish");
            }

            var overlap = await ClusterLimitSql.MaxOverlapAsync(postgres, schema, from: since);
            Assert.True(overlap <= 2, $"{overlap} handlers ran at once with maxRunning 2.");
            Assert.Equal(36L, await Count(schema, "state = 2"));

            // A binding rate with a backlog: the nodes' rows carry the items held back and the starts of the last second.
            await PatchAsync(client, """{"maxRunning": null, "startsPerSecond": 2}""");
            for (var i = 200; i < 260; i++)
            {
                await queue.EnqueueAsync(new Notice(i));
            }

            var cluster = app.Services.GetServices<IWorkQueueCluster>().Single();
            var deadline = DateTime.UtcNow + QueueNode.Patience;
            WorkQueueCluster use;
            while (true)
            {
                use = await cluster.GetClusterAsync();
                if (use.LimitUse.WaitingForPermit > 0 && use.LimitUse.StartsLastSecond > 0)
                {
                    break;
                }

                Assert.True(DateTime.UtcNow < deadline, $"Never both items waiting for a permit and starts in the last second: {use.LimitUse}; nodes {string.Join("; ", use.Nodes)}");
                await Task.Delay(50); // the poll's interval: the wait is for the condition, up to the patience
            }

            var shown = await UntilAsync(client, c => c.GetProperty("limits").GetProperty("waitingForPermit").GetInt64() > 0, "the console shows items waiting for a permit");
            Assert.Equal(2.0, shown.GetProperty("limits").GetProperty("startsPerSecond").GetDouble());
        }
        finally
        {
            foreach (var node in nodes)
            {
                await node.DisposeAsync();
            }
        }
    }

    private Task<long> Count(string schema, string where, string table = "items") =>
        postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.{table} WHERE {where}");

    /// <summary>A consumer's cluster membership: its name, a short heartbeat, and a line per worker count.</summary>
    private static Dictionary<string, string> Member(string name) =>
        new() { ["BW_NODE_NAME"] = name, ["BW_HEARTBEAT_MS"] = "300", ["BW_REPORT_WORKERS"] = "1" };

    private static async Task<JsonElement> PatchAsync(HttpClient client, string json)
    {
        using var request = new HttpRequestMessage(HttpMethod.Patch, Cluster) { Content = new StringContent(json, Encoding.UTF8, "application/json") };
        request.Headers.Add("X-BoundedWork-Admin", "1");
        using var response = await client.SendAsync(request);
        var body = await response.Content.ReadAsStringAsync();
        Assert.True(response.StatusCode == HttpStatusCode.OK, $"{response.StatusCode}: {body}");
        return JsonDocument.Parse(body).RootElement.Clone();
    }

    private static async Task<JsonElement> UntilAsync(HttpClient client, Func<JsonElement, bool> condition, string what)
    {
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (true)
        {
            var read = await client.GetFromJsonAsync<JsonElement>(Cluster);
            if (condition(read))
            {
                return read;
            }

            Assert.True(DateTime.UtcNow < deadline, $"Timed out waiting until {what}; last read: {read}");
            await Task.Delay(50); // the poll's interval: the wait is for the condition, up to the patience
        }
    }

    /// <summary>The operator's app: the queue (consuming nothing itself) and the console, its caller signed in as alice.</summary>
    private Task<WebApplication> StartAsync(string schema, FakeLogCollector logs) =>
        ConsoleApp.StartAsync(postgres, schema, new FakeLoggerProvider(logs), executor: o => o.MaxWorkerCount = 4);
}
