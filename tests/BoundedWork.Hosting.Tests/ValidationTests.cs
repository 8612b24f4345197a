using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Tests;

public sealed class ValidationTests
{
    private const string Section = "BoundedWork:Executors:payments";

    [Theory]
    [InlineData("WorkerCount", "0", "WorkerCount")]
    [InlineData("WorkerCount", "-2", "WorkerCount")]
    [InlineData("WorkerCount", "9", "MaxWorkerCount")]
    [InlineData("MaxWorkerCount", "0", "MaxWorkerCount")]
    [InlineData("QueueCapacity", "0", "QueueCapacity")]
    [InlineData("WaitTimeout", "-00:00:05", "WaitTimeout")]
    [InlineData("RejectionPolicy", "Fastest", "RejectionPolicy")]
    [InlineData("QueueCapacity", "lots", "QueueCapacity")]
    public async Task StartAsync_BadSetting_FailsNamingExecutorAndSetting(string key, string value, string namedSetting)
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            [$"{Section}:MaxWorkerCount"] = "8",
            [$"{Section}:{key}"] = value,
        });
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1).BindConfiguration(Section);
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Equal("payments", ex.OptionsName);
        Assert.Contains("Executor 'payments'", ex.Message, StringComparison.Ordinal);
        Assert.Contains(namedSetting, ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartAsync_UnknownPolicyStringInJson_FailsWithValidationExceptionListingThePolicies()
    {
        const string json = """
            { "BoundedWork": { "Executors": { "payments": { "WorkerCount": 2, "RejectionPolicy": "DropEverything" } } } }
            """;
        var builder = TestHost.CreateBuilder(json: json);
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section).ValidateOnStart();
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains("Executor 'payments'", ex.Message, StringComparison.Ordinal);
        Assert.Contains("DropEverything", ex.Message, StringComparison.Ordinal);
        Assert.Contains($"{Section}:RejectionPolicy", ex.Message, StringComparison.Ordinal);
        Assert.Contains("Abort, CallerRuns, Discard, DiscardOldest, Wait", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartAsync_SeveralBadSettings_ReportsEachOne()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 0;
            o.QueueCapacity = 0;
        });
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Contains(ex.Failures, f => f.Contains("WorkerCount", StringComparison.Ordinal));
        Assert.Contains(ex.Failures, f => f.Contains("QueueCapacity", StringComparison.Ordinal));
        Assert.All(ex.Failures, f => Assert.StartsWith("Executor 'payments': ", f, StringComparison.Ordinal));
    }

    [Fact]
    public async Task StartAsync_BadWorkerPairAndUnknownPolicyString_ReportsBoth()
    {
        const string json = """
            { "BoundedWork": { "Executors": { "payments": { "WorkerCount": 12, "MaxWorkerCount": 8, "RejectionPolicy": "Fastest", "QueueCapacity": 100 } } } }
            """;
        var builder = TestHost.CreateBuilder(json: json);
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Equal(2, ex.Failures.Count());
        Assert.Contains("Executor 'payments': WorkerCount (12) must not exceed MaxWorkerCount (8).", ex.Failures);
        Assert.Contains(ex.Failures, f => f.StartsWith("Executor 'payments': Failed to convert configuration value 'Fastest' at 'BoundedWork:Executors:payments:RejectionPolicy'", StringComparison.Ordinal)
            && f.EndsWith("RejectionPolicy must be one of Abort, CallerRuns, Discard, DiscardOldest, Wait.", StringComparison.Ordinal));
    }

    [Fact]
    public async Task StartAsync_TwoUnconvertibleValues_ReportsBothWithoutTheirDefaults()
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            [$"{Section}:QueueCapacity"] = "lots",
            [$"{Section}:WaitTimeout"] = "soon",
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Equal(2, ex.Failures.Count());
        Assert.Contains(ex.Failures, f => f.Contains("'lots'", StringComparison.Ordinal) && f.Contains($"{Section}:QueueCapacity", StringComparison.Ordinal));
        Assert.Contains(ex.Failures, f => f.Contains("'soon'", StringComparison.Ordinal) && f.Contains($"{Section}:WaitTimeout", StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("CallerRuns,Discard")]
    [InlineData("Wait, Abort")]
    [InlineData("3")]
    [InlineData("0")]
    [InlineData("-1")]
    [InlineData(" Wait")]
    [InlineData("")]
    public async Task StartAsync_RejectionPolicyThatIsNotOneName_FailsNamingTheValueAndThePolicies(string value)
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            [$"{Section}:WorkerCount"] = "2",
            [$"{Section}:RejectionPolicy"] = value,
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        var failure = Assert.Single(ex.Failures);
        Assert.StartsWith("Executor 'payments': ", failure, StringComparison.Ordinal);
        Assert.Contains($"'{value}'", failure, StringComparison.Ordinal);
        Assert.Contains($"{Section}:RejectionPolicy", failure, StringComparison.Ordinal);
        Assert.Contains("RejectionPolicy must be one of Abort, CallerRuns, Discard, DiscardOldest, Wait.", failure, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("callerruns", RejectionPolicy.CallerRuns)]
    [InlineData("WAIT", RejectionPolicy.Wait)]
    [InlineData("discardOldest", RejectionPolicy.DiscardOldest)]
    [InlineData("Abort", RejectionPolicy.Abort)]
    public async Task StartAsync_RejectionPolicyNameInAnyCase_Starts(string value, RejectionPolicy expected)
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?> { [$"{Section}:RejectionPolicy"] = value });
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1).BindConfiguration(Section);
        using var host = builder.Build();

        await host.StartAsync();

        Assert.Equal(expected, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").RejectionPolicy);
        await host.StopAsync();
    }

    [Fact]
    public async Task StartAsync_UnconvertibleWorkerCountBesideOtherBadSettings_NamesEveryBadSetting()
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            [$"{Section}:WorkerCount"] = "lots",
            [$"{Section}:MaxWorkerCount"] = "0",
            [$"{Section}:QueueCapacity"] = "0",
            [$"{Section}:RejectionPolicy"] = "3",
            [$"{Section}:WaitTimeout"] = "-00:00:01",
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        // One message per bad setting, each naming it; nothing about the default that stands in for "lots".
        Assert.Equal(5, ex.Failures.Count());
        Assert.Contains(ex.Failures, f => f.Contains("'lots'", StringComparison.Ordinal) && f.Contains($"{Section}:WorkerCount", StringComparison.Ordinal));
        Assert.Contains(ex.Failures, f => f.Contains("MaxWorkerCount must be between", StringComparison.Ordinal));
        Assert.Contains(ex.Failures, f => f.Contains("QueueCapacity must be at least 1", StringComparison.Ordinal));
        Assert.Contains(ex.Failures, f => f.Contains("'3'", StringComparison.Ordinal) && f.Contains($"{Section}:RejectionPolicy", StringComparison.Ordinal));
        Assert.Contains(ex.Failures, f => f.Contains("WaitTimeout must be positive", StringComparison.Ordinal));
        Assert.All(ex.Failures, f => Assert.StartsWith("Executor 'payments': ", f, StringComparison.Ordinal));
    }

    [Fact]
    public async Task StartAsync_OnlyTheBadExecutorIsNamed()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        builder.Services.AddBoundedExecutor("mail", o => o.QueueCapacity = -1);
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Equal("mail", ex.OptionsName);
        Assert.DoesNotContain("payments", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartAsync_ValidSettings_Starts()
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            [$"{Section}:WorkerCount"] = "2",
            [$"{Section}:RejectionPolicy"] = "DiscardOldest",
        });
        builder.Services.AddBoundedExecutor("payments").BindConfiguration(Section);
        using var host = builder.Build();

        await host.StartAsync();

        Assert.Equal(RejectionPolicy.DiscardOldest, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments").RejectionPolicy);
        await host.StopAsync();
    }

    [Fact]
    public async Task StartAsync_BoundWithBindToASection_ReportsEveryValueThatDoesNotConvert()
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            [$"{Section}:QueueCapacity"] = "lots",
            [$"{Section}:WaitTimeout"] = "soon",
        });
        builder.Services.AddBoundedExecutor("payments").Bind(builder.Configuration.GetSection(Section));
        using var host = builder.Build();

        var ex = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync());

        Assert.Equal(2, ex.Failures.Count());
        Assert.Contains(ex.Failures, f => f.Contains("'lots'", StringComparison.Ordinal) && f.Contains($"{Section}:QueueCapacity", StringComparison.Ordinal));
        Assert.Contains(ex.Failures, f => f.Contains("'soon'", StringComparison.Ordinal) && f.Contains($"{Section}:WaitTimeout", StringComparison.Ordinal));
    }
}
