using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Every message the hosting package logs, under the category <c>BoundedWork.BoundedExecutor</c>. Event ids are
/// stable (documented in the package README); each message names its executor.
/// </summary>
internal static partial class Log
{
    [LoggerMessage(EventId = 1, EventName = "WorkItemFailed", Level = LogLevel.Error,
        Message = "A work item on executor '{ExecutorName}' threw; the worker carries on.")]
    public static partial void WorkItemFailed(this ILogger logger, string executorName, Exception exception);

    [LoggerMessage(EventId = 2, EventName = "WorkItemRejected", Level = LogLevel.Warning,
        Message = "Executor '{ExecutorName}' rejected a work item ({Reason}).")]
    public static partial void WorkItemRejected(this ILogger logger, string executorName, RejectionReason reason);

    [LoggerMessage(EventId = 3, EventName = "WorkItemDiscarded", Level = LogLevel.Warning,
        Message = "Executor '{ExecutorName}' dropped a work item to relieve its full queue ({Reason}).")]
    public static partial void WorkItemDiscarded(this ILogger logger, string executorName, RejectionReason reason);

    [LoggerMessage(EventId = 4, EventName = "ExecutorResized", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' resized from {PreviousWorkerCount} to {WorkerCount} workers after a configuration reload.")]
    public static partial void ExecutorResized(this ILogger logger, string executorName, int previousWorkerCount, int workerCount);

    [LoggerMessage(EventId = 5, EventName = "InvalidReload", Level = LogLevel.Warning,
        Message = "Reloaded configuration of executor '{ExecutorName}' is invalid and was ignored; it keeps its last valid settings (WorkerCount {WorkerCount}). {Failures}")]
    public static partial void InvalidReload(this ILogger logger, string executorName, int workerCount, string failures);

    [LoggerMessage(EventId = 6, EventName = "RestartRequired", Level = LogLevel.Warning,
        Message = "Reloaded configuration of executor '{ExecutorName}' changes settings that apply only after a restart; it keeps running with the old values: {Changes}.")]
    public static partial void RestartRequired(this ILogger logger, string executorName, string changes);

    [LoggerMessage(EventId = 7, EventName = "ResizeAboveMaximum", Level = LogLevel.Warning,
        Message = "Reloaded configuration asks executor '{ExecutorName}' for {WorkerCount} workers, above the MaxWorkerCount of {MaxWorkerCount} it was started with; it keeps {CurrentWorkerCount} workers until a restart.")]
    public static partial void ResizeAboveMaximum(this ILogger logger, string executorName, int workerCount, int maxWorkerCount, int currentWorkerCount);

    [LoggerMessage(EventId = 8, EventName = "ExecutorStarted", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' started with {WorkerCount} workers (maximum {MaxWorkerCount}), queue capacity {QueueCapacity}, rejection policy {RejectionPolicy}.")]
    public static partial void ExecutorStarted(this ILogger logger, string executorName, int workerCount, int maxWorkerCount, int queueCapacity, RejectionPolicy rejectionPolicy);

    [LoggerMessage(EventId = 9, EventName = "ShutdownDrained", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' shut down after running every queued item.")]
    public static partial void ShutdownDrained(this ILogger logger, string executorName);

    [LoggerMessage(EventId = 10, EventName = "ShutdownAbandoned", Level = LogLevel.Warning,
        Message = "Executor '{ExecutorName}' reached the shutdown deadline with {AbandonedCount} queued items that never ran; handing them to {HandlerCount} abandoned-work handlers.")]
    public static partial void ShutdownAbandoned(this ILogger logger, string executorName, int abandonedCount, int handlerCount);

    [LoggerMessage(EventId = 11, EventName = "ShutdownWorkersStillRunning", Level = LogLevel.Warning,
        Message = "Executor '{ExecutorName}' reached the shutdown deadline with {BusyWorkerCount} items still running; they are not interrupted and finish on their own.")]
    public static partial void ShutdownWorkersStillRunning(this ILogger logger, string executorName, int busyWorkerCount);

    [LoggerMessage(EventId = 12, EventName = "AbandonedWorkHandlerFailed", Level = LogLevel.Error,
        Message = "An abandoned-work handler failed with the {AbandonedCount} items abandoned by executor '{ExecutorName}'.")]
    public static partial void AbandonedWorkHandlerFailed(this ILogger logger, string executorName, int abandonedCount, Exception exception);
}
