using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Tests;

public sealed class ReloadTests
{
    private const string Section = "BoundedWork:Executors:payments";

    private static IHost BuildHost(CapturingLoggerProvider logs, int workers = 2)
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
        var logs = new CapturingLoggerProvider();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:WorkerCount", "5"));

        Assert.Equal(5, Target(host));
        Assert.Equal(5, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").GetStatistics().LiveWorkerCount);
        var resized = Assert.Single(logs.WithEvent("ExecutorResized"));
        Assert.Equal("payments", resized.State["ExecutorName"]);
        Assert.Equal(2, resized.State["PreviousWorkerCount"]);
        Assert.Equal(5, resized.State["WorkerCount"]);

        host.Reload(($"{Section}:WorkerCount", "1"));

        Assert.Equal(1, Target(host));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_InvalidWorkerCount_KeepsLastGoodSizeAndWarns_ThenAValidReloadApplies()
    {
        var logs = new CapturingLoggerProvider();
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
        Assert.Single(logs.WithEvent("ExecutorResized"));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_UnconvertibleValue_KeepsRunningAndWarns()
    {
        var logs = new CapturingLoggerProvider();
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
    public async Task Reload_QueueCapacityChanged_WarnsThatARestartIsNeededAndKeepsTheOldCapacity()
    {
        var logs = new CapturingLoggerProvider();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:QueueCapacity", "500"), ($"{Section}:RejectionPolicy", "Wait"));
        host.Reload(); // an unrelated reload does not repeat the warning

        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        Assert.Equal(100, executor.QueueCapacity);
        Assert.Equal(RejectionPolicy.Abort, executor.RejectionPolicy);
        var warning = Assert.Single(logs.WithEvent("RestartRequired"));
        Assert.Contains("'payments'", warning.Message, StringComparison.Ordinal);
        Assert.Contains("QueueCapacity 100 -> 500", warning.Message, StringComparison.Ordinal);
        Assert.Contains("RejectionPolicy Abort -> Wait", warning.Message, StringComparison.Ordinal);
        Assert.Equal(2, Target(host));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_UnrelatedKeyChanged_DoesNotUndoARuntimeResize()
    {
        var logs = new CapturingLoggerProvider();
        using var host = BuildHost(logs);
        await host.StartAsync();
        host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").Resize(7);

        host.Reload(("Unrelated:Key", "x"));

        Assert.Equal(7, Target(host));
        Assert.Empty(logs.WithEvent("ExecutorResized"));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_WorkerCountAboveTheRunningMaximum_WarnsAndKeepsTheSize()
    {
        var logs = new CapturingLoggerProvider();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:MaxWorkerCount", "20"), ($"{Section}:WorkerCount", "12"));

        Assert.Equal(2, Target(host));
        var warning = Assert.Single(logs.WithEvent("ResizeAboveMaximum"));
        Assert.Equal(12, warning.State["WorkerCount"]);
        Assert.Equal(8, warning.State["MaxWorkerCount"]);
        Assert.Single(logs.WithEvent("RestartRequired"));
        await host.StopAsync();
    }
}
