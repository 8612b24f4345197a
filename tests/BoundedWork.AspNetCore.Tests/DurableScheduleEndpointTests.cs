using System.Net;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The console's durable schedules over HTTP and the local socket, through <see cref="IDurableSchedules"/> alone (a fake
/// storage here; the PostgreSQL one is driven end to end in its own tests): list, read, add, change, pause, trigger and
/// remove, audited with the operator as <c>changedBy</c>; hostile input is refused naming the field and changes nothing.
/// </summary>
public sealed class DurableScheduleEndpointTests
{
    private const string Root = "/bounded-work/durable-schedules";

    private static async Task<(AdminServer Server, FakeDurableSchedules Schedules)> StartAsync(string? socket = null)
    {
        var schedules = new FakeDurableSchedules("reconciliation", "reports");
        schedules.Define("nightly", "reconciliation", RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"));
        var server = await AdminServer.StartAsync(configure: b =>
        {
            b.Services.AddSingleton<IDurableSchedules>(schedules);
            if (socket is not null)
            {
                b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = socket);
            }
        });
        return (server, schedules);
    }

    [Fact]
    public async Task List_Add_Change_Trigger_Remove_OverHttp_AreStoredWithTheOperator_AndAudited()
    {
        var (server, schedules) = await StartAsync();
        await using var owned = server;

        var list = await (await server.Client.GetAsync(Root)).JsonAsync();
        Assert.Equal(["reconciliation", "reports"], list.GetProperty("queues").EnumerateArray().Select(q => q.GetString()));
        var nightly = list.GetProperty("schedules")[0];
        Assert.Equal("0 2 * * *", nightly.GetProperty("cron").GetString());
        Assert.Equal("Europe/Berlin", nightly.GetProperty("timeZone").GetString());
        Assert.Equal("latestOnce", nightly.GetProperty("missedTicks").GetString());
        Assert.Equal("none", nightly.GetProperty("lastOutcome").GetString());
        Assert.True(nightly.GetProperty("definedInCode").GetBoolean());

        var add = await server.Client.SendChangeAsync(HttpMethod.Post, Root, """{"name": "daily-report", "queue": "reports", "cron": "0 6 * * *", "timeZone": "America/New_York", "missedTicks": "skip", "paused": true}""");
        Assert.Equal(HttpStatusCode.Created, add.StatusCode);
        var added = await add.JsonAsync();
        Assert.Equal("skip", added.GetProperty("missedTicks").GetString());
        Assert.True(added.GetProperty("paused").GetBoolean());
        Assert.Equal("alice", added.GetProperty("changedBy").GetString());

        // Every second is accepted: ticks never pile up (each is one item, run under the queue's limits).
        Assert.Equal(HttpStatusCode.Created, (await server.Client.SendChangeAsync(HttpMethod.Post, Root, """{"name": "pulse", "queue": "reports", "cron": "* * * * * *"}""")).StatusCode);

        var patch = await server.Client.SendChangeAsync(HttpMethod.Patch, Root + "/nightly", """{"paused": true, "cron": "30 3 * * *"}""");
        Assert.Equal(HttpStatusCode.OK, patch.StatusCode);
        var changed = await patch.JsonAsync();
        Assert.False(changed.GetProperty("previous").GetProperty("paused").GetBoolean());
        Assert.True(changed.GetProperty("current").GetProperty("paused").GetBoolean());
        Assert.Equal("30 3 * * *", changed.GetProperty("current").GetProperty("cron").GetString());
        Assert.Equal("Europe/Berlin", changed.GetProperty("current").GetProperty("timeZone").GetString());

        var trigger = await server.Client.SendChangeAsync(HttpMethod.Post, Root + "/nightly/trigger", "{}");
        Assert.Equal(HttpStatusCode.OK, trigger.StatusCode);
        Assert.True((await trigger.JsonAsync()).GetProperty("itemId").GetInt64() > 0);
        var read = await (await server.Client.GetAsync(Root + "/nightly")).JsonAsync();
        Assert.Equal("ready", read.GetProperty("lastOutcome").GetString());
        Assert.Equal(1, read.GetProperty("enqueued").GetInt64());

        Assert.Equal(HttpStatusCode.OK, (await server.Client.SendChangeAsync(HttpMethod.Delete, Root + "/pulse", "{}")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await server.Client.GetAsync(Root + "/pulse")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await server.Client.SendChangeAsync(HttpMethod.Post, Root + "/nope/trigger", "{}")).StatusCode);

        Assert.Equal(
            ["daily-report: added by alice", "pulse: added by alice", "nightly: retimed by alice", "nightly: paused True by alice", "nightly: triggered by alice", "pulse: removed by alice"],
            schedules.Changes);
        var audit = server.Logs.GetSnapshot().Where(r => r.Id.Name == "DurableScheduleChangedByConsole").Select(r => r.Message).ToList();
        Assert.Equal(5, audit.Count);
        Assert.Contains("'nightly' changed by alice", audit[2], StringComparison.Ordinal);
        Assert.Contains("paused False -> True", audit[2], StringComparison.Ordinal);
        Assert.Contains(server.Logs.GetSnapshot(), r => r.Id.Name == "DurableScheduleChangeRefused");
    }

    [Theory]
    [InlineData("""{"name": "x", "queue": "reports", "cron": "0 0 30 2 *"}""", "cron")] // never fires
    [InlineData("""{"name": "x", "queue": "reports", "cron": "every day"}""", "cron")]
    [InlineData("""{"name": "x", "queue": "reports", "cron": "0 2 * * *", "timeZone": "Mars/Olympus_Mons"}""", "timeZone")]
    [InlineData("""{"name": "x", "queue": "reports", "interval": "00:00:00.5"}""", "interval")]
    [InlineData("""{"name": "x", "queue": "reports", "interval": "soon"}""", "interval")]
    [InlineData("""{"name": "x", "queue": "reports", "interval": "00:05:00", "cron": "* * * * *"}""", "interval")]
    [InlineData("""{"name": "x", "queue": "reports"}""", "cron")]
    [InlineData("""{"name": "a\r\nINFO forged", "queue": "reports", "cron": "0 2 * * *"}""", "name")]
    [InlineData("""{"queue": "reports", "cron": "0 2 * * *"}""", "name")]
    [InlineData("""{"name": "nightly", "queue": "reports", "cron": "0 2 * * *"}""", "name")] // taken
    [InlineData("""{"name": "x", "queue": "payments", "cron": "0 2 * * *"}""", "queue")]
    [InlineData("""{"name": "x", "cron": "0 2 * * *"}""", "queue")] // two queues: name one
    [InlineData("""{"name": "x", "queue": "reports", "cron": "0 2 * * *", "missedTicks": "2"}""", "missedTicks")]
    [InlineData("""{"name": "x", "queue": "reports", "cron": "0 2 * * *", "paused": "yes"}""", "paused")]
    [InlineData("""{"name": "x", "queue": "reports", "cron": "0 2 * * *", "workers": 3}""", "workers")]
    [InlineData("""{"name": "x", "queue": "reports", "cron": """, "body")]
    [InlineData("""[1, 2]""", "body")]
    public async Task HostileAdd_IsRefusedNamingTheField_AndStoresNothing(string body, string field)
    {
        var (server, schedules) = await StartAsync();
        await using var owned = server;

        var response = await server.Client.SendChangeAsync(HttpMethod.Post, Root, body);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.True((await response.JsonAsync()).GetProperty("errors").TryGetProperty(field, out _), body);
        Assert.Equal(["nightly"], (await schedules.ListAsync()).Select(s => s.Name));
        Assert.Empty(schedules.Changes);
        Assert.Contains(server.Logs.GetSnapshot(), r => r.Id.Name == "DurableScheduleChangeRefused");
    }

    [Theory]
    [InlineData("""{"cron": "0 0 30 2 *"}""", "cron")]
    [InlineData("""{"cron": "61 * * * *"}""", "cron")]
    [InlineData("""{"timeZone": "Nowhere/Atlantis"}""", "timeZone")]
    [InlineData("""{"interval": "-00:05:00"}""", "interval")]
    [InlineData("""{"paused": 1}""", "paused")]
    [InlineData("""{}""", "body")]
    [InlineData("""{"paused": true,""", "body")]
    [InlineData("""{"missedTicks": "2"}""", "missedTicks")]
    [InlineData("""{"missedTicks": "-1"}""", "missedTicks")]
    [InlineData("""{"missedTicks": 1}""", "missedTicks")]
    [InlineData("""{"missedTicks": null}""", "missedTicks")]
    [InlineData("""{"missedTicks": ""}""", "missedTicks")]
    [InlineData("""{"missedTicks": "sometimes"}""", "missedTicks")]
    [InlineData("""{"missedTicks": "skip", "paused": "yes"}""", "paused")]
    [InlineData("""{"missedTicks": "skip", "timeZone": "Nowhere/Atlantis"}""", "timeZone")]
    public async Task HostileChange_IsRefusedNamingTheField_AndChangesNothing(string body, string field)
    {
        var (server, schedules) = await StartAsync();
        await using var owned = server;
        var before = await schedules.GetAsync("nightly");

        var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Root + "/nightly", body);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.True((await response.JsonAsync()).GetProperty("errors").TryGetProperty(field, out _), body);
        Assert.Equal(before, await schedules.GetAsync("nightly"));
        Assert.Empty(schedules.Changes);
    }

    [Fact]
    public async Task HugeBody_IsRefusedWith413_AndChangesNothing()
    {
        var (server, schedules) = await StartAsync();
        await using var owned = server;
        var huge = """{"name": "x", "queue": "reports", "cron": "0 2 * * *", "pad": """ + "\"" + new string('a', 20_000) + "\"}";

        var response = await server.Client.SendChangeAsync(HttpMethod.Post, Root, huge);

        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, response.StatusCode);
        Assert.Empty(schedules.Changes);
    }

    [Fact]
    public async Task StorageDown_AnswersServiceUnavailable_AndIsLogged()
    {
        var (server, schedules) = await StartAsync();
        await using var owned = server;
        schedules.Failing = true;

        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await server.Client.GetAsync(Root)).StatusCode);
        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await server.Client.SendChangeAsync(HttpMethod.Patch, Root + "/nightly", """{"paused": true}""")).StatusCode);
        Assert.Contains(server.Logs.GetSnapshot(), r => r.Id.Name == "DurableScheduleStorageFailed");
    }

    [Fact]
    public async Task Routes_AreNotAnonymous_AndNeedThePolicy_AndTheRequestHeader()
    {
        var (server, schedules) = await StartAsync();
        await using var owned = server;
        using var anonymous = server.CreateClient(null, null);
        using var outsider = server.CreateClient("mallory", "sales");

        Assert.Equal(HttpStatusCode.Unauthorized, (await anonymous.GetAsync(Root)).StatusCode);
        Assert.Equal(HttpStatusCode.Forbidden, (await outsider.SendChangeAsync(HttpMethod.Post, Root + "/nightly/trigger", "{}")).StatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, (await server.Client.SendChangeAsync(HttpMethod.Patch, Root + "/nightly", """{"paused": true}""", header: false)).StatusCode);
        Assert.Empty(schedules.Changes);
    }

    [Fact]
    public async Task WithoutDurableSchedules_TheListIsEmpty_AndAnAddSaysWhy()
    {
        await using var server = await AdminServer.StartAsync();

        var list = await (await server.Client.GetAsync(Root)).JsonAsync();
        Assert.Equal(0, list.GetProperty("schedules").GetArrayLength());
        Assert.Equal(HttpStatusCode.NotFound, (await server.Client.SendChangeAsync(HttpMethod.Post, Root, """{"name": "x", "cron": "0 2 * * *"}""")).StatusCode);
    }

    [Fact]
    public async Task ChangeOfTheMissedTickPolicy_OverHttpAndTheSocket_IsStoredAndAudited_TimingKept()
    {
        var path = Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
        var (server, schedules) = await StartAsync(path);
        await using var owned = server;

        var patch = await server.Client.SendChangeAsync(HttpMethod.Patch, Root + "/nightly", """{"missedTicks": "each"}""");
        Assert.Equal(HttpStatusCode.OK, patch.StatusCode);
        var changed = await patch.JsonAsync();
        Assert.Equal("latestOnce", changed.GetProperty("previous").GetProperty("missedTicks").GetString());
        Assert.Equal("each", changed.GetProperty("current").GetProperty("missedTicks").GetString());
        Assert.Equal(changed.GetProperty("previous").GetProperty("cron").GetString(), changed.GetProperty("current").GetProperty("cron").GetString());
        Assert.Equal(MissedTickPolicy.Each, (await schedules.GetAsync("nightly"))!.MissedTicks);

        var socket = LocalSocketClient.Send(path, "PATCH", "/durable-schedules/nightly", """{"missedTicks": "Skip", "paused": true}""");
        Assert.Equal(200, socket.Status);
        Assert.Equal("skip", socket.Json.GetProperty("current").GetProperty("missedTicks").GetString());
        Assert.Equal((MissedTickPolicy.Skip, true), ((await schedules.GetAsync("nightly"))!.MissedTicks, (await schedules.GetAsync("nightly"))!.IsPaused));

        Assert.Equal(["nightly: missed ticks Each by alice"], schedules.Changes.Take(1));
        var audit = server.Logs.GetSnapshot().Where(r => r.Id.Name == "DurableScheduleChangedByConsole").Select(r => r.Message).ToList();
        Assert.Contains("missed ticks LatestOnce -> Each", audit[0], StringComparison.Ordinal);
        Assert.Contains("missed ticks Each -> Skip", audit[1], StringComparison.Ordinal);
    }

    [Fact]
    public async Task LocalSocket_ServesTheSameRoutes()
    {
        var path = Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
        var (server, schedules) = await StartAsync(path);
        await using var owned = server;

        var list = LocalSocketClient.Send(path, "GET", "/durable-schedules");
        var add = LocalSocketClient.Send(path, "POST", "/durable-schedules", """{"name": "retry-callbacks", "queue": "reconciliation", "interval": "00:05:00"}""");
        var patch = LocalSocketClient.Send(path, "PATCH", "/durable-schedules/retry-callbacks", """{"interval": "00:10:00"}""");
        var trigger = LocalSocketClient.Send(path, "POST", "/durable-schedules/nightly/trigger", "{}");
        var bad = LocalSocketClient.Send(path, "PATCH", "/durable-schedules/nightly", """{"timeZone": "Mars/Base"}""");

        Assert.Equal(200, list.Status);
        Assert.Equal(1, list.Json.GetProperty("schedules").GetArrayLength());
        Assert.Equal(201, add.Status);
        Assert.Equal(200, patch.Status);
        Assert.Equal("00:10:00", patch.Json.GetProperty("current").GetProperty("interval").GetString());
        Assert.Equal(200, trigger.Status);
        Assert.Equal(400, bad.Status);
        Assert.Equal(TimeSpan.FromMinutes(10), (await schedules.GetAsync("retry-callbacks"))!.Schedule!.Interval);
        Assert.Equal("Europe/Berlin", (await schedules.GetAsync("nightly"))!.Schedule!.TimeZone.Id);
    }
}
