using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Every message the console logs, under the category <c>BoundedWork.Admin</c>. Event ids 200-299 are stable and
/// documented in the README.
/// </summary>
internal static partial class AdminLog
{
    public const string Category = "BoundedWork.Admin";

    [LoggerMessage(EventId = 200, EventName = "SettingsChanged", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' reconfigured by {User} ({RemoteAddress}) through the admin console: workers {PreviousWorkerCount} -> {WorkerCount}, queueCapacity {PreviousQueueCapacity} -> {QueueCapacity}, rejectionPolicy {PreviousRejectionPolicy} -> {RejectionPolicy}, waitTimeout {PreviousWaitTimeout} -> {WaitTimeout}, slowItemThreshold {PreviousSlowItemThreshold} -> {SlowItemThreshold}, queueWaitThreshold {PreviousQueueWaitThreshold} -> {QueueWaitThreshold}.")]
    public static partial void SettingsChanged(
        this ILogger logger,
        string executorName,
        string user,
        string remoteAddress,
        int previousWorkerCount,
        int workerCount,
        int previousQueueCapacity,
        int queueCapacity,
        RejectionPolicy previousRejectionPolicy,
        RejectionPolicy rejectionPolicy,
        string previousWaitTimeout,
        string waitTimeout,
        string previousSlowItemThreshold,
        string slowItemThreshold,
        string previousQueueWaitThreshold,
        string queueWaitThreshold);

    [LoggerMessage(EventId = 201, EventName = "SettingsChangeRefused", Level = LogLevel.Warning,
        Message = "Refused a change to executor '{ExecutorName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void SettingsChangeRefused(this ILogger logger, string executorName, string user, string remoteAddress, int statusCode, string reason);

    [LoggerMessage(EventId = 202, EventName = "AnonymousAdminAccess", Level = LogLevel.Warning,
        Message = "The BoundedWork admin console at '{Prefix}' allows anonymous access (AllowAnonymousAdmin): anyone who can reach it can resize and reconfigure executors. Use it in development only.")]
    public static partial void AnonymousAdminAccess(this ILogger logger, string prefix);

    [LoggerMessage(EventId = 203, EventName = "SamplerFailed", Level = LogLevel.Error,
        Message = "The BoundedWork admin console's sampler failed to read executor '{ExecutorName}'; it tries again on the next sample.")]
    public static partial void SamplerFailed(this ILogger logger, string executorName, Exception exception);

    [LoggerMessage(EventId = 204, EventName = "LocalSocketListening", Level = LogLevel.Information,
        Message = "The BoundedWork admin console also listens on the local socket '{SocketPath}' (answered on a dedicated thread, without the ThreadPool).")]
    public static partial void LocalSocketListening(this ILogger logger, string socketPath);

    [LoggerMessage(EventId = 205, EventName = "LocalSocketFailed", Level = LogLevel.Error,
        Message = "The BoundedWork admin console's local socket '{SocketPath}' failed to serve a request; it keeps listening.")]
    public static partial void LocalSocketFailed(this ILogger logger, string socketPath, Exception exception);
}
