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

    [LoggerMessage(EventId = 212, EventName = "ClusterSettingsChangeRefused", Level = LogLevel.Warning,
        Message = "Refused a change to the fleet-wide settings of work queue '{QueueName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void ClusterSettingsChangeRefused(this ILogger logger, string queueName, string user, string remoteAddress, int statusCode, string reason);

    [LoggerMessage(EventId = 213, EventName = "ClusterStorageFailed", Level = LogLevel.Error,
        Message = "The admin console could not {What} of work queue '{QueueName}': its storage failed.")]
    public static partial void ClusterStorageFailed(this ILogger logger, string queueName, string what, Exception exception);
}
