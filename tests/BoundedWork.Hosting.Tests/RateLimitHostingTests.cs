using Microsoft.Extensions.Logging.Testing;
using BoundedWork.Hosting.Tests.WorkQueues;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Tests;

/// <summary>The rate limit from configuration (bound, validated, reloaded) and on a typed work queue's executor.</summary>
public sealed class RateLimitHostingTests
{
    private const string Section = "BoundedWork:Executors:payments";

    [Fact]
    public async Task Configuration_PermitsPerSecond_IsBoundAndReloaded()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs, new Dictionary<string, string?>
        {
            [$"{Section}:WorkerCount"] = "1",
            [$"{Section}:PermitsPerSecond"] = "100",
            [$"{Section}:PermitBurst"] = "10",
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        using var host = builder.Build();
        await host.StartAsync();
        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        Assert.Equal(100, executor.Settings.PermitsPerSecond);
        Assert.True(executor.GetStatistics().IsRateLimited);

        host.Reload(($"{Section}:PermitsPerSecond", "20"));
        Assert.Equal(20, executor.Settings.PermitsPerSecond);
        Assert.Equal(10, executor.Settings.PermitBurst);
        Assert.Equal("PermitsPerSecond 100 -> 20", Assert.Single(logs.WithEvent("ExecutorReconfigured")).GetStructuredStateValue("Changes"));

        host.Reload(($"{Section}:PermitBurst", "0"));
        Assert.Equal(10, executor.Settings.PermitBurst);
        Assert.Contains("PermitBurst must be between 1 and 1000000", Assert.Single(logs.WithEvent("InvalidReload")).Message, StringComparison.Ordinal);

        host.Reload(($"{Section}:PermitBurst", "1"), ($"{Section}:PermitsPerSecond", "0"));
        Assert.False(executor.GetStatistics().IsRateLimited);
        await host.StopAsync();
    }

    [Fact]
    public void Configuration_NegativePermitsPerSecond_FailsStartNamingTheSetting()
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?> { [$"{Section}:PermitsPerSecond"] = "-5" });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        using var host = builder.Build();
        var error = Assert.ThrowsAny<Exception>(() => host.StartAsync().GetAwaiter().GetResult());
        Assert.Contains("PermitsPerSecond must be between 0", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void WorkQueue_EveryAttemptTakesAPermitFromTheExecutorsLimiter_RetriesIncluded()
    {
        var limiter = new ManualRateLimiter(permits: 1);
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(
            queue: o =>
            {
                // Under a rate limit every retry, immediate ones included, is handed back to the executor as a new
                // item, so it takes a permit of its own.
                WorkQueueHost.NoDelay(o);
                o.MaxRetryAttempts = 1;
            },
            executor: o => o.RateLimiter = limiter);
        using (host)
        {
            probe.Behaviour = (notice, attempt, _) =>
            {
                if (notice.Id == 1 && attempt == 1)
                {
                    throw new InvalidOperationException("first attempt fails");
                }
            };
            Assert.True(host.Queue().TryEnqueue(new Notice(1)));
            Assert.True(host.Queue().TryEnqueue(new Notice(2)));

            // One permit: the first attempt ran (and failed); the retry and the second item wait, queued.
            TestHost.WaitUntil(() => probe.Attempts.Count == 1 && host.Executor().GetStatistics() is { RateLimitWaitingWorkers: 1, QueueLength: 2 });
            Assert.Empty(probe.Handled);

            limiter.Grant(2);
            probe.WaitHandled(2);
            Assert.Equal(3, probe.Attempts.Count);
            Assert.Equal(3, limiter.Granted);
            Assert.Equal(0, limiter.AskedOnPool);
            host.StopAsync().GetAwaiter().GetResult();
        }
    }
}
