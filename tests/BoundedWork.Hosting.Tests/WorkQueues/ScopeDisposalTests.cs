using System.Diagnostics.Metrics;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>An attempt's outcome is its handler's: disposing the attempt's scope never turns it into another.</summary>
public sealed class ScopeDisposalTests
{
    [Fact]
    public async Task ScopedServiceDisposeThrows_AfterTheHandlerSucceeded_TheItemIsHandledOnce_AndTheErrorIsLoggedAndCounted()
    {
        var logs = new FakeLogCollector();
        var (host, probe, deadLetters) = WorkQueueHost.Start<ResourceNoticeHandler>(
            o => o.RetryDelay = TimeSpan.Zero,
            logs: logs,
            services: s => s.AddScoped<FailsOnDispose>());
        using var _ = host;
        using var failures = new MetricCollector<long>(
            host.Services.GetRequiredService<IMeterFactory>(), BoundedWorkDiagnostics.MeterName, "boundedwork.workqueue.scope.dispose_failures");

        Assert.True(host.Queue().TryEnqueue(new Notice(1)));

        probe.WaitHandled(1);
        await host.StopAsync();
        Assert.Single(probe.Attempts);
        Assert.Empty(deadLetters.Letters);
        var logged = Assert.Single(logs.WithEvent("ScopeDisposeFailed"));
        Assert.Equal(LogLevel.Error, logged.Level);
        Assert.Equal("payments", logged.GetStructuredStateValue("QueueName"));
        Assert.Equal("dispose failed", logged.Exception?.Message);
        Assert.Equal(1, failures.GetMeasurementSnapshot().Where(m => m.ContainsTags(new KeyValuePair<string, object?>("boundedwork.queue", "payments"))).Sum(m => m.Value));
        Assert.Equal(1, host.Executor().GetStatistics().Completed);
    }

    [Fact]
    public async Task ScopedServiceDisposeThrows_AfterTheHandlerFailed_TheHandlersFailureIsTheAttempts()
    {
        var logs = new FakeLogCollector();
        var (host, probe, deadLetters) = WorkQueueHost.Start<ResourceNoticeHandler>(
            o => o.MaxRetryAttempts = 0,
            logs: logs,
            services: s => s.AddScoped<FailsOnDispose>());
        using var _ = host;
        probe.Behaviour = (_, _, _) => throw new InvalidOperationException("card declined");

        Assert.True(host.Queue().TryEnqueue(new Notice(1)));

        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(DeadLetterReason.Failed, letter.Reason);
        Assert.Equal("card declined", letter.Exception?.Message);
        await host.StopAsync();
        Assert.Single(logs.WithEvent("ScopeDisposeFailed"));
    }

    /// <summary>A scoped resource whose disposal fails, as a broken connection's might.</summary>
    public sealed class FailsOnDispose : IDisposable
    {
        public void Dispose() => throw new InvalidOperationException("dispose failed");
    }

    /// <summary>A handler that depends on <see cref="FailsOnDispose"/>.</summary>
    public sealed class ResourceNoticeHandler(Probe probe, ScopeMarker scope, FailsOnDispose resource, IServiceProvider services) : IBlockingWorkHandler<Notice>
    {
        public FailsOnDispose Resource { get; } = resource;

        public void Handle(Notice item, CancellationToken cancellationToken) => probe.Handle(item, services, scope, cancellationToken);
    }
}
