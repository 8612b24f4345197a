using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Tests;

public sealed class HealthCheckTests
{
    private static async Task<(IHost Host, BoundedExecutor Executor, HealthCheckService Health)> StartAsync(
        Action<IHealthChecksBuilder>? addCheck = null, RejectionPolicy policy = RejectionPolicy.Abort)
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 5;
            o.RejectionPolicy = policy;
        });
        builder.Services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
        var checks = builder.Services.AddHealthChecks();
        (addCheck ?? (b => b.AddBoundedWork()))(checks);
        var host = builder.Build();
        await host.StartAsync();
        return (host, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments"), host.Services.GetRequiredService<HealthCheckService>());
    }

    private static async Task<HealthReportEntry> CheckAsync(HealthCheckService health, string name = "boundedwork")
    {
        var report = await health.CheckHealthAsync();
        return report.Entries[name];
    }

    private static void Fill(BoundedExecutor executor, Gate gate, int queued)
    {
        executor.Execute(gate.Item);
        gate.WaitStarted();
        for (var i = 0; i < queued; i++)
        {
            executor.Execute(() => { });
        }
    }

    [Fact]
    public async Task Idle_IsHealthyWithOneDataEntryPerExecutor()
    {
        var (host, _, health) = await StartAsync();
        using var _ = host;

        var entry = await CheckAsync(health);

        Assert.Equal(HealthStatus.Healthy, entry.Status);
        Assert.Equal(["payments", "mail"], entry.Data.Keys);
        var payments = Assert.IsType<Dictionary<string, object>>(entry.Data["payments"]);
        Assert.Equal(5, payments["queueCapacity"]);
        Assert.Equal(1, payments["liveWorkers"]);
        await host.StopAsync();
    }

    [Fact]
    public async Task QueueAtTheDefaultFillRatio_IsDegraded()
    {
        var (host, executor, health) = await StartAsync();
        using var _ = host;
        using var gate = new Gate();
        Fill(executor, gate, queued: 3);
        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(health)).Status); // 60%

        executor.Execute(() => { }); // 80%
        var entry = await CheckAsync(health);

        Assert.Equal(HealthStatus.Degraded, entry.Status);
        Assert.Contains("'payments'", entry.Description, StringComparison.Ordinal);
        Assert.Equal("Degraded", ((Dictionary<string, object>)entry.Data["payments"])["status"]);
        Assert.Equal("Healthy", ((Dictionary<string, object>)entry.Data["mail"])["status"]);
        gate.Open();
        await host.StopAsync();
    }

    [Fact]
    public async Task PausedExecutor_IsDegraded_WithTheReason_AndHealthyAfterResume()
    {
        var (host, executor, health) = await StartAsync();
        using var _ = host;
        executor.Pause("payment provider outage", TimeSpan.FromMinutes(10));

        var entry = await CheckAsync(health);
        Assert.Equal(HealthStatus.Degraded, entry.Status);
        Assert.Contains("'payments' is paused until", entry.Description, StringComparison.Ordinal);
        Assert.Contains("(payment provider outage)", entry.Description, StringComparison.Ordinal);
        var data = (Dictionary<string, object>)entry.Data["payments"];
        Assert.Equal(true, data["paused"]);
        Assert.Equal("payment provider outage", data["pauseReason"]);
        Assert.Equal(false, ((Dictionary<string, object>)entry.Data["mail"])["paused"]);

        executor.Resume();
        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(health)).Status);
        await host.StopAsync();
    }

    [Fact]
    public async Task QueueOverAConfiguredFillRatio_IsDegraded()
    {
        var (host, executor, health) = await StartAsync(b => b.AddBoundedWork(configure: o => o.DegradedQueueFillRatio = 0.4));
        using var _ = host;
        using var gate = new Gate();

        Fill(executor, gate, queued: 2);

        Assert.Equal(HealthStatus.Degraded, (await CheckAsync(health)).Status);
        gate.Open();
        await host.StopAsync();
    }

    [Theory]
    [InlineData(RejectionPolicy.Abort)]
    [InlineData(RejectionPolicy.Discard)]
    [InlineData(RejectionPolicy.DiscardOldest)]
    public async Task ItemsRefusedSinceTheLastCheck_IsUnhealthy_UntilACheckSeesNoNewRefusals(RejectionPolicy policy)
    {
        var (host, executor, health) = await StartAsync(policy: policy);
        using var _ = host;
        using var gate = new Gate();
        Fill(executor, gate, queued: 5);

        executor.TryExecute(() => { });
        executor.TryExecute(() => { });
        var entry = await CheckAsync(health);

        Assert.Equal(HealthStatus.Unhealthy, entry.Status);
        Assert.Contains("'payments'", entry.Description, StringComparison.Ordinal);
        Assert.Equal(2L, ((Dictionary<string, object>)entry.Data["payments"])["refusedSinceLastCheck"]);
        Assert.Equal(HealthStatus.Degraded, (await CheckAsync(health)).Status); // still full, no longer refusing
        gate.Open();
        await host.StopAsync();
    }

    [Fact]
    public async Task FailureStatus_ReplacesUnhealthy()
    {
        var (host, executor, health) = await StartAsync(b => b.AddBoundedWork(failureStatus: HealthStatus.Degraded));
        using var _ = host;
        await executor.ShutdownAsync();

        var entry = await CheckAsync(health);

        Assert.Equal(HealthStatus.Degraded, entry.Status);
        Assert.Contains("shut down", entry.Description, StringComparison.Ordinal);
        await host.StopAsync();
    }

    [Fact]
    public async Task ShutDownExecutor_IsUnhealthy()
    {
        var (host, executor, health) = await StartAsync();
        using var _ = host;

        await executor.ShutdownAsync();

        Assert.Equal(HealthStatus.Unhealthy, (await CheckAsync(health)).Status);
        await host.StopAsync();
    }

    [Fact]
    public void AddBoundedWork_SameNameTwice_ThrowsNamingIt()
    {
        var checks = new ServiceCollection().AddHealthChecks().AddBoundedWork();

        var ex = Assert.Throws<InvalidOperationException>(() => checks.AddBoundedWork());

        Assert.Contains("'boundedwork'", ex.Message, StringComparison.Ordinal);
        checks.AddBoundedWork("boundedwork-strict", o => o.DegradedQueueFillRatio = 0.5);
    }

    [Theory]
    [InlineData(0.0)]
    [InlineData(-0.1)]
    [InlineData(1.5)]
    [InlineData(double.NaN)]
    public void AddBoundedWork_FillRatioOutOfRange_Throws(double ratio)
    {
        var checks = new ServiceCollection().AddHealthChecks();

        var ex = Assert.Throws<ArgumentOutOfRangeException>(() => checks.AddBoundedWork(configure: o => o.DegradedQueueFillRatio = ratio));

        Assert.Contains("DegradedQueueFillRatio", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task NoExecutors_IsHealthy()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddHealthChecks().AddBoundedWork();
        using var host = builder.Build();

        var report = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();

        Assert.Equal(HealthStatus.Healthy, report.Entries["boundedwork"].Status);
    }
}
