using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Tests;

/// <summary>Fair share from configuration: bound (weights included), reloaded into the running executor, and a bad value refused naming the setting.</summary>
public sealed class FairShareConfigurationTests
{
    private const string Section = "BoundedWork:Executors:payments";

    private static IHost BuildHost(FakeLogCollector logs, string bigWeight = "5")
    {
        var builder = TestHost.CreateBuilder(logs, new Dictionary<string, string?>
        {
            [$"{Section}:WorkerCount"] = "2",
            [$"{Section}:FairShare:DefaultWeight"] = "2",
            [$"{Section}:FairShare:Weights:big"] = bigWeight,
            [$"{Section}:FairShare:MaxRunningPerTenant"] = "1",
            [$"{Section}:FairShare:MaxQueuedPerTenant"] = "50",
            [$"{Section}:FairShare:ShedLongestBacklog"] = "true",
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        return builder.Build();
    }

    private static BoundedExecutor Executor(IHost host) => host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");

    [Fact]
    public async Task Configuration_FairShareSection_BoundWithWeights()
    {
        using var host = BuildHost(new FakeLogCollector());
        await host.StartAsync();

        var fairShare = Executor(host).Settings.FairShare;
        Assert.NotNull(fairShare);
        Assert.Equal((2, 5, 2, (int?)1, (int?)50, true), (fairShare.DefaultWeight, fairShare.GetWeight("big"), fairShare.GetWeight("small"), fairShare.MaxRunningPerTenant, fairShare.MaxQueuedPerTenant, fairShare.ShedLongestBacklog));
        await host.StopAsync();
    }

    [Fact]
    public async Task Reload_WeightChanged_PutInForceAndLogged()
    {
        var logs = new FakeLogCollector();
        using var host = BuildHost(logs);
        await host.StartAsync();

        host.Reload(($"{Section}:FairShare:Weights:big", "9"), ($"{Section}:FairShare:Weights:new", "3"));

        var fairShare = Executor(host).Settings.FairShare!;
        Assert.Equal((9, 3, 2), (fairShare.GetWeight("big"), fairShare.GetWeight("new"), fairShare.GetWeight("other")));
        var changed = Assert.Single(logs.WithEvent("ExecutorReconfigured"));
        Assert.Contains("big: 9", changed.GetStructuredStateValue("Changes"), StringComparison.Ordinal);
        await host.StopAsync();
    }

    [Fact]
    public void Configuration_WeightAboveTheMaximum_StartFailsNamingTheSetting()
    {
        using var host = BuildHost(new FakeLogCollector(), bigWeight: "5000");
        var error = Assert.Throws<OptionsValidationException>(() => Executor(host));
        Assert.Contains("FairShare.Weights['big'] must be between 1 and 1000 (was 5000)", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Configuration_WeightNotANumber_StartFailsNamingTheSetting()
    {
        using var host = BuildHost(new FakeLogCollector(), bigWeight: "heavy");
        var error = Assert.Throws<OptionsValidationException>(() => Executor(host)); // the binder alone skipped it silently
        Assert.Contains("'heavy' at 'BoundedWork:Executors:payments:FairShare:Weights:big'", error.Message, StringComparison.Ordinal);
    }
}
