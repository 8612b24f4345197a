using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Tests;

public sealed class ReloadTests
{
    private const string Section = "BoundedWork:Executors:payments";

    private static IHost BuildHost(FakeLogCollector logs, int workers = 2)
    {
        var builder = TestHost.CreateBuilder(logs, new Dictionary<string, string?>
        {
            [$"{Section}:WorkerCount"] = workers.ToString(System.Globalization.CultureInfo.InvariantCulture),
            [$"{Section}:MaxWorkerCount"] = "8",
            [$"{Section}:QueueCapacity"] = "100",
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        return builder.Build();
    }

    private static int Target(IHost host) =>
        host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").GetStatistics().TargetWorkerCount;

    [Fact]
    public async Task Reload_WorkerCountChanged_ResizesAndLogs()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:WorkerCount", "5"));

        Assert.Equal(5, Target(host));
        Assert.Equal(5, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").GetStatistics().LiveWorkerCount);
        var resized = Assert.Single(logs.WithEvent("ExecutorReconfigured"));
        Assert.Equal("payments", resized.GetStructuredStateValue("ExecutorName"));
        Assert.Equal("WorkerCount 2 -> 5", resized.GetStructuredStateValue("Changes"));

        host.Reload(($"{Section}:WorkerCount", "1"));

        Assert.Equal(1, Target(host));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_InvalidWorkerCount_KeepsLastGoodSizeAndWarns_ThenAValidReloadApplies()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();
        var monitor = host.Services.GetRequiredService<IOptionsMonitor<BoundedExecutorOptions>>();

        host.Reload(($"{Section}:WorkerCount", "0"));

        Assert.Equal(2, Target(host));
        var warning = Assert.Single(logs.WithEvent("InvalidReload"));
        Assert.Equal(Microsoft.Extensions.Logging.LogLevel.Warning, warning.Level);
        Assert.Contains("'payments'", warning.Message, StringComparison.Ordinal);
        Assert.Contains("WorkerCount must be at least 1", warning.Message, StringComparison.Ordinal);
        Assert.Equal(2, monitor.Get("payments").WorkerCount); // the monitor keeps answering, with the last good value

        host.Reload(($"{Section}:WorkerCount", "99"));
        Assert.Equal(2, Target(host));
        Assert.Equal(2, logs.WithEvent("InvalidReload").Count);

        host.Reload(($"{Section}:WorkerCount", "4"));

        Assert.Equal(4, Target(host));
        Assert.Single(logs.WithEvent("ExecutorReconfigured"));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_UnconvertibleValue_KeepsRunningAndWarns()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:RejectionPolicy", "Fastest"), ($"{Section}:WorkerCount", "6"));

        Assert.Equal(2, Target(host));
        var warning = Assert.Single(logs.WithEvent("InvalidReload"));
        Assert.Contains("Fastest", warning.Message, StringComparison.Ordinal);
        Assert.Contains("RejectionPolicy", warning.Message, StringComparison.Ordinal);

        host.Reload(($"{Section}:RejectionPolicy", "Abort"));

        Assert.Equal(6, Target(host));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_RejectionPolicyOfTwoNames_IsIgnoredAndWarns()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();
        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");

        host.Reload(($"{Section}:RejectionPolicy", "CallerRuns,Discard"));

        Assert.Equal(RejectionPolicy.Abort, executor.RejectionPolicy);
        var warning = Assert.Single(logs.WithEvent("InvalidReload"));
        Assert.Contains("'CallerRuns,Discard'", warning.Message, StringComparison.Ordinal);
        Assert.Contains("RejectionPolicy must be one of", warning.Message, StringComparison.Ordinal);

        host.Reload(($"{Section}:RejectionPolicy", "wait"));

        Assert.Equal(RejectionPolicy.Wait, executor.RejectionPolicy);
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_EveryRuntimeSettingChanged_AppliesThemAllInOneReconfiguration()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(
            ($"{Section}:QueueCapacity", "500"),
            ($"{Section}:RejectionPolicy", "Wait"),
            ($"{Section}:WaitTimeout", "00:00:07"),
            ($"{Section}:SlowItemThreshold", "00:01:00"),
            ($"{Section}:QueueWaitThreshold", "00:00:03"),
            ($"{Section}:WorkerCount", "3"));
        host.Reload(); // an unrelated reload changes and logs nothing more

        var settings = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").Settings;
        Assert.Equal(new BoundedExecutorSettings
        {
            WorkerCount = 3,
            QueueCapacity = 500,
            RejectionPolicy = RejectionPolicy.Wait,
            WaitTimeout = TimeSpan.FromSeconds(7),
            SlowItemThreshold = TimeSpan.FromMinutes(1),
            QueueWaitThreshold = TimeSpan.FromSeconds(3),
        }, settings);
        var applied = Assert.Single(logs.WithEvent("ExecutorReconfigured"));
        Assert.Equal(
            "WorkerCount 2 -> 3, QueueCapacity 100 -> 500, RejectionPolicy Abort -> Wait, WaitTimeout 00:00:30 -> 00:00:07, SlowItemThreshold 00:00:30 -> 00:01:00, QueueWaitThreshold infinite -> 00:00:03",
            applied.GetStructuredStateValue("Changes"));
        Assert.Empty(logs.WithEvent("RestartRequired"));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_RuntimeChangeThroughTheApi_SurvivesReloadsUntilThatSettingsConfiguredValueChanges()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();
        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        executor.Reconfigure(executor.Settings with { QueueCapacity = 900, RejectionPolicy = RejectionPolicy.Discard, WorkerCount = 6 });

        // Another setting's configured value changes: only that setting is applied.
        host.Reload(($"{Section}:WaitTimeout", "00:00:09"));

        Assert.Equal(900, executor.Settings.QueueCapacity);
        Assert.Equal(RejectionPolicy.Discard, executor.Settings.RejectionPolicy);
        Assert.Equal(6, executor.Settings.WorkerCount);
        Assert.Equal(TimeSpan.FromSeconds(9), executor.Settings.WaitTimeout);

        // The configured capacity itself changes: configuration wins for that setting, the others stay.
        host.Reload(($"{Section}:QueueCapacity", "250"));

        Assert.Equal(250, executor.Settings.QueueCapacity);
        Assert.Equal(RejectionPolicy.Discard, executor.Settings.RejectionPolicy);
        Assert.Equal(6, executor.Settings.WorkerCount);

        // Setting a configured value back to the one last applied is no change either.
        executor.Reconfigure(executor.Settings with { QueueCapacity = 50 });
        host.Reload(($"{Section}:QueueCapacity", "250"));
        Assert.Equal(50, executor.Settings.QueueCapacity);
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_FixedSettingChanged_WarnsThatARestartIsNeededOnce()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:FlowExecutionContext", "false"), ($"{Section}:QueueCapacity", "300"));
        host.Reload(); // an unrelated reload does not repeat the warning

        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        Assert.Equal(300, executor.QueueCapacity);
        var warning = Assert.Single(logs.WithEvent("RestartRequired"));
        Assert.Contains("'payments'", warning.Message, StringComparison.Ordinal);
        Assert.Equal("FlowExecutionContext True -> False", warning.GetStructuredStateValue("Changes"));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_UnrelatedKeyChanged_DoesNotUndoARuntimeResize()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();
        host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").Resize(7);

        host.Reload(("Unrelated:Key", "x"));

        Assert.Equal(7, Target(host));
        Assert.Empty(logs.WithEvent("ExecutorReconfigured"));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_WorkerCountAboveTheRunningMaximum_WarnsAndKeepsTheSize()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:MaxWorkerCount", "20"), ($"{Section}:WorkerCount", "12"), ($"{Section}:QueueCapacity", "120"));

        Assert.Equal(2, Target(host));
        var warning = Assert.Single(logs.WithEvent("ResizeAboveMaximum"));
        Assert.Equal("12", warning.GetStructuredStateValue("WorkerCount"));
        Assert.Equal("8", warning.GetStructuredStateValue("MaxWorkerCount"));
        Assert.Single(logs.WithEvent("RestartRequired"));
        Assert.Equal(120, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").QueueCapacity); // the valid rest applies
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_BoundWithBind_UnconvertibleValueIsIgnoredAndTheMonitorKeepsTheLastGoodOptions()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs, new Dictionary<string, string?> { [$"{Section}:WorkerCount"] = "2" });
        builder.Services.AddBoundedExecutor("payments").Bind(builder.Configuration.GetSection(Section));
        using var host = builder.Build();
        await host.StartAsync();
        var monitor = host.Services.GetRequiredService<IOptionsMonitor<BoundedExecutorOptions>>();

        host.Reload(($"{Section}:WorkerCount", "many"));

        Assert.Equal(2, Target(host));
        Assert.Contains("'many'", Assert.Single(logs.WithEvent("InvalidReload")).Message, StringComparison.Ordinal);
        Assert.Equal(2, monitor.Get("payments").WorkerCount);
        await host.StopAsync();
    }
}
