using System.Text.Json;
using BoundedWork.Hosting;
using BoundedWork.Testing;
using BoundedWork.Testing.Cluster;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging.Testing;

namespace BoundedWork.Cli.Tests;

/// <summary>
/// <c>bw cluster</c> as an operator runs it: the real tool in its own process, against an app's socket, over an
/// in-memory cluster of queue "payments" (the PostgreSQL one implements the same contract).
/// </summary>
public sealed class ClusterCommandTests
{
    [Fact]
    public async Task Cluster_ShowsNodesLimitsAndStoredItems_AsATableOrJson_StorageNamesMadeSafeForTheTerminal()
    {
        await using var app = await ClusterApp.StartAsync();
        await app.Cluster.UpdateSettingsAsync(s => s with { MaxRunning = 20, StartsPerSecond = 12.5 }, "bob");

        var table = await Bw.RunAsync(app.Bw("cluster", "payments"));

        Assert.True(table.ExitCode == 0, table.ToString());

        // The node named with a line break and an escape sequence stays on its one line, as escapes, driving nothing.
        var evil = Assert.Single(table.Out.Split('\n'), line => line.Contains("evil", StringComparison.Ordinal));
        Assert.Contains(@"evil\r\nforged\u001b[31m", evil, StringComparison.Ordinal);
        Assert.DoesNotContain('\u001b', evil);
        Assert.DoesNotContain(table.Out.Split('\n'), line => line.TrimStart().StartsWith("forged", StringComparison.Ordinal));

        // The rest, read without the colours the terminal may get.
        var plain = Plain(table.Out);
        Assert.Contains("payments: 3 live node(s); fleet-wide settings version 1, changed by bob at ", plain, StringComparison.Ordinal);
        // The limit's use is the handlers running (12 of 17 items running in the storage), the rest apart.
        Assert.Matches(@"handlers running / max\s+12 / 20", plain);
        Assert.Matches(@"reserved or settling\s+5", plain);
        Assert.Contains("11.5 / 12.5", plain, StringComparison.Ordinal);
        Assert.Contains("40 (oldest 2.5 s)", plain, StringComparison.Ordinal);
        Assert.Contains("each node's own", plain, StringComparison.Ordinal);
        Assert.Contains("stored: 1234 ready (oldest 3.5 s), 5 scheduled, 17 running, 3 dead, 4000 completed, 2 cancelled", plain, StringComparison.Ordinal);
        Assert.Matches(@"node-a\s+web-1\s+101\s+1\.4\.0\s+8\s+8\s+7\s+1200\s+3\s+v1\s+200 ms ago\s+-", plain);
        Assert.Matches(@"node-b\s+web-2\s+202\s+1\.4\.0\s+4\s+9\s+5\s+300\s+1\s+v1\s+500 ms ago\s+pinned locally", plain);

        var json = JsonDocument.Parse((await Bw.RunAsync(app.Bw("cluster", "payments", "--json"))).Out).RootElement;
        Assert.Equal(3, json.GetProperty("nodes").GetArrayLength());
        Assert.Equal(20, json.GetProperty("limits").GetProperty("maxRunning").GetInt32());
        Assert.Equal(12, json.GetProperty("limits").GetProperty("handlersRunning").GetInt64());
        Assert.Equal(5, json.GetProperty("limits").GetProperty("reservedOrSettling").GetInt64());
        Assert.Equal(7, json.GetProperty("nodes").EnumerateArray().Single(n => n.GetProperty("name").GetString() == "node-a").GetProperty("handlersRunning").GetInt32());
    }

    [Fact]
    public async Task ClusterSet_ChangesTheFleetWideSettings_AsTheToolsUserAndProcess_LoggedLikeAnyChange()
    {
        await using var app = await ClusterApp.StartAsync();

        var set = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--max-running", "20", "--starts-per-second", "12.5", "--workers-per-node", "6", "--max-running-per-key", "2", "--start-burst", "30"));

        Assert.True(set.ExitCode == 0, set.ToString());
        Assert.Contains("payments: workersPerNode none -> 6, maxRunning none -> 20, maxRunningPerKey 1 -> 2, startsPerSecond none -> 12.5, startBurst none -> 30", Plain(set.Out), StringComparison.Ordinal);
        Assert.Contains("fleet-wide settings version 1", Plain(set.Out), StringComparison.Ordinal);
        Assert.Equal(new WorkQueueClusterSettings { WorkersPerNode = 6, MaxRunning = 20, MaxRunningPerKey = 2, StartsPerSecond = 12.5, StartBurst = 30 }, app.Cluster.Settings with { Version = 0, UpdatedAt = null, UpdatedBy = null });
        var (changedBy, _) = Assert.Single(app.Cluster.Changes);
        Assert.Matches(@"^local socket peer \(uid \d+, pid \d+\)$", changedBy);
        var entry = Assert.Single(app.Logs.WithEvent("ClusterSettingsChanged"));
        Assert.Equal(changedBy, entry.GetStructuredStateValue("User"));
        Assert.Equal("unix:" + app.SocketPath, entry.GetStructuredStateValue("RemoteAddress"));

        // Clearing limits, and the same answer as JSON.
        var cleared = await Bw.RunAsync(app.Bw("cluster", "set", "payments", "--clear-max-running", "--clear-starts-per-second", "--clear-start-burst", "--clear-workers-per-node", "--json"));
        Assert.True(cleared.ExitCode == 0, cleared.ToString());
        var current = JsonDocument.Parse(cleared.Out).RootElement.GetProperty("current");
        Assert.Equal(JsonValueKind.Null, current.GetProperty("maxRunning").ValueKind);
        Assert.Equal(2, current.GetProperty("version").GetInt64());
        Assert.Equal(new WorkQueueClusterSettings { MaxRunningPerKey = 2 }, app.Cluster.Settings with { Version = 0, UpdatedAt = null, UpdatedBy = null });
    }

    [Theory]
    [InlineData(1, "maxRunning: maxRunning must be between 1 and 1,000,000 (was 0)", "set", "payments", "--max-running", "0")]
    [InlineData(1, "workersPerNode: workersPerNode must be between 1 and 4,096 (was 5000)", "set", "payments", "--workers-per-node", "5000")]
    [InlineData(1, "startsPerSecond: startsPerSecond must be more than 0", "set", "payments", "--starts-per-second", "-1")]
    [InlineData(1, "404 Unknown queue: No durable work queue named 'nope' has a cluster here", "set", "nope", "--max-running", "3")]
    [InlineData(1, "No durable work queue named 'mail' has a cluster here", "mail")]
    [InlineData(2, "set needs at least one setting", "set", "payments")]
    [InlineData(2, "Give --max-running or --clear-max-running, not both.", "set", "payments", "--max-running", "3", "--clear-max-running")]
    [InlineData(2, "a number of starts per second is finite", "set", "payments", "--starts-per-second", "NaN")]
    [InlineData(2, "--max-running: 'abc' is not a whole number.", "set", "payments", "--max-running", "abc")]
    [InlineData(2, "--workers-per-node: '99999999999' is too large", "set", "payments", "--workers-per-node", "99999999999")]
    [InlineData(2, "--starts-per-second: 'fast' is not a number of starts per second", "set", "payments", "--starts-per-second", "fast")]
    [InlineData(2, "Name the queue", "--json")]
    public async Task Cluster_BadInput_ExitCodeAndAMessageNamingTheField_NothingChanges(int exitCode, string message, params string[] args)
    {
        await using var app = await ClusterApp.StartAsync();

        var run = await Bw.RunAsync(app.Bw(["cluster", .. args]));

        Assert.True(run.ExitCode == exitCode, run.ToString());
        Assert.Contains(message, run.Error, StringComparison.Ordinal);
        Assert.DoesNotContain("System.", run.Error, StringComparison.Ordinal); // no .NET type names (System.Nullable`1[System.Int32])
        Assert.Empty(app.Cluster.Changes);
        Assert.Empty(app.Logs.WithEvent("ClusterSettingsChanged"));
    }

    /// <summary>The tool's output without the colours and weights a terminal may get.</summary>
    private static string Plain(string output) => System.Text.RegularExpressions.Regex.Replace(output, @"\x1b\[[0-9;]*m", "");
}

/// <summary>An app with executors "payments" (whose queue has a cluster) and "mail", and the admin console on a local socket only.</summary>
public sealed class ClusterApp : SocketAppHost
{
    private ClusterApp(WebApplication app, string socketPath, FakeLogCollector logs, InMemoryWorkQueueCluster cluster)
        : base(app, socketPath, logs)
    {
        Cluster = cluster;
    }

    public InMemoryWorkQueueCluster Cluster { get; }

    public static async Task<ClusterApp> StartAsync()
    {
        var now = DateTimeOffset.UtcNow;
        var cluster = new InMemoryWorkQueueCluster("payments", new Microsoft.Extensions.Time.Testing.FakeTimeProvider(now));
        cluster.SetNodes(
            new WorkQueueClusterNode { Name = "node-b", Host = "web-2", ProcessId = 202, Version = "1.4.0", StartedAt = now.AddHours(-1), LastSeen = now.AddSeconds(-0.5), WorkerCount = 4, InFlight = 9, HandlersRunning = 5, Completed = 300, Failed = 1, SettingsVersion = 1, PinnedLocally = true },
            new WorkQueueClusterNode { Name = "node-a", Host = "web-1", ProcessId = 101, Version = "1.4.0", StartedAt = now.AddHours(-2), LastSeen = now.AddSeconds(-0.2), WorkerCount = 8, InFlight = 8, HandlersRunning = 7, Completed = 1200, Failed = 3, SettingsVersion = 1 },
            new WorkQueueClusterNode { Name = "evil\r\nforged\u001b[31m", Host = "web-3", ProcessId = 303, Version = "1.4.0", LastSeen = now, WorkerCount = 1 });
        cluster.SetStorage(new WorkQueueStorageStatistics { Ready = 1234, Scheduled = 5, Running = 17, DeadLettered = 3, Completed = 4000, Cancelled = 2, OldestReadyAge = TimeSpan.FromSeconds(3.5), IsAvailable = true });
        cluster.SetLimitUse(new WorkQueueClusterLimitUse { Running = 17, HandlersRunning = 12, WaitingForPermit = 40, StartsLastSecond = 11.5, OldestPermitWait = TimeSpan.FromSeconds(2.5) });

        var (built, socketPath, logs) = SocketApp.Build("cl", services =>
        {
            services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
            services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
            services.AddSingleton<IWorkQueueCluster>(cluster);
        });
        return await StartedAsync(new ClusterApp(built, socketPath, logs, cluster));
    }
}
