using System.Net;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Tests;

public sealed class ChangeAuditTests
{
    [Fact]
    public async Task Change_Applied_LoggedWithUserExecutorAndOldAndNewValues()
    {
        await using var server = await AdminServer.StartAsync();

        using var response = await server.Client.SendChangeAsync(
            HttpMethod.Patch, "/bounded-work/executors/payments", """{"workers": 3, "rejectionPolicy": "Wait", "waitTimeout": "infinite"}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var entry = Assert.Single(server.Logs.WithEvent("SettingsChanged"));
        Assert.Equal(200, entry.Id.Id);
        Assert.Equal(LogLevel.Information, entry.Level);
        Assert.Equal("BoundedWork.Admin", entry.Category);
        Assert.Equal("alice", entry.GetStructuredStateValue("User"));
        Assert.Equal("payments", entry.GetStructuredStateValue("ExecutorName"));
        Assert.Equal("2", entry.GetStructuredStateValue("PreviousWorkerCount"));
        Assert.Equal("3", entry.GetStructuredStateValue("WorkerCount"));
        Assert.Equal("100", entry.GetStructuredStateValue("PreviousQueueCapacity"));
        Assert.Equal("100", entry.GetStructuredStateValue("QueueCapacity"));
        Assert.Equal(RejectionPolicy.Abort.ToString(), entry.GetStructuredStateValue("PreviousRejectionPolicy"));
        Assert.Equal(RejectionPolicy.Wait.ToString(), entry.GetStructuredStateValue("RejectionPolicy"));
        Assert.Equal("00:00:05", entry.GetStructuredStateValue("PreviousWaitTimeout"));
        Assert.Equal("infinite", entry.GetStructuredStateValue("WaitTimeout"));
        Assert.Equal("127.0.0.1", entry.GetStructuredStateValue("RemoteAddress"));
    }

    [Fact]
    public async Task Change_Applied_CountedPerChangedSettingOnHostMeter()
    {
        await using var server = await AdminServer.StartAsync();
        using var recorder = new AdminMeterRecorder(server.App.Services);

        using var patch = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"workers": 3, "queueCapacity": 100, "waitTimeout": "00:00:09"}""");
        using var refused = await server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 99}""");

        Assert.Equal(
            [
                ("boundedwork.admin.changes", 1L, "payments", "workers"),
                ("boundedwork.admin.changes", 1L, "payments", "waitTimeout"),
                ("boundedwork.admin.refused", 1L, "payments", "invalid"),
            ],
            recorder.Measurements);
    }

    [Theory]
    [InlineData("PUT", "/bounded-work/executors/x%0D%0A2026-01-01%20info:%20forged/workers")]
    [InlineData("PATCH", "/bounded-work/executors/x%0Aforged")]
    [InlineData("PATCH", "/bounded-work/executors/x%E2%80%A8forged%1B%5B31m")]
    public async Task Change_ControlCharactersInExecutorName_LoggedEscapedOnOneLine(string method, string path)
    {
        await using var server = await AdminServer.StartAsync();

        using var response = await server.Client.SendChangeAsync(new HttpMethod(method), path, """{"workers": 3}""");

        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        var entry = Assert.Single(server.Logs.WithEvent("SettingsChangeRefused"));
        var name = (string)entry.GetStructuredStateValue("ExecutorName")!;
        Assert.StartsWith("x\\", name, StringComparison.Ordinal);
        Assert.DoesNotContain(name, char.IsControl);
        Assert.DoesNotContain(entry.Message, c => char.IsControl(c) || c is '\u2028' or '\u2029');
    }

    [Fact]
    public async Task Change_ControlCharactersInUserName_LoggedEscapedOnOneLine()
    {
        await using var server = await AdminServer.StartAsync();
        using var client = server.CreateClient("mallory%0D%0A2026-01-01%20info:%20forged", "ops");

        using var response = await client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 3}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var entry = Assert.Single(server.Logs.WithEvent("SettingsChanged"));
        Assert.Equal("mallory\\r\\n2026-01-01 info: forged", entry.GetStructuredStateValue("User"));
        Assert.DoesNotContain(entry.Message, char.IsControl);
    }

    [Fact]
    public async Task Change_Refused_ExecutorTagIsARegisteredNameOrUnknown()
    {
        await using var server = await AdminServer.StartAsync();
        using var recorder = new AdminMeterRecorder(server.App.Services);

        for (var i = 0; i < 3; i++)
        {
            using var put = await server.Client.SendChangeAsync(HttpMethod.Put, $"/bounded-work/executors/nope-{i}/workers", """{"workers": 3}""");
        }

        using var form = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/nope-form", "workers=3", "application/x-www-form-urlencoded");
        using var noHeader = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/nope-header", """{"workers": 3}""", header: false);
        using var otherCase = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/PAYMENTS", """{"workers": 3}""", header: false);

        Assert.Equal(
            [
                ("boundedwork.admin.refused", 1L, "(unknown)", "not_found"),
                ("boundedwork.admin.refused", 1L, "(unknown)", "not_found"),
                ("boundedwork.admin.refused", 1L, "(unknown)", "not_found"),
                ("boundedwork.admin.refused", 1L, "(unknown)", "unsupported_media_type"),
                ("boundedwork.admin.refused", 1L, "(unknown)", "missing_header"),
                ("boundedwork.admin.refused", 1L, "payments", "missing_header"),
            ],
            recorder.Measurements);
    }
}
