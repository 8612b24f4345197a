using System.Collections.Concurrent;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Hosting.Tests;

/// <summary>ThreadPool blocking waits and slow items are logged (rate-limited where they can flood) and seen by the health check.</summary>
public sealed class AlarmTests
{
    private static async Task<(IHost Host, BoundedExecutor Executor, HealthCheckService Health)> StartAsync(
        FakeLogCollector logs, Action<BoundedExecutorOptions> configure)
    {
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 1;
            configure(o);
        });
        builder.Services.AddHealthChecks().AddBoundedWork();
        var host = builder.Build();
        await host.StartAsync();
        return (host, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments"), host.Services.GetRequiredService<HealthCheckService>());
    }

    private static async Task<HealthReportEntry> CheckAsync(HealthCheckService health) =>
        (await health.CheckHealthAsync()).Entries["boundedwork"];

    /// <summary>Blocks a ThreadPool thread in a Wait-policy Execute on a full queue, then cancels the wait once the executor saw it.</summary>
    private static async Task BlockOnePoolThreadAsync(BoundedExecutor executor, SemaphoreSlim blockingSeen)
    {
        using var cts = new CancellationTokenSource();
        var waiting = Task.Run(() => executor.Execute(() => { }, cts.Token));
        Assert.True(await blockingSeen.WaitAsync(TestHost.Patience), "The blocking wait was never reported.");
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting);
    }

    [Fact]
    public async Task ThreadPoolBlockingWait_IsLoggedAtMostOncePerIntervalWithTheCountAndTheCallersStack()
    {
        var logs = new FakeLogCollector();
        var clock = new FakeTimeProvider();
        using var blockingSeen = new SemaphoreSlim(0);
        var (host, executor, _) = await StartAsync(logs, o =>
        {
            o.TimeProvider = clock;
            o.RejectionPolicy = RejectionPolicy.Wait;
            o.WaitTimeout = Timeout.InfiniteTimeSpan;
            o.OnThreadPoolBlockingWait = _ => blockingSeen.Release();
        });
        using var _ = host;
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted();
        executor.Execute(() => { }); // the queue is full

        await BlockOnePoolThreadAsync(executor, blockingSeen);
        await BlockOnePoolThreadAsync(executor, blockingSeen);
        await BlockOnePoolThreadAsync(executor, blockingSeen);

        var first = Assert.Single(logs.WithEvent("ThreadPoolBlockingWait"));
        Assert.Equal(LogLevel.Warning, first.Level);
        Assert.Equal("1", first.GetStructuredStateValue("Count"));
        Assert.Equal("1", first.GetStructuredStateValue("Total"));
        Assert.Equal(BlockingWaitKind.WaitForRoom.ToString(), first.GetStructuredStateValue("Kind"));
        Assert.Contains(nameof(BlockOnePoolThreadAsync), (string)first.GetStructuredStateValue("CallerStackTrace")!, StringComparison.Ordinal);
        Assert.Contains("ExecuteAsync", first.Message, StringComparison.Ordinal);

        clock.Advance(TimeSpan.FromSeconds(30));
        await BlockOnePoolThreadAsync(executor, blockingSeen);

        var lines = logs.WithEvent("ThreadPoolBlockingWait");
        Assert.Equal(2, lines.Count);
        Assert.Equal("3", lines[1].GetStructuredStateValue("Count")); // the two suppressed waits and this one
        Assert.Equal("4", lines[1].GetStructuredStateValue("Total"));
        Assert.Equal(4, executor.GetStatistics().ThreadPoolBlockingWaits);
        gate.Open();
        await host.StopAsync();
    }

    [Fact]
    public async Task HealthCheck_ThreadPoolBlockingWaitsSinceThePreviousCheck_IsDegradedThenHealthyWhenTheyStop()
    {
        var logs = new FakeLogCollector();
        using var blockingSeen = new SemaphoreSlim(0);
        var (host, executor, health) = await StartAsync(logs, o =>
        {
            o.RejectionPolicy = RejectionPolicy.Wait;
            o.WaitTimeout = Timeout.InfiniteTimeSpan;
            o.OnThreadPoolBlockingWait = _ => blockingSeen.Release();
        });
        using var _ = host;
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted();
        executor.Execute(() => { });

        await BlockOnePoolThreadAsync(executor, blockingSeen);
        executor.Reconfigure(executor.Settings with { QueueCapacity = 10 }); // no longer near capacity
        var degraded = await CheckAsync(health);
        var healthy = await CheckAsync(health);

        Assert.Equal(HealthStatus.Degraded, degraded.Status);
        Assert.Contains("ThreadPool threads blocked", degraded.Description, StringComparison.Ordinal);
        Assert.Equal(1L, ((Dictionary<string, object>)degraded.Data["payments"])["threadPoolBlockingWaitsSinceLastCheck"]);
        Assert.Equal(HealthStatus.Healthy, healthy.Status);
        gate.Open();
        await host.StopAsync();
    }

    [Fact]
    public async Task SlowItem_IsLoggedWithItsMethodAndWorker_AndTheHealthCheckIsDegradedWhileItRuns()
    {
        var logs = new FakeLogCollector();
        var clock = new FakeTimeProvider();
        using var reported = new SemaphoreSlim(0);
        var (host, executor, health) = await StartAsync(logs, o =>
        {
            o.TimeProvider = clock;
            o.QueueCapacity = 10;
            o.SlowItemThreshold = TimeSpan.FromSeconds(5);
            o.OnSlowItem = _ => reported.Release();
        });
        using var _ = host;
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted();
        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(health)).Status);

        clock.Advance(TimeSpan.FromSeconds(6));

        var entry = await CheckAsync(health);
        Assert.Equal(HealthStatus.Degraded, entry.Status);
        Assert.Contains("SlowItemThreshold", entry.Description, StringComparison.Ordinal);
        Assert.Equal(1, ((Dictionary<string, object>)entry.Data["payments"])["slowWorkers"]);
        Assert.True(await reported.WaitAsync(TestHost.Patience), "The slow item was never reported.");
        var log = Assert.Single(logs.WithEvent("SlowItemRunning"));
        Assert.Equal(LogLevel.Warning, log.Level);
        Assert.Equal("payments#1", log.GetStructuredStateValue("WorkerName"));
        Assert.Contains(nameof(Gate), (string)log.GetStructuredStateValue("Item")!, StringComparison.Ordinal);

        gate.Open();
        TestHost.WaitUntil(() => executor.GetStatistics().BusyWorkerCount == 0);
        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(health)).Status);
        await host.StopAsync();
    }

    [Fact]
    public async Task LongQueueWaits_DegradeTheHealthCheck_AndAreLoggedRateLimitedWithACount()
    {
        var logs = new FakeLogCollector();
        var clock = new FakeTimeProvider();
        var reports = new ConcurrentQueue<SlowItemArguments>();
        var (host, executor, health) = await StartAsync(logs, o =>
        {
            o.TimeProvider = clock;
            o.QueueCapacity = 10;
            o.QueueWaitThreshold = TimeSpan.FromSeconds(2);
            o.OnSlowItem = reports.Enqueue;
        });
        using var _ = host;
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted();
        for (var i = 0; i < 3; i++)
        {
            executor.Execute(static order => GC.KeepAlive(order), $"order-{i}");
        }

        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(health)).Status);
        clock.Advance(TimeSpan.FromSeconds(3));

        var entry = await CheckAsync(health);
        Assert.Equal(HealthStatus.Degraded, entry.Status);
        Assert.Contains("QueueWaitThreshold", entry.Description, StringComparison.Ordinal);

        gate.Open();
        TestHost.WaitUntil(() => executor.GetStatistics() is { QueueLength: 0, BusyWorkerCount: 0 });
        Assert.Equal(3, reports.Count);
        var log = Assert.Single(logs.WithEvent("LongQueueWait")); // three reports, one line in the interval
        Assert.Equal("1", log.GetStructuredStateValue("Count"));
        Assert.Contains("order-0", (string)log.GetStructuredStateValue("Item")!, StringComparison.Ordinal);
        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(health)).Status);
        await host.StopAsync();
    }

    [Theory]
    [InlineData("SlowItemThreshold", "00:00:00")]
    [InlineData("QueueWaitThreshold", "-00:00:02")]
    public async Task StartAsync_BadThreshold_FailsNamingTheSetting(string setting, string value)
    {
        const string section = "BoundedWork:Executors:payments";
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?> { [$"{section}:{setting}"] = value });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(section);
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<Microsoft.Extensions.Options.OptionsValidationException>(() => host.StartAsync());

        var failure = Assert.Single(ex.Failures);
        Assert.StartsWith($"Executor 'payments': {setting}", failure, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Thresholds_BoundFromConfiguration_ReachTheExecutor()
    {
        const string section = "BoundedWork:Executors:payments";
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            [$"{section}:SlowItemThreshold"] = "00:02:00",
            [$"{section}:QueueWaitThreshold"] = "00:00:10",
        });
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1).BindConfiguration(section);
        using var host = builder.Build();
        await host.StartAsync();

        var settings = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").Settings;

        Assert.Equal(TimeSpan.FromMinutes(2), settings.SlowItemThreshold);
        Assert.Equal(TimeSpan.FromSeconds(10), settings.QueueWaitThreshold);
        await host.StopAsync();
    }
}
