using System.Text.Json;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql;
using BoundedWork.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Npgsql;

namespace BoundedWork.Cli.Tests;

/// <summary>
/// <c>bw cluster</c> and <c>bw cluster set</c> against an app's socket over a real PostgreSQL queue with two consuming
/// nodes (the app and a second host): what the tool shows is the nodes' own rows, and what it sets reaches both.
/// </summary>
public sealed class ClusterPostgreSqlCommandTests(DeadLetterCommandTests.Database database) : IClassFixture<DeadLetterCommandTests.Database>
{
    [Fact]
    public async Task Cluster_ListsBothNodes_ClusterSet_ResizesBoth_AsTheToolsUser()
    {
        var schema = await SocketApp.CreateSchemaAsync(database.Server.ConnectionString);
        var (built, socketPath, logs) = SocketApp.Build("cl", services => AddQueue(services, database.Server.ConnectionString, schema, "node-a"));
        await using var app = built;
        await app.StartAsync();
        var other = Host.CreateApplicationBuilder();
        other.Logging.ClearProviders();
        AddQueue(other.Services, database.Server.ConnectionString, schema, "node-b");
        using var second = other.Build();
        await second.StartAsync();
        try
        {
            string[] Tool(params string[] args) => [.. args, "--socket", socketPath];

            await Bw.UntilAsync("both nodes are listed", c => c.GetProperty("nodes").GetArrayLength() == 2, Tool("cluster", "notices"));
            var table = await Bw.RunAsync(Tool("cluster", "notices"));
            Assert.True(table.ExitCode == 0, table.ToString());
            Assert.Contains("notices: 2 live node(s)", Plain(table.Out), StringComparison.Ordinal);
            Assert.True(table.Out.Split('\n').Count(line => line.Contains("node-a", StringComparison.Ordinal)) == 1, table.Out);
            Assert.Single(table.Out.Split('\n'), line => line.Contains("node-b", StringComparison.Ordinal));

            var set = await Bw.RunAsync(Tool("cluster", "set", "notices", "--workers-per-node", "3", "--max-running", "5"));
            Assert.True(set.ExitCode == 0, set.ToString());
            Assert.Contains("notices: workersPerNode none -> 3, maxRunning none -> 5", Plain(set.Out), StringComparison.Ordinal);

            // Both executors run three workers, and the nodes' rows say they applied version 1.
            await Bw.UntilAsync("both nodes run three workers under version 1",
                c => c.GetProperty("nodes").EnumerateArray().Count(n => n.GetProperty("workers").GetInt32() == 3 && n.GetProperty("settingsVersion").GetInt64() == 1) == 2,
                Tool("cluster", "notices"));
            Assert.Equal(3, app.Services.GetRequiredKeyedService<BoundedExecutor>("notices").Settings.WorkerCount);
            Assert.Equal(3, second.Services.GetRequiredKeyedService<BoundedExecutor>("notices").Settings.WorkerCount);
            var json = JsonDocument.Parse((await Bw.RunAsync(Tool("cluster", "notices", "--json"))).Out).RootElement;
            Assert.Equal(5, json.GetProperty("limits").GetProperty("maxRunning").GetInt32());
            Assert.Matches(@"^local socket peer \(uid \d+, pid \d+\)$", json.GetProperty("settings").GetProperty("updatedBy").GetString());

            // The console's audit event is the one event of that name (the storage's own record of the change is 313, FleetSettingsStored).
            var entry = Assert.Single(logs.GetSnapshot(), e => e.Id.Name == "ClusterSettingsChanged");
            Assert.Equal(211, entry.Id.Id);
            Assert.Single(logs.GetSnapshot(), e => e.Id is { Id: 313, Name: "FleetSettingsStored" });
            Assert.Equal(json.GetProperty("settings").GetProperty("updatedBy").GetString(), entry.GetStructuredStateValue("User"));
        }
        finally
        {
            await second.StopAsync();
            await app.StopAsync();
        }
    }

    [Fact]
    public async Task PauseFleetAndKey_ThroughTheSocket_StoredAndShown_ResumeEndsThem_BadInputRefused()
    {
        var schema = await SocketApp.CreateSchemaAsync(database.Server.ConnectionString);
        var (built, socketPath, logs) = SocketApp.Build("cp", services => AddQueue(services, database.Server.ConnectionString, schema, "node-a"));
        await using var app = built;
        await app.StartAsync();
        try
        {
            string[] Tool(params string[] args) => [.. args, "--socket", socketPath];

            var pause = await Bw.RunAsync(Tool("pause", "notices", "--fleet", "--reason", "provider outage", "--for", "10m"));
            Assert.True(pause.ExitCode == 0, pause.ToString());
            Assert.Contains("paused fleet-wide", Plain(pause.Out), StringComparison.Ordinal);
            var key = await Bw.RunAsync(Tool("pause", "notices", "--key", "customer-42", "--reason", "under review", "--json"));
            Assert.True(key.ExitCode == 0, key.ToString());
            Assert.Equal("customer-42", JsonDocument.Parse(key.Out).RootElement.GetProperty("pause").GetProperty("key").GetString());

            var shown = Plain((await Bw.RunAsync(Tool("cluster", "notices"))).Out);
            Assert.Contains("paused fleet-wide by local socket peer", shown, StringComparison.Ordinal);
            Assert.Contains("key 'customer-42' paused", shown, StringComparison.Ordinal);
            await Bw.UntilAsync("the node honours the pause", _ => app.Services.GetServices<IWorkQueueStorage>().Single().Statistics.Pause is not null, Tool("cluster", "notices"));

            var badFor = await Bw.RunAsync(Tool("pause", "notices", "--fleet", "--reason", "x", "--for", "40d"));
            Assert.Equal(1, badFor.ExitCode);
            Assert.Contains("for", badFor.Out + badFor.Error, StringComparison.Ordinal);
            var unknown = await Bw.RunAsync(Tool("pause", "nobody", "--fleet", "--reason", "x"));
            Assert.Equal(1, unknown.ExitCode);

            var resumeKey = await Bw.RunAsync(Tool("resume", "notices", "--key", "customer-42"));
            Assert.Contains("resumed fleet-wide", Plain(resumeKey.Out), StringComparison.Ordinal);
            var resume = await Bw.RunAsync(Tool("resume", "notices", "--fleet", "--json"));
            Assert.True(JsonDocument.Parse(resume.Out).RootElement.GetProperty("changed").GetBoolean());
            var again = await Bw.RunAsync(Tool("resume", "notices", "--fleet"));
            Assert.Contains("not paused fleet-wide (unchanged)", Plain(again.Out), StringComparison.Ordinal);
            Assert.Contains("not paused", Plain((await Bw.RunAsync(Tool("cluster", "notices"))).Out), StringComparison.Ordinal);
            Assert.Equal(2, logs.GetSnapshot().Count(e => e.Id.Name == "QueuePaused"));
        }
        finally
        {
            await app.StopAsync();
        }
    }

    private static void AddQueue(IServiceCollection services, string connectionString, string schema, string node) =>
        services
            .AddWorkQueue<Notice, NothingHandler>("notices")
            .UsePostgreSql(connectionString, NoticeJson.Default.Notice, o =>
            {
                o.Schema = schema;
                o.NodeName = node;
                o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(200);
            })
            .Configure(o =>
            {
                o.WorkerCount = 2;
                o.MaxWorkerCount = 4;
            });

    private static string Plain(string output) => System.Text.RegularExpressions.Regex.Replace(output, @"\x1b\[[0-9;]*m", "");

    private sealed class NothingHandler : IBlockingWorkHandler<Notice>
    {
        public void Handle(Notice item, CancellationToken cancellationToken)
        {
        }
    }
}
