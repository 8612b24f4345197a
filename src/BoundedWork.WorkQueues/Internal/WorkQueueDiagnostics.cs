using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// What the typed work queues report beside their items' outcomes, shared by every queue of a host: errors that do
/// not change an item's fate but must not pass silently. Logged under <see cref="WorkQueueLog.Category"/> and counted
/// on the host's <c>BoundedWork</c> meter, tagged with the queue's name.
/// </summary>
internal sealed class WorkQueueDiagnostics
{
    public const string QueueTag = "boundedwork.queue";

    private readonly ILogger _logger;
    private readonly Counter<long> _scopeDisposeFailures;
    private readonly Counter<long> _handlerUnavailable;

    public WorkQueueDiagnostics(IServiceProvider services)
    {
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger(WorkQueueLog.Category);
        var meter = services.GetService<IMeterFactory>()?.Create(BoundedWorkDiagnostics.MeterName) ?? new Meter(BoundedWorkDiagnostics.MeterName);
        _scopeDisposeFailures = meter.CreateCounter<long>(
            "boundedwork.workqueue.scope.dispose_failures", "{error}", "Attempts of typed work queues whose dependency-injection scope failed to dispose.");
        _handlerUnavailable = meter.CreateCounter<long>(
            "boundedwork.workqueue.handler_unavailable", "{item}", "Items of typed work queues whose handler could not be constructed (a service it needs is not registered).");
    }

    /// <summary>An item's handler could not be constructed: a configuration error; the item becomes a dead letter without retries.</summary>
    public void HandlerUnavailable(in WorkItemAttempt attempt, HandlerUnavailableException exception)
    {
        _handlerUnavailable.Add(1, new KeyValuePair<string, object?>(QueueTag, attempt.QueueName));
        _logger.HandlerUnavailable(attempt.QueueName, exception.Handler.Name, exception.MissingService, attempt.ItemId, exception);
    }

    /// <summary>An attempt's scope failed to dispose after its handler ran; the attempt's outcome stands.</summary>
    public void ScopeDisposeFailed(in WorkItemAttempt attempt, Exception exception)
    {
        _scopeDisposeFailures.Add(1, new KeyValuePair<string, object?>(QueueTag, attempt.QueueName));
        _logger.ScopeDisposeFailed(attempt.QueueName, attempt.ItemId, attempt.Attempt, exception);
    }
}
