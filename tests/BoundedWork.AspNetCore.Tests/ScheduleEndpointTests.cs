using System.Net;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The console's in-memory schedules over HTTP and the local socket: list, read, change, trigger, audited; bad input changes nothing.</summary>
public sealed class ScheduleEndpointTests
{
    private static Task<AdminServer> StartAsync(string? socket = null) =>
        AdminServer.StartAsync(configure: b =>
        {
            b.Services.AddRecurring("nightly", "0 2 * * *", "payments", _ => { }, timeZone: "Europe/Berlin");
            b.Services.AddRecurring("pulse", TimeSpan.FromHours(1), "mail", _ => { });
            if (socket is not null)
            {
                b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = socket);
            }
        });

    [Fact]
    public async Task List_Get_Change_Trigger_OverHttp_AreAudited()
    {
        await using var server = await StartAsync();

        var list = await (await server.Client.GetAsync("/bounded-work/schedules")).JsonAsync();
        Assert.Equal(["nightly", "pulse"], list.GetProperty("schedules").EnumerateArray().Select(s => s.GetProperty("name").GetString()));
        var nightly = await (await server.Client.GetAsync("/bounded-work/schedules/NIGHTLY")).JsonAsync();
        Assert.Equal("0 2 * * *", nightly.GetProperty("cron").GetString());
        Assert.Equal("Europe/Berlin", nightly.GetProperty("timeZone").GetString());
        Assert.Equal("none", nightly.GetProperty("lastOutcome").GetString());

        var patch = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/schedules/nightly", """{"paused": true, "cron": "30 3 * * *"}""");
        Assert.Equal(HttpStatusCode.OK, patch.StatusCode);
        var changed = await patch.JsonAsync();
        Assert.False(changed.GetProperty("previous").GetProperty("paused").GetBoolean());
        Assert.True(changed.GetProperty("current").GetProperty("paused").GetBoolean());
        Assert.Equal("30 3 * * *", changed.GetProperty("current").GetProperty("cron").GetString());
        Assert.Equal("Europe/Berlin", changed.GetProperty("current").GetProperty("timeZone").GetString());

        var trigger = await server.Client.SendChangeAsync(HttpMethod.Post, "/bounded-work/schedules/pulse/trigger", "{}");
        Assert.Equal("started", (await trigger.JsonAsync()).GetProperty("result").GetString());

        var audit = server.Logs.GetSnapshot().Where(r => r.Id.Name == "ScheduleChangedByConsole").Select(r => r.Message).ToList();
        Assert.Equal(2, audit.Count);
        Assert.Contains("'nightly' changed by alice", audit[0], StringComparison.Ordinal);
        Assert.Contains("paused False -> True", audit[0], StringComparison.Ordinal);
        Assert.Contains("triggered now: started", audit[1], StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.NotFound, (await server.Client.GetAsync("/bounded-work/schedules/nope")).StatusCode);
        Assert.Equal(HttpStatusCode.MethodNotAllowed, (await server.Client.DeleteAsync("/bounded-work/schedules/pulse")).StatusCode);
    }

    [Theory]
    [InlineData("""{"cron": "0 0 30 2 *"}""", "cron")]
    [InlineData("""{"cron": "every day"}""", "cron")]
    [InlineData("""{"timeZone": "Mars/Olympus_Mons"}""", "timeZone")]
    [InlineData("""{"interval": "00:00:00.5"}""", "interval")]
    [InlineData("""{"interval": "soon"}""", "interval")]
    [InlineData("""{"interval": "00:05:00", "cron": "* * * * *"}""", "interval")]
    [InlineData("""{"paused": "yes"}""", "paused")]
    [InlineData("""{"workers": 3}""", "workers")]
    public async Task HostileChange_IsRefusedNamingTheField_AndChangesNothing(string body, string field)
    {
        await using var server = await StartAsync();
        var schedules = server.App.Services.GetRequiredService<BoundedWork.Hosting.IRecurringSchedules>();
        var before = schedules.GetStatus("nightly");

        var response = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/schedules/nightly", body);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.True((await response.JsonAsync()).GetProperty("errors").TryGetProperty(field, out _), body);
        Assert.Equal(before, schedules.GetStatus("nightly"));
        Assert.Contains(server.Logs.GetSnapshot(), r => r.Id.Name == "ScheduleChangeRefused");
    }

    [Fact]
    public async Task Routes_AreNotAnonymous_AndNeedThePolicy()
    {
        await using var server = await StartAsync();
        using var anonymous = server.CreateClient(null, null);
        using var outsider = server.CreateClient("mallory", "sales");

        Assert.Equal(HttpStatusCode.Unauthorized, (await anonymous.GetAsync("/bounded-work/schedules")).StatusCode);
        Assert.Equal(HttpStatusCode.Unauthorized, (await anonymous.SendChangeAsync(HttpMethod.Post, "/bounded-work/schedules/pulse/trigger", "{}")).StatusCode);
        Assert.Equal(HttpStatusCode.Forbidden, (await outsider.SendChangeAsync(HttpMethod.Patch, "/bounded-work/schedules/nightly", """{"paused": true}""")).StatusCode);
        Assert.False(server.App.Services.GetRequiredService<BoundedWork.Hosting.IRecurringSchedules>().GetStatus("nightly").IsPaused);
        Assert.Equal(0, server.App.Services.GetRequiredService<BoundedWork.Hosting.IRecurringSchedules>().GetStatus("pulse").Triggered);
    }

    [Fact]
    public async Task Change_WithoutTheRequestHeader_IsRefused()
    {
        await using var server = await StartAsync();

        var response = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/schedules/nightly", """{"paused": true}""", header: false);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.False(server.App.Services.GetRequiredService<BoundedWork.Hosting.IRecurringSchedules>().GetStatus("nightly").IsPaused);
    }

    [Fact]
    public async Task LocalSocket_ServesTheSameRoutes()
    {
        var path = Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
        await using var server = await StartAsync(path);

        var list = LocalSocketClient.Send(path, "GET", "/schedules");
        var patch = LocalSocketClient.Send(path, "PATCH", "/schedules/pulse", """{"interval": "00:30:00"}""");
        var trigger = LocalSocketClient.Send(path, "POST", "/schedules/pulse/trigger", "{}");
        var bad = LocalSocketClient.Send(path, "PATCH", "/schedules/pulse", """{"cron": "61 * * * *"}""");

        Assert.Equal(200, list.Status);
        Assert.Equal(2, list.Json.GetProperty("schedules").GetArrayLength());
        Assert.Equal(200, patch.Status);
        Assert.Equal("00:30:00", patch.Json.GetProperty("current").GetProperty("interval").GetString());
        Assert.Equal(200, trigger.Status);
        Assert.Equal(400, bad.Status);
        Assert.Equal(405, LocalSocketClient.Send(path, "DELETE", "/schedules/pulse").Status);
        Assert.Equal("00:30:00", server.App.Services.GetRequiredService<BoundedWork.Hosting.IRecurringSchedules>().GetStatus("pulse").Schedule.Interval?.ToString("c", System.Globalization.CultureInfo.InvariantCulture));
    }
}
