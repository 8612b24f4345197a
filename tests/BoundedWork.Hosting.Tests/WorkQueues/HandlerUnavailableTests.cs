using System.Diagnostics.Metrics;
using BoundedWork.Testing.Storage;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// A handler that cannot be constructed because a service it needs is not registered (no build-time validation, as in
/// Production) is a configuration error: logged as an error naming the missing service, counted, and the item is a
/// dead letter at once with that reason, its retries unspent; in memory and in a durable storage alike.
/// </summary>
public sealed class HandlerUnavailableTests
{
    [Fact]
    public async Task HandlerWithAnUnregisteredDependency_InMemory_IsDeadLetteredAtOnce_LoggedByNameAndCounted()
    {
        var logs = new FakeLogCollector();
        var (host, _, deadLetters) = WorkQueueHost.Start<NeedsLedgerHandler>(o => { o.MaxRetryAttempts = 3; o.RetryDelay = TimeSpan.Zero; }, logs: logs);
        using var _ = host;
        using var counted = new MetricCollector<long>(host.Services.GetRequiredService<IMeterFactory>(), BoundedWorkDiagnostics.MeterName, "boundedwork.workqueue.handler_unavailable");

        Assert.True(host.Queue().TryEnqueue(new Notice(1)));

        var letter = Assert.Single(deadLetters.WaitFor(1));
        await host.StopAsync();
        Assert.Equal(DeadLetterReason.Failed, letter.Reason);
        Assert.Equal(1, letter.Attempts);
        Assert.Contains("IUnregisteredLedger is not registered", letter.Exception?.Message, StringComparison.Ordinal);
        var logged = Assert.Single(logs.WithEvent("HandlerUnavailable"));
        Assert.Equal(LogLevel.Error, logged.Level);
        Assert.Equal(nameof(NeedsLedgerHandler), logged.GetStructuredStateValue("Handler"));
        Assert.Contains("IUnregisteredLedger", logged.GetStructuredStateValue("MissingService"), StringComparison.Ordinal);
        Assert.Empty(logs.WithEvent("RetryScheduled"));
        Assert.Equal(1, counted.GetMeasurementSnapshot().Where(m => m.ContainsTags(new KeyValuePair<string, object?>("boundedwork.queue", "payments"))).Sum(m => m.Value));
    }

    [Fact]
    public async Task HandlerWithAnUnregisteredDependency_InADurableStorage_IsStoredAsADeadLetterAtOnce()
    {
        var logs = new FakeLogCollector();
        var builder = TestHost.CreateBuilder(logs);
        var deadLetters = new RecordingDeadLetters();
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>>(deadLetters);
        builder.Services.AddWorkQueue<Notice, NeedsLedgerHandler>("payments", o => { o.MaxRetryAttempts = 3; o.RetryDelay = TimeSpan.Zero; })
            .UseStorage((_, context) => new InMemoryWorkQueueStorage<Notice>(context))
            .Configure(o => o.WorkerCount = 1);
        using var host = builder.Build();
        await host.StartAsync();
        var queue = host.Services.GetRequiredService<IDurableWorkQueue<Notice>>();

        var id = await queue.EnqueueWithIdAsync(new Notice(1));

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(id, letter.ItemId);
        Assert.Equal(1, letter.Attempts);
        Assert.Contains("IUnregisteredLedger is not registered", letter.Exception?.Message, StringComparison.Ordinal);
        Assert.Single(logs.WithEvent("HandlerUnavailable"));
        await host.StopAsync();
    }

    public interface IUnregisteredLedger
    {
        void Record(Notice notice);
    }

    public sealed class NeedsLedgerHandler(IUnregisteredLedger ledger) : IBlockingWorkHandler<Notice>
    {
        public void Handle(Notice item, CancellationToken cancellationToken) => ledger.Record(item);
    }
}
