using System.Net;
using System.Text;
using System.Text.Json;
using BoundedWork.AspNetCore.Internal;
using BoundedWork.Hosting;
using BoundedWork.Testing.Cluster;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The console's cluster endpoints over an in-memory cluster (the PostgreSQL one implements the same contract): the
/// cluster read as the storage describes it, fleet-wide settings changed field by field, every hostile input refused
/// naming its field with nothing changed, secured and audited like every console change, and the same over the socket.
/// </summary>
public sealed partial class ClusterEndpointTests
{
    private const string Path = "/bounded-work/queues/payments/cluster";

    internal static readonly DateTimeOffset Now = new(2026, 11, 24, 16, 0, 0, TimeSpan.Zero);

    [Fact]
    public async Task Get_DescribesNodesLimitsAndStoredItems_AsTheStorageReadsThem()
    {
        var cluster = NewCluster();
        await cluster.UpdateSettingsAsync(s => s with { MaxRunning = 20, StartsPerSecond = 12.5, WorkersPerNode = 8 }, "bob");
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.GetAsync(Path);
        var json = await response.JsonAsync();

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("payments", json.GetProperty("queue").GetString());
        Assert.Equal(Now, json.GetProperty("readAt").GetDateTimeOffset());
        var settings = json.GetProperty("settings");
        Assert.Equal(
            ["workersPerNode", "maxRunning", "maxRunningPerKey", "startsPerSecond", "startBurst", "version", "updatedAt", "updatedBy", "fairShare"],
            settings.EnumerateObject().Select(p => p.Name));
        Assert.Equal(8, settings.GetProperty("workersPerNode").GetInt32());
        Assert.Equal(JsonValueKind.Null, settings.GetProperty("startBurst").ValueKind);
        Assert.Equal(1, settings.GetProperty("version").GetInt64());
        Assert.Equal("bob", settings.GetProperty("updatedBy").GetString());
        var limits = json.GetProperty("limits");
        Assert.Equal(17, limits.GetProperty("running").GetInt64());
        Assert.Equal(12, limits.GetProperty("handlersRunning").GetInt64());
        Assert.Equal(5, limits.GetProperty("reservedOrSettling").GetInt64());
        Assert.Equal(20, limits.GetProperty("maxRunning").GetInt32());
        Assert.Equal(12.5, limits.GetProperty("startsPerSecond").GetDouble());
        Assert.Equal(11.5, limits.GetProperty("startsLastSecond").GetDouble());
        Assert.Equal(40, limits.GetProperty("waitingForPermit").GetInt64());
        Assert.Equal(2500, limits.GetProperty("oldestPermitWaitMs").GetDouble());
        var nodes = json.GetProperty("nodes").EnumerateArray().ToList();
        Assert.Equal(["node-a", "node-b"], nodes.Select(n => n.GetProperty("name").GetString()));
        Assert.Equal(
            ["name", "host", "processId", "version", "startedAt", "lastSeen", "workers", "inFlight", "handlersRunning", "completed", "failed", "settingsVersion", "pinnedLocally"],
            nodes[0].EnumerateObject().Select(p => p.Name));
        Assert.Equal(("web-2", 202, 4, 9L, 5, true), (nodes[1].GetProperty("host").GetString(), nodes[1].GetProperty("processId").GetInt32(), nodes[1].GetProperty("workers").GetInt32(), nodes[1].GetProperty("inFlight").GetInt64(), nodes[1].GetProperty("handlersRunning").GetInt32(), nodes[1].GetProperty("pinnedLocally").GetBoolean()));
        var storage = json.GetProperty("storage");
        Assert.Equal((1234L, 17L, 3L, 3500.0), (storage.GetProperty("ready").GetInt64(), storage.GetProperty("running").GetInt64(), storage.GetProperty("deadLettered").GetInt64(), storage.GetProperty("oldestReadyAgeMs").GetDouble()));

        // The executor's document says the console serves its queue's cluster; an executor without one says not.
        var executor = await (await server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync();
        Assert.True(executor.GetProperty("storage").GetProperty("cluster").GetBoolean());
    }

    [Fact]
    public async Task Endpoints_RequireThePolicy_401Anonymous_403WithoutTheRole_AndChangeNothing()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        using var anonymous = server.CreateClient(null, null);
        using var outsider = server.CreateClient("bob", "sales");

        foreach (var client in new[] { anonymous, outsider })
        {
            var expected = client == anonymous ? HttpStatusCode.Unauthorized : HttpStatusCode.Forbidden;
            Assert.Equal(expected, (await client.GetAsync(Path)).StatusCode);
            using var patch = await client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunning": 5}""");
            Assert.Equal(expected, patch.StatusCode);
        }

        Assert.Equal(0, cluster.Reads);
        Assert.Empty(cluster.Changes);
    }

    [Fact]
    public async Task Patch_SetsOnlyTheFieldsNamed_NullClearsALimit_PassesTheOperatorAsChangedBy_AndIsAuditedWithOldAndNewValues()
    {
        var cluster = NewCluster();
        await cluster.UpdateSettingsAsync(s => s with { MaxRunning = 20, StartBurst = 4, StartsPerSecond = 10 }, "setup");
        await using var server = await StartAsync(cluster);
        using var recorder = new AdminMeterRecorder(server.App.Services);

        using var response = await server.Client.SendChangeAsync(
            HttpMethod.Patch, Path, """{"workersPerNode": 6, "maxRunning": null, "maxRunningPerKey": 3, "startsPerSecond": 2.5}""");
        var json = await response.JsonAsync();

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var stored = cluster.Settings;
        Assert.Equal((6, (int?)null, 3, 2.5, 4, 2L, "alice"), (stored.WorkersPerNode!.Value, stored.MaxRunning, stored.MaxRunningPerKey, stored.StartsPerSecond!.Value, stored.StartBurst!.Value, stored.Version, stored.UpdatedBy));
        Assert.Equal("alice", cluster.Changes[^1].ChangedBy);
        Assert.Equal(20, json.GetProperty("previous").GetProperty("maxRunning").GetInt32());
        Assert.Equal(JsonValueKind.Null, json.GetProperty("current").GetProperty("maxRunning").ValueKind);
        Assert.Equal(2, json.GetProperty("current").GetProperty("version").GetInt64());
        Assert.Equal("alice", json.GetProperty("current").GetProperty("updatedBy").GetString());

        var entry = Assert.Single(server.Logs.WithEvent("ClusterSettingsChanged"));
        Assert.Equal(211, entry.Id.Id);
        Assert.Equal(LogLevel.Information, entry.Level);
        Assert.Equal("BoundedWork.Admin", entry.Category);
        Assert.Equal(
            [("QueueName", "payments"), ("User", "alice"), ("RemoteAddress", "127.0.0.1"), ("PreviousVersion", "1"), ("Version", "2"),
             ("PreviousWorkersPerNode", "none"), ("WorkersPerNode", "6"), ("PreviousMaxRunning", "20"), ("MaxRunning", "none"),
             ("PreviousMaxRunningPerKey", "1"), ("MaxRunningPerKey", "3"), ("PreviousStartsPerSecond", "10"), ("StartsPerSecond", "2.5"),
             ("PreviousStartBurst", "4"), ("StartBurst", "4")],
            entry.StructuredState!.Where(p => p.Key != "{OriginalFormat}").Select(p => (p.Key, p.Value)));
        Assert.Equal(
            [
                ("boundedwork.admin.changes", 1L, "payments", "workersPerNode"),
                ("boundedwork.admin.changes", 1L, "payments", "maxRunning"),
                ("boundedwork.admin.changes", 1L, "payments", "maxRunningPerKey"),
                ("boundedwork.admin.changes", 1L, "payments", "startsPerSecond"),
            ],
            recorder.Measurements);
    }

    public static TheoryData<string, string> HostileBodies() => new()
    {
        { "", "body" },
        { "{}", "body" },
        { "null", "body" },
        { "[{\"maxRunning\": 5}]", "body" },
        { "{\"maxRunning\": 5} {\"maxRunning\": 6}", "body" },
        { "{\"maxRunning\": 5", "body" },
        { "{\"maxRunning\": [5]}", "maxRunning" },
        { "{\"maxRunning\": {\"value\": 5}}", "maxRunning" },
        { "{\"maxRunning\": \"5\"}", "maxRunning" },
        { "{\"maxRunning\": true}", "maxRunning" },
        { "{\"maxRunning\": 0}", "maxRunning" },
        { "{\"maxRunning\": -3}", "maxRunning" },
        { "{\"maxRunning\": 2.5}", "maxRunning" },
        { "{\"maxRunning\": 1e400}", "maxRunning" },
        { "{\"maxRunning\": 99999999999999999999}", "maxRunning" },
        { "{\"maxRunning\": 1000001}", "maxRunning" },
        { "{\"maxRunning\": 5, \"MaxRunning\": 6}", "maxRunning" },
        { "{\"workersPerNode\": 0}", "workersPerNode" },
        { "{\"workersPerNode\": 5000}", "workersPerNode" },
        { "{\"workersPerNode\": \"eight\"}", "workersPerNode" },
        { "{\"maxRunningPerKey\": null}", "maxRunningPerKey" },
        { "{\"maxRunningPerKey\": 0}", "maxRunningPerKey" },
        { "{\"startsPerSecond\": \"NaN\"}", "startsPerSecond" },
        { "{\"startsPerSecond\": \"Infinity\"}", "startsPerSecond" },
        { "{\"startsPerSecond\": NaN}", "body" },
        { "{\"startsPerSecond\": Infinity}", "body" },
        { "{\"startsPerSecond\": 1e400}", "startsPerSecond" },
        { "{\"startsPerSecond\": 1e308}", "startsPerSecond" },
        { "{\"startsPerSecond\": 0}", "startsPerSecond" },
        { "{\"startsPerSecond\": -1}", "startsPerSecond" },
        { "{\"startsPerSecond\": [1, 2]}", "startsPerSecond" },
        { "{\"startBurst\": 0}", "startBurst" },
        { "{\"startBurst\": 1.5}", "startBurst" },
        { "{\"speed\": 1}", "speed" },
        { "{\"maxRunning\": 5, \"speed\": 1}", "speed" },
        { "{\"maxRunning\": 5, \"version\": 9}", "version" },
        { "{\"maxRunning\": 5, \"updatedBy\": \"mallory\"}", "updatedBy" },
        { "{\"maxRunning\": 5 /* comment */}", "body" },
    };

    [Theory]
    [MemberData(nameof(HostileBodies))]
    public async Task Patch_HostileBody_400NamingTheField_NothingChanges_RefusalLogged(string body, string field)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, body);

        await AssertRefused(response, field, cluster, server);
    }

    [Theory]
    [InlineData(new byte[] { (byte)'{', (byte)'"', 0xFF, 0xFE, (byte)'"', (byte)':', (byte)'1', (byte)'}' }, "body")]
    [InlineData(new byte[] { (byte)'{', (byte)'"', (byte)'m', (byte)'a', (byte)'x', (byte)'R', (byte)'u', (byte)'n', (byte)'n', (byte)'i', (byte)'n', (byte)'g', (byte)'"', (byte)':', (byte)'"', 0xC3, (byte)'"', (byte)'}' }, "maxRunning")]
    [InlineData(new byte[] { (byte)'{', (byte)'"', (byte)'m', (byte)'a', (byte)'x', (byte)'R', (byte)'u', (byte)'n', (byte)'n', (byte)'i', (byte)'n', (byte)'g', (byte)'"', (byte)':', (byte)'5', 0xFF, (byte)'}' }, "body")]
    public async Task Patch_MalformedUtf8_400NamingTheField_NothingChanges(byte[] body, string field)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendRawChangeAsync(HttpMethod.Patch, Path, body);

        await AssertRefused(response, field, cluster, server);
    }

    [Fact]
    public async Task Patch_ABodyOverTheCap_413_NothingChanges()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, $$"""{"maxRunning": 5, "pad": "{{new string('x', ClusterSettingsRequest.MaxBodyBytes)}}"}""");

        await AssertRefused(response, "body", cluster, server, HttpStatusCode.RequestEntityTooLarge);
    }

    [Fact]
    public async Task Patch_JsonBodyWithAnotherContentType_415_WithoutTheHeader_400_NothingChanges()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var plain = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunning": 5}""", contentType: "text/plain");
        using var form = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunning": 5}""", contentType: "application/x-www-form-urlencoded");
        using var headerless = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunning": 5}""", header: false);

        Assert.Equal(HttpStatusCode.UnsupportedMediaType, plain.StatusCode);
        Assert.Equal(HttpStatusCode.UnsupportedMediaType, form.StatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, headerless.StatusCode);
        Assert.Equal("X-BoundedWork-Admin", (await headerless.JsonAsync()).GetProperty("header").GetString());
        Assert.Empty(cluster.Changes);
        Assert.Equal(
            ["unsupported_media_type", "unsupported_media_type", "missing_header"],
            server.Logs.WithEvent("ClusterSettingsChangeRefused").Select(e => e.GetStructuredStateValue("Reason")));
    }

    [Theory]
    [InlineData("/bounded-work/queues/nope/cluster")]
    [InlineData("/bounded-work/queues/mail/cluster")]
    public async Task UnknownQueue_OrAQueueWithoutACluster_404_ForReadAndChange(string path)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        using var recorder = new AdminMeterRecorder(server.App.Services);

        using var read = await server.Client.GetAsync(path);
        using var change = await server.Client.SendChangeAsync(HttpMethod.Patch, path, """{"maxRunning": 5}""");

        Assert.Equal(HttpStatusCode.NotFound, read.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, change.StatusCode);
        Assert.Contains("has a cluster here", (await change.JsonAsync()).GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Empty(cluster.Changes);
        Assert.Equal([("boundedwork.admin.refused", 1L, "(unknown)", "not_found")], recorder.Measurements);
        var executor = await (await server.Client.GetAsync("/bounded-work/executors/mail")).JsonAsync();
        Assert.False(executor.TryGetProperty("storage", out _));
    }

    [Fact]
    public async Task WrongMethod_405_ListingGetHeadAndPatch()
    {
        await using var server = await StartAsync(NewCluster());

        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, Path, """{"maxRunning": 5}""");

        Assert.Equal(HttpStatusCode.MethodNotAllowed, response.StatusCode);
        Assert.Equal(["GET", "HEAD", "PATCH"], response.Content.Headers.Allow.Order(StringComparer.Ordinal));
    }

    [Fact]
    public async Task StorageFailure_503_LoggedAsAnError_AndChangesNothing()
    {
        var cluster = NewCluster();
        cluster.Failure = new InvalidOperationException("connection refused");
        await using var server = await StartAsync(cluster);

        using var read = await server.Client.GetAsync(Path);
        using var change = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunning": 5}""");

        foreach (var response in new[] { read, change })
        {
            Assert.Equal(HttpStatusCode.ServiceUnavailable, response.StatusCode);
            var problem = await response.JsonAsync();
            Assert.Contains("connection refused", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
            Assert.Equal("payments", problem.GetProperty("queue").GetString());
        }

        Assert.Equal(2, server.Logs.WithEvent("ClusterStorageFailed").Count);
        Assert.Empty(server.Logs.WithEvent("ClusterSettingsChanged"));
        Assert.Equal("unavailable", Assert.Single(server.Logs.WithEvent("ClusterSettingsChangeRefused")).GetStructuredStateValue("Reason"));
    }

    [Fact]
    public void FieldOf_TheStoragesValidationMessage_NamesTheJsonField()
    {
        Assert.Equal("maxRunning", ClusterSettingsRequest.FieldOf(new ArgumentException("MaxRunning must be at least 1", "settings")));
        Assert.Equal("startBurst", ClusterSettingsRequest.FieldOf(new ArgumentOutOfRangeException("StartBurst", "too large")));
        Assert.Equal("body", ClusterSettingsRequest.FieldOf(new ArgumentException("Something else went wrong.")));

        // The PostgreSQL storage names the queue first: the setting after it is the field, the message leads with it.
        var storage = new ArgumentException("Invalid fleet-wide settings for work queue 'durable-demo': WorkersPerNode must not exceed the executor's MaxWorkerCount (32) (was 33).", "change");
        Assert.Equal("workersPerNode", ClusterSettingsRequest.FieldOf(storage));
        Assert.Equal("WorkersPerNode must not exceed the executor's MaxWorkerCount (32) (was 33).", ClusterSettingsRequest.WithoutStoragePrefix(storage.Message[..^" (Parameter 'change')".Length]));
        Assert.Equal("Something else went wrong.", ClusterSettingsRequest.WithoutStoragePrefix("Something else went wrong."));
    }

    [Fact]
    public async Task Patch_MaxRunningPerKeyOutOfRange_DoesNotSayNullClearsIt()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunningPerKey": 0}""");

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        var detail = (await response.JsonAsync()).GetProperty("detail").GetString();
        Assert.Contains("maxRunningPerKey must be between 1 and 1,000,000 (was 0); 1, the default, runs a key's items one at a time", detail, StringComparison.Ordinal);
        Assert.DoesNotContain("null clears it", detail, StringComparison.Ordinal); // null is refused for maxRunningPerKey
    }

    [Fact]
    public async Task LocalSocket_ReadsAndChangesTheCluster_AsKestrelDoes_AuditedWithTheSocketPeer()
    {
        var path = System.IO.Path.Combine(System.IO.Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster, path);

        // Reads and refusals answer with the same bytes over both transports.
        foreach (var (method, body) in new (string, string?)[] { ("GET", null), ("PATCH", """{"maxRunning": "5"}"""), ("PATCH", ""), ("PATCH", """{"speed": 1}"""), ("PUT", "{}") })
        {
            using var request = new HttpRequestMessage(new HttpMethod(method), Path);
            if (body is not null)
            {
                request.Content = new StringContent(body, Encoding.UTF8, "application/json");
                request.Headers.Add(TestKit.AdminHeader, "1");
            }

            using var overHttp = await server.Client.SendAsync(request);
            var socket = LocalSocketClient.Send(path, method, "/queues/payments/cluster", body);
            Assert.Equal((int)overHttp.StatusCode, socket.Status);
            if (method != "PUT")
            {
                Assert.Equal(await overHttp.Content.ReadAsStringAsync(), socket.Body);
            }
        }

        Assert.Equal(404, LocalSocketClient.Send(path, "GET", "/queues/nope/cluster").Status);
        var changed = LocalSocketClient.Send(path, "PATCH", "/queues/payments/cluster", """{"maxRunning": 7}""");

        Assert.Equal(200, changed.Status);
        Assert.Equal(7, cluster.Settings.MaxRunning);
        Assert.StartsWith("local socket peer (uid ", cluster.Changes.Single().ChangedBy, StringComparison.Ordinal);
        var entry = Assert.Single(server.Logs.WithEvent("ClusterSettingsChanged"));
        Assert.Equal("unix:" + path, entry.GetStructuredStateValue("RemoteAddress"));
    }

    [Fact]
    public async Task LocalSocket_StorageDoesNotAnswerAChange_503AtTheDeadline_NothingWritten_AndTheSocketServesOn()
    {
        var path = System.IO.Path.Combine(System.IO.Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
        var cluster = NewCluster();
        cluster.Hold = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously).Task; // never released
        await using var server = await StartAsync(cluster, path);

        var held = LocalSocketClient.Send(path, "PATCH", "/queues/payments/cluster", """{"maxRunning": 7}""");

        Assert.Equal(503, held.Status);
        Assert.Equal("payments", held.Json.GetProperty("queue").GetString());
        Assert.Contains("did not answer within the local socket's request deadline", held.Json.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Contains("the change may have been applied all the same", held.Json.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Empty(cluster.Changes);
        Assert.Empty(server.Logs.WithEvent("ClusterSettingsChanged"));
        Assert.Equal(200, LocalSocketClient.Send(path, "GET", "/queues/payments/cluster").Status);
    }

    [Theory]
    [InlineData(-5_000)] // the deadline passed long ago
    [InlineData(-1)] // it passed a moment ago
    [InlineData(0)] // it passes now
    [InlineData(1)] // it is about to pass: a check and then a second clock read would see it gone
    public void AnAnswerTheDeadlineOvertook_StillGetsTheLingerToGoOut_NeverATimeout(long millisecondsLeft)
    {
        var now = 1_000_000_000L;
        var deadline = now + (millisecondsLeft * System.Diagnostics.Stopwatch.Frequency / 1000);

        Assert.Equal(1000, BoundedWork.AspNetCore.Internal.LocalSocketListener.SendTimeoutMilliseconds(deadline, now));
    }

    [Fact]
    public void AnAnswerBeforeTheDeadline_MayTakeWhatIsLeftOfIt()
    {
        var now = 1_000_000_000L;

        Assert.Equal(4000, BoundedWork.AspNetCore.Internal.LocalSocketListener.SendTimeoutMilliseconds(now + (4 * System.Diagnostics.Stopwatch.Frequency), now));
    }

    private static async Task AssertRefused(HttpResponseMessage response, string field, InMemoryWorkQueueCluster cluster, AdminServer server, HttpStatusCode status = HttpStatusCode.BadRequest)
    {
        var text = await response.Content.ReadAsStringAsync();
        Assert.True(response.StatusCode == status, text);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        var problem = JsonDocument.Parse(text).RootElement;
        Assert.True(problem.GetProperty("errors").TryGetProperty(field, out _), text);
        Assert.Equal("payments", problem.GetProperty("queue").GetString());
        Assert.Empty(cluster.Changes);
        Assert.Equal(0, cluster.Settings.Version);
        Assert.Empty(server.Logs.WithEvent("ClusterSettingsChanged"));
        Assert.Equal("invalid", Assert.Single(server.Logs.WithEvent("ClusterSettingsChangeRefused")).GetStructuredStateValue("Reason"));
    }

    /// <summary>Queue "payments": two nodes, 17 items running (12 handlers, 5 reserved or settling) of a limit, 40 held back, stored items in every state.</summary>
    internal static InMemoryWorkQueueCluster NewCluster()
    {
        var cluster = new InMemoryWorkQueueCluster("payments", new FakeTimeProvider(Now));
        cluster.SetNodes(
            new WorkQueueClusterNode { Name = "node-b", Host = "web-2", ProcessId = 202, Version = "1.4.0", StartedAt = Now.AddHours(-1), LastSeen = Now.AddSeconds(-0.5), WorkerCount = 4, InFlight = 9, HandlersRunning = 5, Completed = 300, Failed = 1, SettingsVersion = 1, PinnedLocally = true },
            new WorkQueueClusterNode { Name = "node-a", Host = "web-1", ProcessId = 101, Version = "1.4.0", StartedAt = Now.AddHours(-2), LastSeen = Now.AddSeconds(-0.2), WorkerCount = 8, InFlight = 8, HandlersRunning = 7, Completed = 1200, Failed = 3, SettingsVersion = 1 });
        cluster.SetStorage(new WorkQueueStorageStatistics { Ready = 1234, Scheduled = 5, Running = 17, DeadLettered = 3, Completed = 4000, Cancelled = 2, OldestReadyAge = TimeSpan.FromSeconds(3.5), IsAvailable = true, ReadAt = Now });
        cluster.SetLimitUse(new WorkQueueClusterLimitUse { Running = 17, HandlersRunning = 12, WaitingForPermit = 40, StartsLastSecond = 11.5, OldestPermitWait = TimeSpan.FromSeconds(2.5) });
        return cluster;
    }

    /// <summary>The test server with the cluster of "payments" (and its storage, as a durable queue has); "mail" has neither.</summary>
    internal static Task<AdminServer> StartAsync(InMemoryWorkQueueCluster cluster, string? socketPath = null) =>
        AdminServer.StartAsync(configure: builder =>
        {
            builder.Services.AddSingleton<IWorkQueueCluster>(cluster);
            builder.Services.AddSingleton<IWorkQueueStorage>(new ClusterQueueStorage());
            if (socketPath is not null)
            {
                builder.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = socketPath);
            }
        });
}

/// <summary>The durable storage of queue "payments" as the executor's document shows it.</summary>
internal sealed class ClusterQueueStorage : IWorkQueueStorage
{
    public string QueueName => "payments";

    public string StorageKind => "PostgreSql";

    public WorkQueueStorageStatistics Statistics { get; } = new() { IsAvailable = true, ReadAt = ClusterEndpointTests.Now };
}
