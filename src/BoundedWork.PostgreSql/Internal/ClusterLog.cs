using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Internal;

// The cluster's messages (node registry, fleet-wide settings): event ids 309-319.
internal static partial class PostgreSqlLog
{
    [LoggerMessage(EventId = 309, EventName = "FleetWorkersApplied", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}' applied the fleet-wide settings version {Version} (changed by {ChangedBy}): WorkerCount {PreviousWorkerCount} -> {WorkerCount}.")]
    public static partial void FleetWorkersApplied(this ILogger logger, string queueName, long version, string changedBy, int previousWorkerCount, int workerCount);

    [LoggerMessage(EventId = 310, EventName = "FleetWorkersPinnedLocally", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}' keeps its locally pinned {WorkerCount} workers: the fleet-wide settings version {Version} ask for {WorkersPerNode} per node, and a local pin wins until it is removed.")]
    public static partial void FleetWorkersPinnedLocally(this ILogger logger, string queueName, int workerCount, long version, int workersPerNode);

    [LoggerMessage(EventId = 311, EventName = "FleetWorkersCapped", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}': the fleet-wide settings version {Version} ask for {WorkersPerNode} workers per node, more than this node's MaxWorkerCount; it runs {WorkerCount}.")]
    public static partial void FleetWorkersCapped(this ILogger logger, string queueName, long version, int workersPerNode, int workerCount);

    [LoggerMessage(EventId = 312, EventName = "FleetWorkersNotApplied", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}' could not apply the fleet-wide settings version {Version}: its executor refused WorkerCount {WorkersPerNode}; it keeps {WorkerCount}.")]
    public static partial void FleetWorkersNotApplied(this ILogger logger, string queueName, long version, int workersPerNode, int workerCount, Exception exception);

    [LoggerMessage(EventId = 313, EventName = "FleetSettingsStored", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': {ChangedBy} changed the fleet-wide settings to version {Version}: {Changes}.")]
    public static partial void ClusterSettingsChanged(this ILogger logger, string queueName, string changedBy, long version, string changes);

    [LoggerMessage(EventId = 314, EventName = "NodeJoined", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': node {NodeName} joined the cluster (heartbeat every {HeartbeatInterval}).")]
    public static partial void NodeJoined(this ILogger logger, string queueName, string nodeName, TimeSpan heartbeatInterval);

    [LoggerMessage(EventId = 315, EventName = "NodeLeft", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': node {NodeName} left the cluster.")]
    public static partial void NodeLeft(this ILogger logger, string queueName, string nodeName);

    [LoggerMessage(EventId = 316, EventName = "NodeLeaveFailed", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}': node {NodeName} stopped but could not remove its row from the cluster; the row drops out when it expires.")]
    public static partial void NodeLeaveFailed(this ILogger logger, string queueName, string nodeName, Exception exception);
}
