using BoundedWork.Hosting.Internal;
using BoundedWork.Testing.Storage;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// The health check of BoundedWork.Hosting reads a typed queue's storage through the contributor BoundedWork.WorkQueues
/// registers with <c>UseStorage</c>: once, however many queues have a storage.
/// </summary>
public sealed class StorageHealthContributorTests
{
    [Fact]
    public async Task HealthCheck_QueuesWithAStorage_HaveAStorageEntry_TheContributorIsRegisteredOnce()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddWorkQueue<Receipt, ReceiptHandler>("payments").UseStorage((_, context) => new InMemoryWorkQueueStorage<Receipt>(context));
        builder.Services.AddWorkQueue<Refund, RefundHandler>("contracts").UseStorage((_, context) => new InMemoryWorkQueueStorage<Refund>(context));
        builder.Services.AddBoundedExecutor("mail");
        builder.Services.AddHealthChecks().AddBoundedWork();
        using var host = builder.Build();
        await host.StartAsync();

        Assert.IsType<StorageHealthContributor>(Assert.Single(host.Services.GetServices<IExecutorHealthContributor>()));
        var entry = (await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync()).Entries["boundedwork"];
        Assert.Equal(HealthStatus.Healthy, entry.Status);
        var payments = Assert.IsType<Dictionary<string, object>>(entry.Data["payments"]);
        var storage = Assert.IsType<Dictionary<string, object>>(payments["storage"]);
        Assert.Equal("InMemory", storage["kind"]);
        Assert.Equal(true, storage["available"]);
        Assert.True(Assert.IsType<Dictionary<string, object>>(entry.Data["contracts"]).ContainsKey("storage"));
        Assert.False(Assert.IsType<Dictionary<string, object>>(entry.Data["mail"]).ContainsKey("storage"));
        await host.StopAsync();
    }

    [Fact]
    public void Assess_StorageUnavailable_LowersTheStatusToUnhealthy_NamingTheQueueAndTheError_NeverRaisesIt()
    {
        using var executor = new BoundedExecutor(new BoundedExecutorOptions { Name = "payments", WorkerCount = 1 });
        var contributor = new StorageHealthContributor([new FakeStorage("payments", new WorkQueueStorageStatistics { IsAvailable = false, LastError = "connection refused" })]);
        var status = HealthStatus.Healthy;
        string? problem = null;
        var data = new Dictionary<string, object>(StringComparer.Ordinal);

        contributor.Assess(executor.GetStatistics(), ref status, ref problem, data);

        Assert.Equal(HealthStatus.Unhealthy, status);
        Assert.Equal("Work queue 'payments' cannot reach its Fake storage: connection refused", problem);
        Assert.Equal(false, Assert.IsType<Dictionary<string, object>>(data["storage"])["available"]);

        // A storage that is fine leaves an executor's own problem as it is.
        var fine = new StorageHealthContributor([new FakeStorage("payments", new WorkQueueStorageStatistics { IsAvailable = true })]);
        (status, problem) = (HealthStatus.Degraded, "the executor's own");
        fine.Assess(executor.GetStatistics(), ref status, ref problem, data);
        Assert.Equal((HealthStatus.Degraded, "the executor's own"), (status, problem));
    }

    public sealed record Receipt(int Id);

    public sealed record Refund(int Id);

    public sealed class ReceiptHandler : IBlockingWorkHandler<Receipt>
    {
        public void Handle(Receipt item, CancellationToken cancellationToken)
        {
        }
    }

    public sealed class RefundHandler : IBlockingWorkHandler<Refund>
    {
        public void Handle(Refund item, CancellationToken cancellationToken)
        {
        }
    }

    private sealed class FakeStorage(string queueName, WorkQueueStorageStatistics statistics) : IWorkQueueStorage
    {
        public string QueueName => queueName;

        public string StorageKind => "Fake";

        public WorkQueueStorageStatistics Statistics => statistics;
    }
}
