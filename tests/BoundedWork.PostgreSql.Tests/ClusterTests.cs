using BoundedWork.PostgreSql.Internal;
using System.Globalization;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The cluster of a durable queue: the node registry (a row per consuming node, kept by its heartbeat) and the
/// fleet-wide settings (changed once, applied by every node), with consumer nodes in child processes and the changes
/// made through <see cref="IWorkQueueCluster"/> from this process.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterTests(PostgresFixture postgres)
{
    private static readonly TimeSpan Lease = TimeSpan.FromSeconds(5);

    [Fact]
    public async Task UpdateSettings_WorkersPerNode_ReachesAllThreeNodes_AndANodeStartedAfterTheChangePicksItUp()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var operatorNode = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(operatorNode);
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < 3; i++)
            {
                consumers.Add(await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, Lease, environment: Member("node-" + i)));
            }

            await WaitForClusterAsync(cluster, c => c.Nodes.Count == 3 && c.Nodes.All(n => n.WorkerCount == 2), "three nodes of two workers each");

            var stored = await cluster.UpdateSettingsAsync(s => s with { WorkersPerNode = 4 }, "operator");

            Assert.Equal(1, stored.Version);
            Assert.Equal(4, stored.WorkersPerNode);
            Assert.Equal("operator", stored.UpdatedBy);
            var after = await WaitForClusterAsync(cluster, c => c.Nodes.Count == 3 && c.Nodes.All(n => n.WorkerCount == 4 && n.SettingsVersion == 1), "every node runs four workers and applied version 1");
            Assert.Equal(["node-0", "node-1", "node-2"], after.Nodes.Select(n => n.Name));
            Assert.All(after.Nodes, n => Assert.False(n.PinnedLocally));
            foreach (var consumer in consumers)
            {
                await DurableQueueTests.WaitAsync(() => consumer.Output.Contains("WORKERS 4", StringComparison.Ordinal), "the node's executor runs four workers: " + consumer.Output);
                Assert.Contains("BoundedWork.PostgreSql[309]", consumer.Output, StringComparison.Ordinal); // the audit event of the applied change
            }

            // A node that was down during the change reads the row at start, before it claims: its executor never ran
            // its own two workers (the reporter starts after the queue has started, and prints the count it finds).
            var late = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, Lease, environment: Member("node-3"));
            consumers.Add(late);
            await DurableQueueTests.WaitAsync(() => late.Output.Contains("WORKERS ", StringComparison.Ordinal), "the late node reports its worker count");
            Assert.Equal("WORKERS 4", late.Output.Split(Environment.NewLine).First(line => line.StartsWith("WORKERS ", StringComparison.Ordinal)));
            await WaitForClusterAsync(cluster, c => c.Nodes.Count == 4 && c.Nodes.All(n => n.WorkerCount == 4 && n.SettingsVersion == 1), "the late node runs four workers too");
        }
        finally
        {
            foreach (var consumer in consumers)
            {
                await consumer.DisposeAsync();
            }
        }
    }

    [Fact]
    public async Task UpdateSettings_NodePinnedLocally_KeepsItsCount_AndReportsPinnedLocally()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var operatorNode = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(operatorNode);
        await using var first = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, Lease, environment: Member("node-0"));
        await using var second = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, Lease, environment: Member("node-1"));
        await using var pinned = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 2, TimeSpan.Zero, Lease, environment: Member("node-2", pinWorkers: 3));
        Assert.Contains("PINNED 3", pinned.Output, StringComparison.Ordinal);
        await WaitForClusterAsync(cluster, c => c.Nodes.Count == 3 && Node(c, "node-2").PinnedLocally, "three nodes, the third pinned");

        await cluster.UpdateSettingsAsync(s => s with { WorkersPerNode = 4 }, "operator");

        var after = await WaitForClusterAsync(cluster, c => c.Nodes.Count == 3 && c.Nodes.All(n => n.SettingsVersion == 1), "every node saw version 1");
        Assert.Equal(4, Node(after, "node-0").WorkerCount);
        Assert.Equal(4, Node(after, "node-1").WorkerCount);
        Assert.Equal(3, Node(after, "node-2").WorkerCount); // its pin wins
        Assert.True(Node(after, "node-2").PinnedLocally);
        Assert.False(Node(after, "node-0").PinnedLocally);
        await DurableQueueTests.WaitAsync(() => pinned.Output.Contains("BoundedWork.PostgreSql[310]", StringComparison.Ordinal), "the pinned node says its pin wins: " + pinned.Output);
        Assert.DoesNotContain("WORKERS 4", pinned.Output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task PinEnds_TheNodeTakesTheFleetWideCount()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(),
            storage: o => o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(100), executor: o => o.AdaptiveMode = AdaptiveMode.Advisory);
        var cluster = ClusterOf(node);
        node.Executor.Resize(3);

        await cluster.UpdateSettingsAsync(s => s with { WorkersPerNode = 5 }, "operator");
        await WaitForClusterAsync(cluster, c => c.Nodes is [{ SettingsVersion: 1, PinnedLocally: true }], "the node saw version 1 and kept its pin");
        Assert.Equal(3, node.Executor.Settings.WorkerCount);

        node.Executor.UnpinWorkerCount();

        await DurableQueueTests.WaitAsync(() => node.Executor.Settings.WorkerCount == 5, "the unpinned node runs the fleet-wide count");
        Assert.False(node.Executor.GetStatistics().IsWorkerCountPinned); // applied with Reconfigure, which does not pin
        await WaitForClusterAsync(cluster, c => c.Nodes is [{ WorkerCount: 5, PinnedLocally: false }], "its row shows it");
    }

    [Fact]
    public async Task SettingsChangedWithoutANotification_TheNodeFindsItAtItsNextHeartbeat()
    {
        // A notification lost while the node's listener reconnected: the row is the truth, read with every heartbeat.
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), storage: o => o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(100));
        Assert.Equal(2, node.Executor.Settings.WorkerCount);
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM pg_stat_activity WHERE query = '{StorageSql.Listen(new StorageSql(schema).SettingsChannel)}'").Result > 0,
            "the node listens (it looks at the row once it does)");
        await WaitForClusterAsync(ClusterOf(node), c => c.Nodes is [{ SettingsVersion: 0 }], "the node has a row");

        await postgres.ExecuteAsync($"INSERT INTO {schema}.queue_settings (queue, workers_per_node, version, updated_by) VALUES ('notices', 5, 1, 'by hand')");

        await DurableQueueTests.WaitAsync(() => node.Executor.Settings.WorkerCount == 5, "the node applies the row it was not told of");
        await WaitForClusterAsync(ClusterOf(node), c => c.Nodes is [{ WorkerCount: 5, SettingsVersion: 1 }], "its row shows version 1 applied");
    }

    [Fact]
    public async Task KilledNode_DropsOutOnceExpired_AndCleanupDeletesIt_StoppedNode_LeavesAtOnce()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var operatorNode = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(operatorNode);
        await using var killed = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.Zero, Lease, environment: Member("killed"));
        await using var stopped = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.Zero, Lease, environment: Member("stopped"));
        await using var survivor = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.Zero, Lease, environment: Member("survivor"));
        await WaitForClusterAsync(cluster, c => c.Nodes.Count == 3, "three live nodes");

        await killed.KillAsync();

        await WaitForClusterAsync(
            cluster, c => c.Nodes.All(n => n.Name != "killed") && c.Nodes.Any(n => n.Name == "stopped") && c.Nodes.Any(n => n.Name == "survivor"),
            "the killed node's row expired; the others live");

        Assert.Equal(0, await stopped.TerminateAsync());

        // No wait: the node removed its row before it exited.
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE node = 'stopped'"));
        Assert.DoesNotContain((await cluster.GetClusterAsync()).Nodes, n => n.Name == "stopped");
        Assert.Contains("BoundedWork.PostgreSql[315]", stopped.Output, StringComparison.Ordinal); // it said it left

        // Cleanup (on any node of the queue) deletes the expired row; the live one stays.
        await using var cleaner = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), node: "cleaner", storage: o =>
        {
            o.Consume = false;
            o.CleanupInterval = TimeSpan.FromMilliseconds(100);
        });
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE node = 'killed'").Result == 0, "cleanup deleted the expired row");
        await WaitForClusterAsync(cluster, c => c.Nodes is [{ Name: "survivor" }], "the live node stays"); // (a row deleted while late comes back with its next beat)
    }

    [Fact]
    public async Task ConcurrentUpdates_FromTwoNodes_AllLand_NoneLost()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var a = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "a");
        await using var b = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "b");
        const int PerNode = 10;

        // Each change reads the current value and adds one: a lost update would leave the count short.
        await Task.WhenAll(
            Enumerable.Range(0, PerNode).Select(_ => Task.Run(() => ClusterOf(a).UpdateSettingsAsync(s => s with { MaxRunning = (s.MaxRunning ?? 0) + 1 }, "node a")))
                .Concat(Enumerable.Range(0, PerNode).Select(_ => Task.Run(() => ClusterOf(b).UpdateSettingsAsync(s => s with { MaxRunning = (s.MaxRunning ?? 0) + 1 }, "node b")))));

        var settings = (await ClusterOf(a).GetClusterAsync()).Settings;
        Assert.Equal(2 * PerNode, settings.MaxRunning);
        Assert.Equal(2 * PerNode, settings.Version);

        // Two changes of different settings at once, one from each node: both land, version +2.
        await Task.WhenAll(
            ClusterOf(a).UpdateSettingsAsync(s => s with { StartsPerSecond = 50 }, "node a"),
            ClusterOf(b).UpdateSettingsAsync(s => s with { MaxRunningPerKey = 3 }, "node b"));
        var both = (await ClusterOf(b).GetClusterAsync()).Settings;
        Assert.Equal(50.0, both.StartsPerSecond);
        Assert.Equal(3, both.MaxRunningPerKey);
        Assert.Equal(2L * PerNode + 2, both.Version);
        Assert.Equal(2 * PerNode, both.MaxRunning);
    }

    [Fact]
    public async Task UpdateSettings_ThatChangesNothing_WritesNothing_KeepsTheVersion_AndTellsNoNode()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var a = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, node: "a");
        var changed = await ClusterOf(a).UpdateSettingsAsync(s => s with { MaxRunning = 5 }, "alice");
        Assert.Equal(1L, changed.Version);
        await using var listener = new Npgsql.NpgsqlConnection(postgres.ConnectionString);
        await listener.OpenAsync();
        var notifications = 0;
        listener.Notification += (_, _) => Interlocked.Increment(ref notifications);
        await using (var listen = new Npgsql.NpgsqlCommand(StorageSql.Listen(new StorageSql(schema).SettingsChannel), listener))
        {
            await listen.ExecuteNonQueryAsync();
        }

        var same = await ClusterOf(a).UpdateSettingsAsync(s => s with { MaxRunning = 5 }, "bob");

        Assert.Equal(changed, same);
        var stored = (await ClusterOf(a).GetClusterAsync()).Settings;
        Assert.Equal(1L, stored.Version);
        Assert.Equal("alice", stored.UpdatedBy);
        await using (var probe = new Npgsql.NpgsqlCommand("SELECT 1", listener))
        {
            await probe.ExecuteScalarAsync(); // delivers any notification already sent
        }

        Assert.Equal(0, Volatile.Read(ref notifications));

        // A queue without a settings row: a change to the defaults inserts none.
        var other = await postgres.NewSchemaAsync();
        await using var c = await QueueNode.StartProducerAsync(postgres.ConnectionString, other, node: "c");
        var defaults = await ClusterOf(c).UpdateSettingsAsync(s => s with { MaxRunningPerKey = 1 }, "carol");
        Assert.Equal(0L, defaults.Version);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {other}.queue_settings"));
    }

    public static TheoryData<string, string> InvalidChanges() => new()
    {
        { "WorkersPerNode=0", "WorkersPerNode must be at least 1" },
        { "WorkersPerNode=9", "WorkersPerNode must not exceed the executor's MaxWorkerCount (8)" },
        { "MaxRunning=0", "MaxRunning must be at least 1" },
        { "MaxRunningPerKey=0", "MaxRunningPerKey must be at least 1" },
        { "StartsPerSecond=0", "StartsPerSecond must be a finite number above 0" },
        { "StartsPerSecond=NaN", "StartsPerSecond must be a finite number above 0" },
        { "StartsPerSecond=Infinity", "StartsPerSecond must be a finite number above 0" },
        { "StartBurst=0", "StartBurst must be at least 1" },
    };

    [Theory]
    [MemberData(nameof(InvalidChanges))]
    public async Task UpdateSettings_Invalid_NamesTheSetting_AndChangesNothing(string change, string message)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(node);
        var (setting, value) = (change.Split('=')[0], change.Split('=')[1]);
        Func<WorkQueueClusterSettings, WorkQueueClusterSettings> invalid = setting switch
        {
            "WorkersPerNode" => s => s with { WorkersPerNode = int.Parse(value, CultureInfo.InvariantCulture) },
            "MaxRunning" => s => s with { MaxRunning = int.Parse(value, CultureInfo.InvariantCulture) },
            "MaxRunningPerKey" => s => s with { MaxRunningPerKey = int.Parse(value, CultureInfo.InvariantCulture) },
            "StartsPerSecond" => s => s with { StartsPerSecond = double.Parse(value, CultureInfo.InvariantCulture) },
            _ => s => s with { StartBurst = int.Parse(value, CultureInfo.InvariantCulture) },
        };

        // Before any change (no row yet), and after a valid one (a row at version 1).
        var error = await Assert.ThrowsAsync<ArgumentException>(() => cluster.UpdateSettingsAsync(invalid, "operator"));
        Assert.Contains(message, error.Message, StringComparison.Ordinal);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.queue_settings"));

        var valid = await cluster.UpdateSettingsAsync(s => s with { WorkersPerNode = 3, MaxRunning = 7 }, "operator");
        error = await Assert.ThrowsAsync<ArgumentException>(() => cluster.UpdateSettingsAsync(s => invalid(s with { MaxRunning = 9 }), "operator"));
        Assert.Contains(message, error.Message, StringComparison.Ordinal);
        Assert.Equal("change", error.ParamName);
        Assert.Equal(valid, (await cluster.GetClusterAsync()).Settings);
    }

    [Theory]
    [InlineData("")]
    [InlineData("   ")]
    [InlineData("line\nbreak")]
    [InlineData("tab\there")]
    [InlineData(null)]
    public async Task UpdateSettings_InvalidChangedBy_NamesIt_AndChangesNothing(string? changedBy)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(node);
        foreach (var who in changedBy is null ? [null!, new string('x', 201)] : new[] { changedBy })
        {
            var error = await Assert.ThrowsAnyAsync<ArgumentException>(() => cluster.UpdateSettingsAsync(s => s with { MaxRunning = 5 }, who));
            Assert.Equal("changedBy", error.ParamName);
        }

        Assert.Equal(0L, (await cluster.GetClusterAsync()).Settings.Version);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.queue_settings"));
    }

    [Fact]
    public async Task GetCluster_CountsMatchTheTable()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var operatorNode = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        var cluster = ClusterOf(operatorNode);

        // Handlers that take a minute: each node holds two items (one worker, two claims per worker) while the test reads.
        await using var first = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.FromMinutes(1), Lease, environment: Member("node-0"));
        await using var second = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.FromMinutes(1), Lease, environment: Member("node-1"));
        await operatorNode.Queue.EnqueueManyAsync(Enumerable.Range(0, 10).Select(i => new Notice(i)));
        await operatorNode.Queue.EnqueueManyAsync(Enumerable.Range(10, 3).Select(i => new Notice(i)), new EnqueueOptions { Delay = TimeSpan.FromHours(1) });
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1").Result == 4, "both nodes hold two items");
        await operatorNode.Queue.CancelAsync((await postgres.ScalarAsync<long[]>($"SELECT array_agg(id) FROM {schema}.items WHERE state = 0"))[0]);

        var read = await WaitForClusterAsync(cluster, c => c.Nodes.Count == 2 && c.Nodes.All(n => n.InFlight == 2), "both rows show two items in flight");

        Assert.Equal((5L, 3L, 4L, 1L, 0L, 0L), (read.Storage.Ready, read.Storage.Scheduled, read.Storage.Running, read.Storage.Cancelled, read.Storage.Completed, read.Storage.DeadLettered));
        Assert.Equal(await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0"), read.Storage.Ready);
        Assert.Equal(await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 1"), read.LimitUse.Running);
        Assert.Equal(read.LimitUse.Running, read.Nodes.Sum(n => n.InFlight));
        Assert.Equal(await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.nodes WHERE queue = 'notices' AND expires_at > now()"), read.Nodes.Count);
        Assert.Equal(await postgres.ScalarAsync<long>($"SELECT sum(worker_count) FROM {schema}.nodes WHERE queue = 'notices'"), read.Nodes.Sum(n => (long)n.WorkerCount));
        Assert.Equal((0L, 0.0, TimeSpan.Zero), (read.LimitUse.WaitingForPermit, read.LimitUse.StartsLastSecond, read.LimitUse.OldestPermitWait)); // no cluster limit reports yet
        Assert.Equal(ClusterSettingsDefaults, read.Settings);
        Assert.All(read.Nodes, n =>
        {
            Assert.Equal(Environment.MachineName, n.Host);
            Assert.Contains(n.ProcessId, new[] { first.Id, second.Id });
            Assert.False(string.IsNullOrEmpty(n.Version));
            Assert.True(n.LastSeen >= n.StartedAt);
        });
    }

    [Fact]
    public async Task SchemaReady_NamesTheNodeByItsClusterName_AndItsLeaseOwner()
    {
        var logs = new Microsoft.Extensions.Logging.Testing.FakeLogCollector();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, await postgres.NewSchemaAsync(), new Behavior(),
            storage: o => o.NodeName = "orders-7",
            services: s => s.AddLogging(b => b.AddProvider(new Microsoft.Extensions.Logging.Testing.FakeLoggerProvider(logs))));

        var ready = Assert.Single(logs.GetSnapshot(), e => e.Id.Id == 302);
        Assert.Equal("orders-7", ready.GetStructuredStateValue("NodeName"));
        Assert.Equal(((PostgreSqlWorkQueue<Notice>)node.Queue).NodeId, ready.GetStructuredStateValue("NodeId"));
        Assert.Contains("node orders-7, lease owner ", ready.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void InvalidNodeSettings_AreRefusedAtRegistration_EachNamed()
    {
        var services = new ServiceCollection();
        var error = Assert.Throws<ArgumentException>(() => services.AddWorkQueue<Notice, TestHandler>("payments").UsePostgreSql("Host=localhost", NoticeJson.Default.Notice, o =>
        {
            o.NodeName = "bad\nname";
            o.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(10);
        }));
        Assert.Contains("NodeName must be", error.Message, StringComparison.Ordinal);
        Assert.Contains("NodeHeartbeatInterval must be", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void UsePostgreSql_RegistersTheQueueAsACluster()
    {
        var services = new ServiceCollection();
        services.AddLogging();
        services.AddWorkQueue<Notice, TestHandler>("payments").UsePostgreSql("Host=localhost", NoticeJson.Default.Notice);
        services.AddWorkQueue<Notice, TestHandler>("refunds").UsePostgreSql("Host=localhost", NoticeJson.Default.Notice);
        using var provider = services.BuildServiceProvider();

        Assert.Equal(["payments", "refunds"], provider.GetServices<IWorkQueueCluster>().Select(c => c.QueueName));
    }

    private static readonly WorkQueueClusterSettings ClusterSettingsDefaults = new();

    private static IWorkQueueCluster ClusterOf(QueueNode node) => node.Host.Services.GetServices<IWorkQueueCluster>().Single();

    private static WorkQueueClusterNode Node(WorkQueueCluster cluster, string name) => cluster.Nodes.Single(n => n.Name == name);

    /// <summary>A consumer's cluster membership: its name, a short heartbeat, a line per worker count, and optionally a local pin.</summary>
    private static Dictionary<string, string> Member(string name, int? pinWorkers = null)
    {
        var environment = new Dictionary<string, string> { ["BW_NODE_NAME"] = name, ["BW_HEARTBEAT_MS"] = "500", ["BW_REPORT_WORKERS"] = "1" };
        if (pinWorkers is int workers)
        {
            environment["BW_PIN_WORKERS"] = workers.ToString(CultureInfo.InvariantCulture);
        }

        return environment;
    }

    private static async Task<WorkQueueCluster> WaitForClusterAsync(IWorkQueueCluster cluster, Func<WorkQueueCluster, bool> condition, string what)
    {
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (true)
        {
            var read = await cluster.GetClusterAsync();
            if (condition(read))
            {
                return read;
            }

            Assert.True(DateTime.UtcNow < deadline, $"Timed out waiting until {what}; last read: settings {read.Settings}, nodes {string.Join("; ", read.Nodes)}.");
            await Task.Delay(20); // the poll's interval: the wait is for the condition, up to the patience
        }
    }
}
