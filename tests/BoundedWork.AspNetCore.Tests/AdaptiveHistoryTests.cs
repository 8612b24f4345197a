using BoundedWork.AspNetCore.Internal;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The history the dashboard's adaptive chart starts from: the sampler's series, only for adaptive executors.</summary>
public sealed class AdaptiveHistoryTests
{
    [Fact]
    public async Task GetExecutors_WithHistory_AdaptiveExecutorHasTheChartsSeries_OneValuePerSample_OthersDoNot()
    {
        await using var server = await AdminServer.StartAsync();
        server.Payments.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.Advisory });
        server.Payments.Resize(3);
        var sampler = server.App.Services.GetRequiredService<AdminSampler>();
        for (var i = 0; i < 3; i++)
        {
            await server.Payments.RunAsync(static () => { });
            sampler.SampleOnce(); // the sampler's own thread samples too: the series only have to agree with each other
        }

        var executors = (await (await server.Client.GetAsync("/bounded-work/executors?history=true")).JsonAsync()).GetProperty("executors");
        var payments = executors.EnumerateArray().Single(e => e.GetProperty("name").GetString() == "payments").GetProperty("history");
        var samples = payments.GetProperty("queueLength").GetArrayLength();
        Assert.True(samples >= 3, payments.GetRawText());
        foreach (var series in new[] { "workers", "queueWaitMs", "runTimeMs" })
        {
            Assert.Equal(samples, payments.GetProperty(series).GetArrayLength());
        }

        Assert.Equal(3, payments.GetProperty("workers")[samples - 1].GetInt32());
        Assert.Equal(System.Text.Json.JsonValueKind.Null, payments.GetProperty("runTimeMs")[0].ValueKind); // no sample before the first

        var mail = executors.EnumerateArray().Single(e => e.GetProperty("name").GetString() == "mail").GetProperty("history");
        Assert.True(mail.TryGetProperty("queueLength", out _));
        foreach (var series in new[] { "workers", "queueWaitMs", "runTimeMs" })
        {
            Assert.False(mail.TryGetProperty(series, out _), $"An executor whose adaptive mode is Off has no '{series}': {mail}");
        }
    }

    [Theory]
    [InlineData(2, 2, 100, 200, 1.0, 20.0)] // 2 busy workers, 100 items a second: 20 ms each
    [InlineData(1, 3, 0, 50, 0.5, 20.0)] // 2 busy on average, 100 a second
    [InlineData(0, 0, 10, 20, 1.0, 0.0)] // finished between two readings that both saw idle workers
    public void RunTimeMs_IsBusyWorkersOverItemsFinishedPerSecond(int busyBefore, int busyAfter, long finishedBefore, long finishedAfter, double seconds, double expected) =>
        Assert.Equal(expected, AdminSampler.RunTimeMs(busyBefore, busyAfter, finishedBefore, finishedAfter, seconds));

    [Theory]
    [InlineData(100, 100, 1.0)]
    [InlineData(100, 120, 0.0)]
    public void RunTimeMs_NothingFinishedOrNoTime_IsNull(long finishedBefore, long finishedAfter, double seconds) =>
        Assert.Null(AdminSampler.RunTimeMs(2, 2, finishedBefore, finishedAfter, seconds));
}
