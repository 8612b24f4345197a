using BoundedWork.AspNetCore.Internal;

namespace BoundedWork.AspNetCore.Tests;

[Collection(StarvationCollection.Name)]
public sealed class SamplerStarvationTests
{
    [Fact]
    public async Task ThreadPool_PoolStarved_SamplerKeepsSamplingAndReportsStarvation()
    {
        await using var server = await AdminServer.StartAsync();
        var sampler = server.App.Services.GetRequiredService<AdminSampler>();
        var payments = server.Payments;
        int historyBefore;
        ThreadPoolResponse report;
        using (var starvation = ThreadPoolStarvation.Begin())
        {
            historyBefore = sampler.GetHistory("payments").QueueLength.Count;

            // The sampler thread queues a probe to the pool every second and times it; with every pool thread blocked
            // the probe cannot start, and its age is the queue latency. Wait (bounded) for the sampler's own thread
            // to take two more samples and for the probe to have waited past the threshold.
            Assert.True(
                SpinWait.SpinUntil(
                    () => sampler.GetHistory("payments").QueueLength.Count >= Math.Min(historyBefore + 2, 300) && sampler.GetThreadPool(false).IsStarved,
                    TestKit.Safety),
                "The sampler stopped sampling, or never reported the starved pool.");
            report = sampler.GetThreadPool(includeHistory: true);
            Assert.True(starvation.IsStarved, "The pool recovered during the test; the measurement proves nothing.");
        }

        Assert.True(report.QueueLatencyMs >= report.StarvationThresholdMs);
        Assert.Contains("waited", report.Starvation, StringComparison.Ordinal);
        Assert.True(
            SpinWait.SpinUntil(() => !sampler.GetThreadPool(false).IsStarved, TestKit.Safety),
            "The starvation report never cleared after the pool recovered.");
        Assert.True(payments.GetStatistics().LiveWorkerCount >= 1);
    }
}
