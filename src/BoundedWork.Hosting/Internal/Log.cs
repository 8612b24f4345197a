using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Every message the hosting package logs, under the category <c>BoundedWork.BoundedExecutor</c>. Event ids are
/// stable (documented in docs/metrics-and-events.md); each message names its executor.
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

    [LoggerMessage(EventId = 4, EventName = "ExecutorReconfigured", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' applied reloaded configuration: {Changes}.")]
    public static partial void ExecutorReconfigured(this ILogger logger, string executorName, string changes);

    [LoggerMessage(EventId = 5, EventName = "InvalidReload", Level = LogLevel.Warning,
        Message = "Reloaded configuration of executor '{ExecutorName}' is invalid and was ignored; it keeps its last valid settings (WorkerCount {WorkerCount}). {Failures}")]
    public static partial void InvalidReload(this ILogger logger, string executorName, int workerCount, string failures);

    [LoggerMessage(EventId = 6, EventName = "RestartRequired", Level = LogLevel.Warning,
        Message = "Reloaded configuration of executor '{ExecutorName}' changes settings that are fixed while it runs; they apply after a restart: {Changes}.")]
    public static partial void RestartRequired(this ILogger logger, string executorName, string changes);

    [LoggerMessage(EventId = 7, EventName = "ResizeAboveMaximum", Level = LogLevel.Warning,
        Message = "Reloaded configuration asks executor '{ExecutorName}' for {WorkerCount} workers, above the MaxWorkerCount of {MaxWorkerCount} it was started with; it keeps {CurrentWorkerCount} workers. The other reloaded settings apply.")]
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
        Message = "Executor '{ExecutorName}' reached the shutdown deadline with {BusyWorkerCount} items still running; each is logged as ShutdownItemInterrupted. Worker threads are background threads: an item still running when the process exits never completes.")]
    public static partial void ShutdownWorkersStillRunning(this ILogger logger, string executorName, int busyWorkerCount);

    [LoggerMessage(EventId = 12, EventName = "AbandonedWorkHandlerFailed", Level = LogLevel.Error,
        Message = "An abandoned-work handler failed with the {AbandonedCount} items abandoned by executor '{ExecutorName}'.")]
    public static partial void AbandonedWorkHandlerFailed(this ILogger logger, string executorName, int abandonedCount, Exception exception);

    [LoggerMessage(EventId = 13, EventName = "ThreadPoolBlockingWait", Level = LogLevel.Warning,
        Message = "{Count} ThreadPool threads blocked waiting for executor '{ExecutorName}' ({Kind}) since the last report, {Total} in all. Each blocked pool thread delays every request and async continuation of the process: from request code use ExecuteAsync, RunAsync or TryExecute instead of Execute or RunAndWait, and await the tasks of its TaskScheduler instead of waiting on them. Caller of this one: {CallerStackTrace}")]
    public static partial void ThreadPoolBlockingWait(this ILogger logger, string executorName, long count, long total, BlockingWaitKind kind, string callerStackTrace);

    [LoggerMessage(EventId = 14, EventName = "SlowItemRunning", Level = LogLevel.Warning,
        Message = "Item {Item} on worker {WorkerName} of executor '{ExecutorName}' has been running for {Elapsed}, longer than the SlowItemThreshold of {Threshold}; it is not interrupted and holds its worker until it returns.")]
    public static partial void SlowItemRunning(this ILogger logger, string executorName, string item, string workerName, TimeSpan elapsed, TimeSpan threshold);

    [LoggerMessage(EventId = 15, EventName = "LongQueueWait", Level = LogLevel.Warning,
        Message = "{Count} items of executor '{ExecutorName}' waited in the queue longer than the QueueWaitThreshold of {Threshold} since the last report; the latest, {Item}, waited {Elapsed}. The executor has too few workers for its load, or its items are slow.")]
    public static partial void LongQueueWait(this ILogger logger, string executorName, long count, TimeSpan threshold, string item, TimeSpan elapsed);

    [LoggerMessage(EventId = 16, EventName = "AbandonedItemNotPersisted", Level = LogLevel.Error,
        Message = "Executor '{ExecutorName}' abandoned an item at the shutdown deadline and no IAbandonedWorkHandler is registered; it never ran: {Item}.")]
    public static partial void AbandonedItemNotPersisted(this ILogger logger, string executorName, string item);

    [LoggerMessage(EventId = 17, EventName = "AbandonedItemsNotLogged", Level = LogLevel.Error,
        Message = "Executor '{ExecutorName}' abandoned {NotLoggedCount} more items that are not logged one by one ({AbandonedCount} abandoned in all, none persisted). Register an IAbandonedWorkHandler to keep them.")]
    public static partial void AbandonedItemsNotLogged(this ILogger logger, string executorName, int notLoggedCount, int abandonedCount);

    [LoggerMessage(EventId = 18, EventName = "ShutdownItemInterrupted", Level = LogLevel.Error,
        Message = "Executor '{ExecutorName}': item {Item} on worker {WorkerName} was still running at the shutdown deadline, {Elapsed} after it started; it is interrupted if the process exits before it returns.")]
    public static partial void ShutdownItemInterrupted(this ILogger logger, string executorName, string item, string workerName, TimeSpan elapsed);

    [LoggerMessage(EventId = 19, EventName = "WorkerCountDecision", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' worker count {OldCount} -> {NewCount} ({Rule}, applied: {Applied}): {Decision}")]
    public static partial void WorkerCountDecision(this ILogger logger, string executorName, int oldCount, int newCount, string rule, bool applied, string decision);
}
