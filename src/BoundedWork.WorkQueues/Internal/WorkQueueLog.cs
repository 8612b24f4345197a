using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Every message the typed work queues log, under the category <c>BoundedWork.WorkQueues</c>, with event ids
/// 100-199 (stable; documented in docs/metrics-and-events.md). Each message names its queue.
/// </summary>
internal static partial class WorkQueueLog
{
    public const string Category = "BoundedWork.WorkQueues";

    [LoggerMessage(EventId = 100, EventName = "DeadLettered", Level = LogLevel.Error,
        Message = "Work queue '{QueueName}' could not handle an item ({Reason}, rejection {RejectionReason}, {Attempts} attempts) and no dead-letter handler is registered: {Item}")]
    public static partial void DeadLettered(this ILogger logger, string queueName, DeadLetterReason reason, RejectionReason? rejectionReason, int attempts, object? item, Exception? exception);

    [LoggerMessage(EventId = 101, EventName = "DeadLetterHandlerFailed", Level = LogLevel.Error,
        Message = "A dead-letter handler of work queue '{QueueName}' failed ({Reason}); the item was: {Item}")]
    public static partial void DeadLetterHandlerFailed(this ILogger logger, string queueName, DeadLetterReason reason, object? item, Exception exception);

    [LoggerMessage(EventId = 102, EventName = "RetryScheduled", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}' retries an item in {RetryDelay} (retry {AttemptNumber}) after: {Error}")]
    public static partial void RetryScheduled(this ILogger logger, string queueName, TimeSpan retryDelay, int attemptNumber, string? error);

    [LoggerMessage(EventId = 103, EventName = "ResilienceEvent",
        Message = "Work queue '{QueueName}': resilience event {ResilienceEvent} from strategy '{StrategyName}'.")]
    public static partial void ResilienceEvent(this ILogger logger, LogLevel level, string queueName, string resilienceEvent, string? strategyName);

    [LoggerMessage(EventId = 104, EventName = "StoppedWithItemsInFlight", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}' stopped with {InFlightCount} items still being handled or delivered as dead letters; they finish on their own.")]
    public static partial void StoppedWithItemsInFlight(this ILogger logger, string queueName, int inFlightCount);

    [LoggerMessage(EventId = 105, EventName = "UnexpectedFailure", Level = LogLevel.Error,
        Message = "Work queue '{QueueName}' failed unexpectedly while processing an item: {Item}")]
    public static partial void UnexpectedFailure(this ILogger logger, string queueName, object? item, Exception exception);

    [LoggerMessage(EventId = 106, EventName = "ScopeDisposeFailed", Level = LogLevel.Error,
        Message = "Work queue '{QueueName}': disposing the services of item {ItemId}'s attempt {Attempt} failed; the attempt's outcome is its handler's.")]
    public static partial void ScopeDisposeFailed(this ILogger logger, string queueName, long itemId, int attempt, Exception exception);

    [LoggerMessage(EventId = 107, EventName = "DeadLetterNotRedelivered", Level = LogLevel.Error,
        Message = "Work queue '{QueueName}' refused or dropped an item inside one of its own dead-letter handlers ({Reason}, rejection {RejectionReason}, {Attempts} attempts); it is not handed to the dead-letter handlers again, which could repeat for ever: {Item}")]
    public static partial void DeadLetterNotRedelivered(this ILogger logger, string queueName, DeadLetterReason reason, RejectionReason? rejectionReason, int attempts, object? item, Exception? exception);

    [LoggerMessage(EventId = 108, EventName = "HandlerUnavailable", Level = LogLevel.Error,
        Message = "Work queue '{QueueName}': its handler {Handler} cannot be constructed because the service {MissingService} is not registered. A configuration error: item {ItemId} becomes a dead letter without retries; register {MissingService} and restart.")]
    public static partial void HandlerUnavailable(this ILogger logger, string queueName, string handler, string missingService, long itemId, Exception exception);
}
