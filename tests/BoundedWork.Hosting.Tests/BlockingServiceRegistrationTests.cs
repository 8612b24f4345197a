using BoundedWork.Synchronous;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Tests;

/// <summary>AddBlockingService binds a registered legacy service to a named executor.</summary>
public sealed class BlockingServiceRegistrationTests
{
    public interface ILegacyRepository
    {
        (string Name, bool OnWorker, Guid Instance) Find(int id);
    }

    public sealed class LegacyRepository(IServiceProvider services) : ILegacyRepository
    {
        private readonly Guid _instance = Guid.NewGuid();

        public (string Name, bool OnWorker, Guid Instance) Find(int id) =>
            ($"product {id}", services.GetRequiredKeyedService<BoundedExecutor>("legacy").IsWorkerThread, _instance);
    }

    [Fact]
    public async Task AddBlockingService_ScopedService_EachScopeGetsItsOwnBoundInstanceAndCallsRunOnTheExecutor()
    {
        using var host = BuildHost(registered: "legacy", boundTo: "legacy");
        await host.StartAsync();

        (string Name, bool OnWorker, Guid Instance) first, second;
        await using (var scope = host.Services.CreateAsyncScope())
        {
            var repository = scope.ServiceProvider.GetRequiredService<BlockingService<ILegacyRepository>>();
            first = await repository.RunAsync(static (r, id) => r.Find(id), 1);
        }

        await using (var scope = host.Services.CreateAsyncScope())
        {
            var repository = scope.ServiceProvider.GetRequiredService<BlockingService<ILegacyRepository>>();
            second = await repository.RunAsync(r => r.Find(2));
        }

        Assert.Equal(("product 1", true), (first.Name, first.OnWorker));
        Assert.Equal(("product 2", true), (second.Name, second.OnWorker));
        Assert.NotEqual(first.Instance, second.Instance);
        Assert.Same(host.Services.GetRequiredKeyedService<BoundedExecutor>("legacy"), host.Services.CreateScope().ServiceProvider.GetRequiredService<BlockingService<ILegacyRepository>>().Executor);
        await host.StopAsync();
    }

    [Fact]
    public async Task AddBlockingService_UnknownExecutorName_FailsHostStartNamingTheExecutorAndTheFix()
    {
        using var host = BuildHost(registered: "legacy", boundTo: "legacy-db");

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.StartAsync());

        Assert.Contains("AddBlockingService<ILegacyRepository>(\"legacy-db\")", error.Message, StringComparison.Ordinal);
        Assert.Contains("AddBoundedExecutor(\"legacy-db\")", error.Message, StringComparison.Ordinal);
        Assert.Contains("registered executors: legacy", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AddBlockingService_NoExecutorRegisteredAtAll_FailsHostStart()
    {
        using var host = BuildHost(registered: null, boundTo: "legacy");

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.StartAsync());

        Assert.Contains("AddBoundedExecutor(\"legacy\")", error.Message, StringComparison.Ordinal);
        Assert.Contains("registered executors: none", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AddBlockingService_UnknownExecutorResolvedWithoutAHost_FailsWithTheSameMessage()
    {
        var services = new ServiceCollection();
        services.AddBoundedExecutor("legacy");
        services.AddScoped<ILegacyRepository, LegacyRepository>();
        services.AddBlockingService<ILegacyRepository>("Legacy-DB");
        await using var provider = services.BuildServiceProvider();

        var error = Assert.Throws<InvalidOperationException>(() => provider.GetRequiredService<BlockingService<ILegacyRepository>>());

        Assert.Contains("AddBlockingService<ILegacyRepository>(\"Legacy-DB\")", error.Message, StringComparison.Ordinal);
        Assert.Contains("AddBoundedExecutor(\"Legacy-DB\")", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AddBlockingService_ExecutorNameInAnotherCase_IsTheRegisteredExecutor()
    {
        using var host = BuildHost(registered: "legacy", boundTo: "LEGACY");

        await host.StartAsync();

        var bound = host.Services.CreateScope().ServiceProvider.GetRequiredService<BlockingService<ILegacyRepository>>();
        Assert.Same(host.Services.GetRequiredKeyedService<BoundedExecutor>("legacy"), bound.Executor);
        await host.StopAsync();
    }

    /// <summary>A host with the scoped repository bound to <paramref name="boundTo"/>, and an executor <paramref name="registered"/> if not null.</summary>
    private static IHost BuildHost(string? registered, string boundTo)
    {
        var builder = TestHost.CreateBuilder();
        if (registered is not null)
        {
            builder.Services.AddBoundedExecutor(registered, o => o.WorkerCount = 1);
        }

        builder.Services.AddScoped<ILegacyRepository, LegacyRepository>();
        builder.Services.AddBlockingService<ILegacyRepository>(boundTo);
        return builder.Build();
    }
}
