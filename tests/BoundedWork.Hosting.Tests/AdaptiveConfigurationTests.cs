using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Tests;

/// <summary>The adaptive mode from configuration: bound, validated naming the setting, reloaded, and its decisions logged.</summary>
public sealed class AdaptiveConfigurationTests
{
    private const string Section = "BoundedWork:Executors:payments";

    private static IHost BuildHost(FakeLogCollector logs, string mode, string? min = "2", string? max = "6")
    {
        var builder = TestHost.CreateBuilder(logs, new Dictionary<string, string?>
        {
            [$"{Section}:WorkerCount"] = "2",
            [$"{Section}:MaxWorkerCount"] = "8",
            [$"{Section}:AdaptiveMode"] = mode,
            [$"{Section}:AdaptiveMinWorkerCount"] = min,
            [$"{Section}:AdaptiveMaxWorkerCount"] = max,
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        return builder.Build();
    }

    private static BoundedExecutor Executor(IHost host) => host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");

    [Fact]
    public async Task Configuration_AdaptiveOnWithBounds_BoundIntoTheSettings()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs, "On");
        await host.StartAsync();

        var settings = Executor(host).Settings;
        Assert.Equal((AdaptiveMode.On, 2, (int?)6), (settings.AdaptiveMode, settings.AdaptiveMinWorkerCount, settings.AdaptiveMaxWorkerCount));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_AdaptiveModeChanged_AppliesAndLogsTheChange()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs, "Off");
        await host.StartAsync();

        host.Reload(($"{Section}:AdaptiveMode", "Advisory"));

        Assert.Equal(AdaptiveMode.Advisory, Executor(host).Settings.AdaptiveMode);
        var changed = Assert.Single(logs.WithEvent("ExecutorReconfigured"));
        Assert.Equal("AdaptiveMode Off -> Advisory", changed.GetStructuredStateValue("Changes"));
        await host.StopAsync();
    }

    [Fact]
    public void Configuration_MaximumAboveTheHardMaximum_StartFailsNamingTheSetting()
    {
        using var host = BuildHost(new FakeLogCollector(), "On", max: "80");
        var error = Assert.Throws<OptionsValidationException>(() => Executor(host));
        Assert.Contains("AdaptiveMaxWorkerCount (80) must not exceed MaxWorkerCount (8)", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Configuration_UnknownMode_StartFailsNamingTheSetting()
    {
        using var host = BuildHost(new FakeLogCollector(), "Sometimes");
        var error = Assert.Throws<OptionsValidationException>(() => Executor(host));
        Assert.Contains("AdaptiveMode", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Resize_WhileAdaptive_PinIsLoggedWithItsOwnEvent()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs, "On");
        await host.StartAsync();

        Executor(host).Resize(4);

        var pinned = Assert.Single(logs.WithEvent("WorkerCountDecision"));
        Assert.Equal(19, pinned.Id.Id);
        Assert.Equal(("payments", "2", "4", "Pinned", bool.TrueString), (pinned.GetStructuredStateValue("ExecutorName"), pinned.GetStructuredStateValue("OldCount"), pinned.GetStructuredStateValue("NewCount"), pinned.GetStructuredStateValue("Rule"), pinned.GetStructuredStateValue("Applied")));
        Assert.True(Executor(host).GetStatistics().IsWorkerCountPinned);
        await host.StopAsync();
    }
}
