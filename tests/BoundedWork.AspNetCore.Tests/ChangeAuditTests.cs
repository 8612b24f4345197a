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
        Assert.Equal(200, entry.EventId.Id);
        Assert.Equal(LogLevel.Information, entry.Level);
        Assert.Equal("BoundedWork.Admin", entry.Category);
        Assert.Equal("alice", entry.State["User"]);
        Assert.Equal("payments", entry.State["ExecutorName"]);
        Assert.Equal(2, entry.State["PreviousWorkerCount"]);
        Assert.Equal(3, entry.State["WorkerCount"]);
        Assert.Equal(100, entry.State["PreviousQueueCapacity"]);
        Assert.Equal(100, entry.State["QueueCapacity"]);
        Assert.Equal(RejectionPolicy.Abort, entry.State["PreviousRejectionPolicy"]);
        Assert.Equal(RejectionPolicy.Wait, entry.State["RejectionPolicy"]);
        Assert.Equal("00:00:05", entry.State["PreviousWaitTimeout"]);
        Assert.Equal("infinite", entry.State["WaitTimeout"]);
        Assert.Equal("127.0.0.1", entry.State["RemoteAddress"]);
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
}
