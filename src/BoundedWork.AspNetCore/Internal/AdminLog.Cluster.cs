using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

// The cluster view's messages: event ids 211-219.
internal static partial class AdminLog
{
    [LoggerMessage(EventId = 211, EventName = "ClusterSettingsChanged", Level = LogLevel.Information,
        Message = "Fleet-wide settings of work queue '{QueueName}' changed by {User} ({RemoteAddress}) through the admin console, version {PreviousVersion} -> {Version}: workersPerNode {PreviousWorkersPerNode} -> {WorkersPerNode}, maxRunning {PreviousMaxRunning} -> {MaxRunning}, maxRunningPerKey {PreviousMaxRunningPerKey} -> {MaxRunningPerKey}, startsPerSecond {PreviousStartsPerSecond} -> {StartsPerSecond}, startBurst {PreviousStartBurst} -> {StartBurst}.")]
    public static partial void ClusterSettingsChanged(
        this ILogger logger,
        string queueName,
        string user,
        string remoteAddress,
        long previousVersion,
        long version,
        string previousWorkersPerNode,
        string workersPerNode,
        string previousMaxRunning,
        string maxRunning,
        int previousMaxRunningPerKey,
        int maxRunningPerKey,
        string previousStartsPerSecond,
        string startsPerSecond,
        string previousStartBurst,
        string startBurst);

    [LoggerMessage(EventId = 214, EventName = "ClusterFairShareChanged", Level = LogLevel.Information,
        Message = "Fair share of work queue '{QueueName}' changed by {User} ({RemoteAddress}) through the admin console, version {PreviousVersion} -> {Version}: {FairShareChange}.")]
    public static partial void ClusterFairShareChanged(this ILogger logger, string queueName, string user, string remoteAddress, long previousVersion, long version, string fairShareChange);

    [LoggerMessage(EventId = 212, EventName = "ClusterSettingsChangeRefused", Level = LogLevel.Warning,
        Message = "Refused a change to the fleet-wide settings of work queue '{QueueName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void ClusterSettingsChangeRefused(this ILogger logger, string queueName, string user, string remoteAddress, int statusCode, string reason);

    [LoggerMessage(EventId = 213, EventName = "ClusterStorageFailed", Level = LogLevel.Error,
        Message = "The admin console could not {What} of work queue '{QueueName}': its storage failed.")]
    public static partial void ClusterStorageFailed(this ILogger logger, string queueName, string what, Exception exception);
}

// A durable queue's fleet-wide pauses: event ids 225-227.
internal static partial class AdminLog
{
    [LoggerMessage(EventId = 225, EventName = "QueuePaused", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': {Target} paused fleet-wide {For} by {User} ({RemoteAddress}) through the admin console: {Reason}")]
    public static partial void QueuePaused(this ILogger logger, string queueName, string target, string @for, string user, string remoteAddress, string reason);

    [LoggerMessage(EventId = 226, EventName = "QueueResumed", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': {Target} resumed fleet-wide by {User} ({RemoteAddress}) through the admin console (it was paused: {Reason}).")]
    public static partial void QueueResumed(this ILogger logger, string queueName, string target, string user, string remoteAddress, string reason);

    [LoggerMessage(EventId = 227, EventName = "QueuePauseRefused", Level = LogLevel.Warning,
        Message = "Refused a fleet-wide pause or resume of work queue '{QueueName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void QueuePauseRefused(this ILogger logger, string queueName, string user, string remoteAddress, int statusCode, string reason);
}
