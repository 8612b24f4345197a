using System.Net;
using System.Text;
using System.Text.Json;
using BoundedWork.AspNetCore.Internal;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// Fair share across tenants of a durable queue through the console's cluster endpoint: <c>fairShare</c> in a PATCH
/// turns it on, sets only the fields it names and removes a tenant's weight with null; null turns it off; every change
/// is audited tenant by tenant; every hostile value is refused naming its field, with nothing changed; and the same
/// over the local socket.
/// </summary>
public sealed partial class ClusterEndpointTests
{
    [Fact]
    public async Task Patch_FairShare_TurnsItOn_SetsOnlyTheFieldsNamed_NullRemovesAWeight_NullTurnsItOff_AuditedTenantByTenant()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        using var recorder = new AdminMeterRecorder(server.App.Services);

        using var on = await server.Client.SendChangeAsync(
            HttpMethod.Patch, Path, """{"fairShare": {"defaultWeight": 2, "tenantWeights": {"acme": 4, "globex": 3}, "maxRunningPerTenant": 5}}""");
        var onJson = await on.JsonAsync();

        Assert.Equal(HttpStatusCode.OK, on.StatusCode);
        var stored = cluster.Settings.FairShare!;
        Assert.Equal((2, 5, 4, 3), (stored.DefaultWeight, stored.MaxRunningPerTenant!.Value, stored.GetWeight("acme"), stored.GetWeight("globex")));
        Assert.Equal(JsonValueKind.Null, onJson.GetProperty("previous").GetProperty("fairShare").ValueKind);
        var view = onJson.GetProperty("current").GetProperty("fairShare");
        Assert.Equal(["defaultWeight", "tenantWeights", "maxRunningPerTenant", "startsPerSecondPerTenant", "startsBurstPerTenant"], view.EnumerateObject().Select(p => p.Name));
        Assert.Equal([("acme", 4), ("globex", 3)], view.GetProperty("tenantWeights").EnumerateObject().Select(p => (p.Name, p.Value.GetInt32())));

        // Only the fields named change: the default weight stays, acme's own weight goes, the bound is cleared.
        using var edit = await server.Client.SendChangeAsync(
            HttpMethod.Patch, Path, """{"fairShare": {"tenantWeights": {"acme": null, "initech": 2}, "maxRunningPerTenant": null}}""");

        Assert.Equal(HttpStatusCode.OK, edit.StatusCode);
        stored = cluster.Settings.FairShare!;
        Assert.Equal(2, stored.DefaultWeight);
        Assert.Null(stored.MaxRunningPerTenant);
        Assert.Equal([("globex", 3), ("initech", 2)], stored.Weights.OrderBy(w => w.Key, StringComparer.Ordinal).Select(w => (w.Key, w.Value)));

        using var read = await server.Client.GetAsync(Path);
        var readView = (await read.JsonAsync()).GetProperty("settings").GetProperty("fairShare");
        Assert.Equal(2, readView.GetProperty("defaultWeight").GetInt32());
        Assert.Equal(JsonValueKind.Null, readView.GetProperty("maxRunningPerTenant").ValueKind);

        using var off = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"fairShare": null}""");

        Assert.Equal(HttpStatusCode.OK, off.StatusCode);
        Assert.Null(cluster.Settings.FairShare);
        Assert.Equal(JsonValueKind.Null, (await off.JsonAsync()).GetProperty("current").GetProperty("fairShare").ValueKind);

        var entries = server.Logs.WithEvent("ClusterFairShareChanged");
        Assert.All(entries, e => Assert.Equal((214, LogLevel.Information), (e.Id.Id, e.Level)));
        Assert.Equal(
            [
                "off -> on, defaultWeight 1 -> 2, maxRunningPerTenant none -> 5, tenantWeights['acme'] none -> 4, tenantWeights['globex'] none -> 3",
                "maxRunningPerTenant 5 -> none, tenantWeights['acme'] 4 -> none, tenantWeights['initech'] none -> 2",
                "on -> off",
            ],
            entries.Select(e => e.GetStructuredStateValue("FairShareChange")));
        Assert.Equal(["alice", "alice", "alice"], entries.Select(e => e.GetStructuredStateValue("User")));
        Assert.Equal(["1", "2", "3"], entries.Select(e => e.GetStructuredStateValue("Version")));
        Assert.Equal(3, server.Logs.WithEvent("ClusterSettingsChanged").Count); // the settings' own entry, as for every change
        Assert.Equal(Enumerable.Repeat(("boundedwork.admin.changes", 1L, (string?)"payments", (string?)"fairShare"), 3), recorder.Measurements);
    }

    [Fact]
    public async Task Patch_StartsPerTenant_SetsTheRateAndTheBurst_NullClearsEach_ShownAndAudited()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var on = await server.Client.SendChangeAsync(
            HttpMethod.Patch, Path, """{"fairShare": {"startsPerSecondPerTenant": 2.5, "startsBurstPerTenant": 10}}""");

        Assert.Equal(HttpStatusCode.OK, on.StatusCode);
        var stored = cluster.Settings.FairShare!;
        Assert.Equal((2.5, 10, 1, (int?)null), (stored.StartsPerSecondPerTenant!.Value, stored.StartsBurstPerTenant!.Value, stored.DefaultWeight, stored.MaxRunningPerTenant));
        var view = (await on.JsonAsync()).GetProperty("current").GetProperty("fairShare");
        Assert.Equal((2.5, 10), (view.GetProperty("startsPerSecondPerTenant").GetDouble(), view.GetProperty("startsBurstPerTenant").GetInt32()));

        using var rateOnly = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"fairShare": {"startsPerSecondPerTenant": 40}}""");
        using var clearRate = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"fairShare": {"startsPerSecondPerTenant": null}}""");
        using var clearBurst = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"fairShare": {"startsBurstPerTenant": null}}""");

        Assert.Equal((HttpStatusCode.OK, HttpStatusCode.OK, HttpStatusCode.OK), (rateOnly.StatusCode, clearRate.StatusCode, clearBurst.StatusCode));
        stored = cluster.Settings.FairShare!;
        Assert.Equal(((double?)null, (int?)null), (stored.StartsPerSecondPerTenant, stored.StartsBurstPerTenant));
        using var read = await server.Client.GetAsync(Path);
        var readView = (await read.JsonAsync()).GetProperty("settings").GetProperty("fairShare");
        Assert.Equal(
            (JsonValueKind.Null, JsonValueKind.Null),
            (readView.GetProperty("startsPerSecondPerTenant").ValueKind, readView.GetProperty("startsBurstPerTenant").ValueKind));
        Assert.Equal(
            [
                "off -> on, startsPerSecondPerTenant none -> 2.5, startsBurstPerTenant none -> 10",
                "startsPerSecondPerTenant 2.5 -> 40",
                "startsPerSecondPerTenant 40 -> none",
                "startsBurstPerTenant 10 -> none",
            ],
            server.Logs.WithEvent("ClusterFairShareChanged").Select(e => e.GetStructuredStateValue("FairShareChange")));
    }

    [Fact]
    public async Task Patch_AnEmptyFairShareObject_TurnsItOnWithItsDefaults_AndOtherFieldsLeaveItAlone()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var on = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"fairShare": {}}""");
        using var other = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunning": 9}""");

        Assert.Equal((HttpStatusCode.OK, HttpStatusCode.OK), (on.StatusCode, other.StatusCode));
        Assert.Equal(new WorkQueueFairShare(), cluster.Settings.FairShare);
        Assert.Single(server.Logs.WithEvent("ClusterFairShareChanged")); // the second change did not touch it
    }

    public static TheoryData<string, string> HostileFairShareBodies() => new()
    {
        { """{"fairShare": 4}""", "fairShare" },
        { """{"fairShare": "on"}""", "fairShare" },
        { """{"fairShare": true}""", "fairShare" },
        { """{"fairShare": [{"defaultWeight": 2}]}""", "fairShare" },
        { """{"fairShare": {"defaultWeight": "2"}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": [2]}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": 2.5}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": 0}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": -1}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": 1001}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": 1e400}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": null}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"tenantWeights": {"acme": "4"}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": [4]}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": {"weight": 4}}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": 2.5}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": 0}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": -4}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": 1001}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": true}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"": 4}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"ac\r\nme": 4}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme\u0000": 4}}}""", "fairShare.tenantWeights" },
        { "{\"fairShare\": {\"tenantWeights\": {\"" + new string('t', 101) + "\": 4}}}", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"acme": 4, "acme": 5}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {}}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": ["acme", 4]}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": "acme=4"}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": null}}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"maxRunningPerTenant": 0}}""", "fairShare.maxRunningPerTenant" },
        { """{"fairShare": {"maxRunningPerTenant": "5"}}""", "fairShare.maxRunningPerTenant" },
        { """{"fairShare": {"maxRunningPerTenant": 1.5}}""", "fairShare.maxRunningPerTenant" },
        { """{"fairShare": {"maxRunningPerTenant": 1000001}}""", "fairShare.maxRunningPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": "2.5"}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": [2.5]}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": {"rate": 2.5}}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": "NaN"}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": "Infinity"}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": "-Infinity"}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": true}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": -1}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": 0}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": -0.0}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": 1e400}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": -1e400}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": 1000001}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": 2, "startsPerSecondPerTenant": 3}}""", "fairShare.startsPerSecondPerTenant" },
        { """{"fairShare": {"startsBurstPerTenant": 0}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"startsBurstPerTenant": -3}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"startsBurstPerTenant": 2.5}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"startsBurstPerTenant": 1e400}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"startsBurstPerTenant": "10"}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"startsBurstPerTenant": [10]}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"startsBurstPerTenant": 1000001}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"startsPerSecondPerTenant": 2, "startsBurstPerTenant": 0}}""", "fairShare.startsBurstPerTenant" },
        { """{"fairShare": {"weights": {"acme": 4}}}""", "fairShare.weights" },
        { """{"fairShare": {"defaultWeight": 2, "DefaultWeight": 3}}""", "fairShare.defaultWeight" },
        { """{"fairShare": {"defaultWeight": 2}, "fairShare": null}""", "fairShare" },
        { """{"fairShare": {"defaultWeight": 2}, "maxRunning": 0}""", "maxRunning" },
        { """{"fairShare": {"defaultWeight": 2, "tenantWeights": {"acme": 0}}, "maxRunning": 5}""", "fairShare.tenantWeights" },
        { """{"fairShare": {"tenantWeights": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}}}""", "body" },
    };

    [Theory]
    [MemberData(nameof(HostileFairShareBodies))]
    public async Task Patch_HostileFairShare_400NamingTheField_NothingChanges_RefusalLogged(string body, string field)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, body);

        await AssertRefused(response, field, cluster, server);
        Assert.Empty(server.Logs.WithEvent("ClusterFairShareChanged"));
    }

    [Fact]
    public async Task Patch_MoreTenantWeightsThanOneChangeSets_400SayingTheMost_NothingChanges()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        var weights = string.Join(", ", Enumerable.Range(0, FairShareRequest.MaxWeightsPerChange + 1).Select(i => $"\"t{i}\": 1"));

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, "{\"fairShare\": {\"tenantWeights\": {" + weights + "}}}");

        var detail = (await response.Content.ReadAsStringAsync());
        await AssertRefused(response, "fairShare.tenantWeights", cluster, server);
        Assert.Contains("names 101 tenants; one change sets at most 100", detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Patch_TenantWeightsWithManyBadEntries_ListsTheFirstTen_AndSaysThereMayBeMore()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        var weights = string.Join(", ", Enumerable.Range(0, 30).Select(i => $"\"t{i}\": 0"));

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, "{\"fairShare\": {\"tenantWeights\": {" + weights + "}}}");

        var problem = await response.JsonAsync();
        var messages = problem.GetProperty("errors").GetProperty("fairShare.tenantWeights").EnumerateArray().Select(m => m.GetString()!).ToList();
        Assert.Equal(11, messages.Count);
        Assert.Equal("fairShare.tenantWeights \"t0\" must be a whole number from 1 to 1000 (was 0). (null removes the tenant's own weight)", messages[0]);
        Assert.Equal("And possibly more problems, not listed.", messages[^1]);
        Assert.Null(cluster.Settings.FairShare);
    }

    [Theory]
    [InlineData(new byte[] { 0xFF, 0xFE }, "fairShare.tenantWeights")] // a tenant's name
    [InlineData(new byte[] { 0xC3 }, "fairShare.tenantWeights")] // a truncated sequence
    public async Task Patch_TenantNameInMalformedUtf8_400NamingTheField_NothingChanges(byte[] name, string field)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        byte[] body = [.. """{"fairShare": {"tenantWeights": {" """u8.ToArray()[..^1], .. name, .. "\": 4}}}"u8.ToArray()];

        using var response = await server.Client.SendRawChangeAsync(HttpMethod.Patch, Path, body);

        await AssertRefused(response, field, cluster, server);
    }

    [Fact]
    public async Task Patch_FairShareFieldNameInMalformedUtf8_400NamingFairShare_NothingChanges()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        byte[] body = [.. """{"fairShare": {" """u8.ToArray()[..^1], 0xFF, .. "\": 4}}"u8.ToArray()];

        using var response = await server.Client.SendRawChangeAsync(HttpMethod.Patch, Path, body);

        await AssertRefused(response, "fairShare", cluster, server);
    }

    [Fact]
    public void FieldOf_TheStoragesFairShareMessages_NameTheirJsonField()
    {
        static string FieldOf(string message) => ClusterSettingsRequest.FieldOf(new ArgumentException($"Invalid fleet-wide settings for work queue 'payments': {message}", "change"));

        Assert.Equal("fairShare.defaultWeight", FieldOf("FairShare.DefaultWeight must be between 1 and 1000 (was 0)."));
        Assert.Equal("fairShare.tenantWeights", FieldOf("FairShare.Weights must have at most 10000 entries (had 10001)."));
        Assert.Equal("fairShare.tenantWeights", FieldOf("FairShare.Weights['acme'] must be between 1 and 1000 (was 0)."));
        Assert.Equal("fairShare.maxRunningPerTenant", FieldOf("FairShare.MaxRunningPerTenant must be at least 1, or null for no bound (was 0)."));
        Assert.Equal("fairShare.startsPerSecondPerTenant", FieldOf("FairShare.StartsPerSecondPerTenant must be a finite number above 0, or null for no limit (was NaN)."));
        Assert.Equal("fairShare.startsBurstPerTenant", FieldOf("FairShare.StartsBurstPerTenant must be at least 1, or null for one second's worth of the rate (was 0)."));
        Assert.Equal("fairShare", FieldOf("FairShare cannot be set while MaxRunningPerKey is above 1 (it is 2): the fair claim keeps each ordering key's items one at a time."));
    }

    [Fact]
    public async Task Patch_FairShareTheStorageRefuses_400UnderTheFieldItNames_NothingChanges()
    {
        var cluster = NewCluster();
        await cluster.UpdateSettingsAsync(s => s with { MaxRunningPerKey = 2 }, "setup");
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"fairShare": {"defaultWeight": 2}}""");

        var text = await response.Content.ReadAsStringAsync();
        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Contains("FairShare cannot be set while MaxRunningPerKey is above 1", JsonDocument.Parse(text).RootElement.GetProperty("errors").GetProperty("fairShare")[0].GetString(), StringComparison.Ordinal);
        Assert.Equal((1L, (WorkQueueFairShare?)null), (cluster.Settings.Version, cluster.Settings.FairShare));
        Assert.Empty(server.Logs.WithEvent("ClusterFairShareChanged"));
    }

    [Fact]
    public async Task LocalSocket_ChangesFairShare_AsKestrelDoes_RefusesTheSameWay_AuditedWithTheSocketPeer()
    {
        var path = System.IO.Path.Combine(System.IO.Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster, path);

        foreach (var body in new[] { """{"fairShare": {"tenantWeights": {"acme": "4"}}}""", """{"fairShare": {"defaultWeight": 0}}""", """{"fairShare": 1}""", """{"fairShare": {"startsPerSecondPerTenant": "NaN"}}""", """{"fairShare": {"startsBurstPerTenant": 0}}""" })
        {
            using var request = new HttpRequestMessage(HttpMethod.Patch, Path) { Content = new StringContent(body, Encoding.UTF8, "application/json") };
            request.Headers.Add(TestKit.AdminHeader, "1");
            using var overHttp = await server.Client.SendAsync(request);
            var socket = LocalSocketClient.Send(path, "PATCH", "/queues/payments/cluster", body);
            Assert.Equal((400, await overHttp.Content.ReadAsStringAsync()), (socket.Status, socket.Body));
        }

        Assert.Empty(cluster.Changes);
        var changed = LocalSocketClient.Send(path, "PATCH", "/queues/payments/cluster", """{"fairShare": {"tenantWeights": {"acme": 4}}}""");

        Assert.Equal(200, changed.Status);
        Assert.Equal(4, cluster.Settings.FairShare!.GetWeight("acme"));
        var starts = LocalSocketClient.Send(path, "PATCH", "/queues/payments/cluster", """{"fairShare": {"startsPerSecondPerTenant": 0.5, "startsBurstPerTenant": 3}}""");
        var cleared = LocalSocketClient.Send(path, "PATCH", "/queues/payments/cluster", """{"fairShare": {"startsPerSecondPerTenant": null, "startsBurstPerTenant": null}}""");
        Assert.Equal((200, 200), (starts.Status, cleared.Status));
        Assert.Equal(((double?)null, (int?)null, 4), (cluster.Settings.FairShare!.StartsPerSecondPerTenant, cluster.Settings.FairShare.StartsBurstPerTenant, cluster.Settings.FairShare.GetWeight("acme")));
        var entries = server.Logs.WithEvent("ClusterFairShareChanged");
        Assert.All(entries, entry => Assert.Equal("unix:" + path, entry.GetStructuredStateValue("RemoteAddress")));
        Assert.All(entries, entry => Assert.StartsWith("local socket peer (uid ", entry.GetStructuredStateValue("User"), StringComparison.Ordinal));
        Assert.Equal(
            [
                "off -> on, tenantWeights['acme'] none -> 4",
                "startsPerSecondPerTenant none -> 0.5, startsBurstPerTenant none -> 3",
                "startsPerSecondPerTenant 0.5 -> none, startsBurstPerTenant 3 -> none",
            ],
            entries.Select(e => e.GetStructuredStateValue("FairShareChange")));
    }
}
