using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Tests;

public sealed class RegistrationTests
{
    private sealed class PaymentCallbacks([FromKeyedServices("payments")] BoundedExecutor executor)
    {
        public BoundedExecutor Executor { get; } = executor;
    }

    [Fact]
    public async Task FromKeyedServices_InjectsTheNamedExecutor()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        builder.Services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
        builder.Services.AddSingleton<PaymentCallbacks>();
        using var host = builder.Build();
        await host.StartAsync();

        var callbacks = host.Services.GetRequiredService<PaymentCallbacks>();

        Assert.Same(host.Services.GetRequiredService<IBoundedExecutorRegistry>().GetExecutor("payments"), callbacks.Executor);
        await host.StopAsync();
    }

    [Fact]
    public async Task AddBoundedExecutor_KeyedService_ResolvesTheNamedExecutor()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
        builder.Services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();

        var payments = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        var mail = host.Services.GetRequiredKeyedService<BoundedExecutor>("mail");

        Assert.Equal("payments", payments.Name);
        Assert.Equal(2, payments.GetStatistics().TargetWorkerCount);
        Assert.Equal("mail", mail.Name);
        Assert.Same(payments, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments"));
        Assert.Equal(42, await payments.RunAsync(() => 42));
        await host.StopAsync();
    }

    private sealed class OtherCaseCallbacks([FromKeyedServices("PAYMENTS")] BoundedExecutor executor)
    {
        public BoundedExecutor Executor { get; } = executor;
    }

    [Fact]
    public async Task KeyedService_NameInAnotherCase_ResolvesTheSameExecutorAsTheRegistry()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        builder.Services.AddSingleton<OtherCaseCallbacks>();
        using var host = builder.Build();
        await host.StartAsync();
        var registered = host.Services.GetRequiredService<IBoundedExecutorRegistry>().GetExecutor("payments");

        Assert.Same(registered, host.Services.GetRequiredKeyedService<BoundedExecutor>("Payments"));
        Assert.Same(registered, host.Services.GetRequiredKeyedService<BoundedExecutor>("payments"));
        Assert.Same(registered, host.Services.GetRequiredService<OtherCaseCallbacks>().Executor);
        Assert.Same(registered, host.Services.GetRequiredService<IBoundedExecutorRegistry>().GetExecutor("PayMents"));
        await host.StopAsync();
    }

    [Fact]
    public async Task KeyedService_UnknownName_IsNotRegistered()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();

        Assert.Null(host.Services.GetKeyedService<BoundedExecutor>("mail"));
        Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredKeyedService<BoundedExecutor>("mail"));
        await host.StopAsync();
    }

    [Fact]
    public void AddBoundedExecutor_SameNameTwice_ThrowsNamingIt()
    {
        var services = new ServiceCollection();
        services.AddBoundedExecutor("payments");

        var exact = Assert.Throws<InvalidOperationException>(() => services.AddBoundedExecutor("payments"));
        var otherCase = Assert.Throws<InvalidOperationException>(() => services.AddBoundedExecutor("Payments"));

        Assert.Contains("'payments'", exact.Message, StringComparison.Ordinal);
        Assert.Contains("'Payments'", otherCase.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("")]
    [InlineData("  ")]
    public void AddBoundedExecutor_BlankName_Throws(string name) =>
        Assert.Throws<ArgumentException>(() => new ServiceCollection().AddBoundedExecutor(name));

    [Fact]
    public void AddBoundedExecutor_SeveralExecutors_RegistersSharedServicesOnce()
    {
        var services = new ServiceCollection();
        services.AddBoundedExecutor("a");
        services.AddBoundedExecutor("b");
        services.AddHealthChecks().AddBoundedWork();

        Assert.Single(services, d => d.ServiceType == typeof(IHostedService) && d.ImplementationType?.Assembly == typeof(IBoundedExecutorRegistry).Assembly);
        Assert.Single(services, d => d.ServiceType == typeof(IBoundedExecutorRegistry));
        Assert.Single(services, d => d.ServiceType == typeof(IValidateOptions<BoundedExecutorOptions>));
        Assert.Single(services, d => d.ServiceType == typeof(IPostConfigureOptions<BoundedExecutorOptions>));
    }

    [Fact]
    public async Task Registry_ListsEveryExecutorWithStatistics()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
        builder.Services.AddBoundedExecutor("mail", o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();
        var registry = host.Services.GetRequiredService<IBoundedExecutorRegistry>();

        Assert.Equal(["payments", "mail"], registry.Names);
        Assert.Same(host.Services.GetRequiredKeyedService<BoundedExecutor>("payments"), registry.GetExecutor("payments"));
        Assert.True(registry.TryGetExecutor("PAYMENTS", out var byOtherCase));
        Assert.Equal("payments", byOtherCase.Name);
        var statistics = registry.GetStatistics();
        Assert.Equal(["payments", "mail"], statistics.Select(s => s.Name));
        Assert.Equal([2, 1], statistics.Select(s => s.TargetWorkerCount));
        await host.StopAsync();
    }

    [Fact]
    public async Task Registry_UnknownName_ThrowsNamingIt()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        await using var provider = builder.Services.BuildServiceProvider();
        var registry = provider.GetRequiredService<IBoundedExecutorRegistry>();

        var ex = Assert.Throws<KeyNotFoundException>(() => registry.GetExecutor("refunds"));

        Assert.Contains("'refunds'", ex.Message, StringComparison.Ordinal);
        Assert.False(registry.TryGetExecutor("refunds", out _));
    }

    [Fact]
    public async Task BindConfiguration_AppliesEverySetting_AndTheRegistrationNameWins()
    {
        var builder = TestHost.CreateBuilder(settings: new Dictionary<string, string?>
        {
            ["BoundedWork:Executors:payments:Name"] = "something-else",
            ["BoundedWork:Executors:payments:WorkerCount"] = "3",
            ["BoundedWork:Executors:payments:MaxWorkerCount"] = "6",
            ["BoundedWork:Executors:payments:QueueCapacity"] = "50",
            ["BoundedWork:Executors:payments:RejectionPolicy"] = "wait",
            ["BoundedWork:Executors:payments:WaitTimeout"] = "00:00:05",
        });
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1)
            .BindConfiguration("BoundedWork:Executors:payments")
            .ValidateOnStart();
        using var host = builder.Build();
        await host.StartAsync();

        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        var options = host.Services.GetRequiredService<IOptionsMonitor<BoundedExecutorOptions>>().Get("payments");

        Assert.Equal("payments", executor.Name);
        Assert.Equal(3, executor.GetStatistics().TargetWorkerCount);
        Assert.Equal(6, executor.MaxWorkerCount);
        Assert.Equal(50, executor.QueueCapacity);
        Assert.Equal(RejectionPolicy.Wait, executor.RejectionPolicy);
        Assert.Equal(TimeSpan.FromSeconds(5), options.WaitTimeout);
        await host.StopAsync();
    }

    [Fact]
    public async Task AddBoundedExecutor_PassesTheHostMeterFactory()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
        using var host = builder.Build();

        var options = host.Services.GetRequiredService<IOptionsMonitor<BoundedExecutorOptions>>().Get("payments");

        Assert.Same(host.Services.GetRequiredService<IMeterFactory>(), options.MeterFactory);
        await host.StopAsync();
    }
}
