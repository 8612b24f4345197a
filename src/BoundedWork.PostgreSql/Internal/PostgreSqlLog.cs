using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Every message the PostgreSQL storage logs, under the category <c>BoundedWork.PostgreSql</c>, with event ids 300-399
/// (stable; documented in docs/metrics-and-events.md). Each message names its queue.
/// </summary>
internal static partial class PostgreSqlLog
{
    public const string Category = "BoundedWork.PostgreSql";

    [LoggerMessage(EventId = 300, EventName = "StorageUnavailable", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}' cannot reach PostgreSQL ({Loop}); retrying in {RetryDelay}.")]
    public static partial void StorageUnavailable(this ILogger logger, string queueName, string loop, TimeSpan retryDelay, Exception exception);

    [LoggerMessage(EventId = 301, EventName = "StorageRecovered", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}' reaches PostgreSQL again ({Loop}).")]
    public static partial void StorageRecovered(this ILogger logger, string queueName, string loop);

    [LoggerMessage(EventId = 302, EventName = "SchemaReady", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}' uses schema \"{Schema}\" at version {Version} (found version {FoundVersion}); node {NodeName}, lease owner {NodeId}.")]
    public static partial void SchemaReady(this ILogger logger, string queueName, string schema, int version, int foundVersion, string nodeName, string nodeId);

    [LoggerMessage(EventId = 303, EventName = "LeasesExpired", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}': {Count} items claimed by nodes whose lease expired are ready again; {DeadCount} of them reached their last attempt and became dead letters.")]
    public static partial void LeasesExpired(this ILogger logger, string queueName, int count, int deadCount);

    [LoggerMessage(EventId = 304, EventName = "OutcomesNotRecorded", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}': {Count} outcomes were not recorded because the items were no longer this node's claims (their lease expired and they were claimed again); they will run again there.")]
    public static partial void OutcomesNotRecorded(this ILogger logger, string queueName, int count);

    [LoggerMessage(EventId = 319, EventName = "OutcomesWrittenAgain", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': {Count} outcomes written again, after a write whose answer was lost, changed nothing: that write committed before its answer was lost and recorded them, or their items were no longer this node's claims.")]
    public static partial void OutcomesWrittenAgain(this ILogger logger, string queueName, int count);

    [LoggerMessage(EventId = 305, EventName = "OutcomesLostAtStop", Level = LogLevel.Error,
        Message = "Work queue '{QueueName}' stopped before {Count} outcomes could be written; those items run again once their lease expires.")]
    public static partial void OutcomesLostAtStop(this ILogger logger, string queueName, int count);

    [LoggerMessage(EventId = 306, EventName = "MalformedPayload", Level = LogLevel.Error,
        Message = "Work queue '{QueueName}': stored item {ItemId} cannot be read as {ItemType}; it becomes a dead letter.")]
    public static partial void MalformedPayload(this ILogger logger, string queueName, long itemId, string itemType, Exception exception);

    [LoggerMessage(EventId = 307, EventName = "RetryStored", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}': item {ItemId} failed on delivery {Attempt}; retry stored for {RetryDelay} from now.")]
    public static partial void RetryStored(this ILogger logger, string queueName, long itemId, int attempt, TimeSpan retryDelay, Exception exception);

    [LoggerMessage(EventId = 308, EventName = "CancellationRequested", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': item {ItemId}, held by this node, was cancelled; its handler's cancellation token fired (or, not started yet, it will not run).")]
    public static partial void CancellationRequested(this ILogger logger, string queueName, long itemId, Exception? exception);

    [LoggerMessage(EventId = 320, EventName = "ClusterLimitsApplied", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}' has cluster limits: this node claims under the permits granted to it now.")]
    public static partial void ClusterLimitsApplied(this ILogger logger, string queueName);

    [LoggerMessage(EventId = 321, EventName = "ClusterLimitsLifted", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}' has no cluster limits any more: this node claims without them.")]
    public static partial void ClusterLimitsLifted(this ILogger logger, string queueName);

    [LoggerMessage(EventId = 322, EventName = "ClusterPermitWaitLong", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}': {Count} items this node has idle workers for have waited for a cluster permit for {OldestWait}, longer than the ClusterPermitWaitThreshold of {Threshold}.")]
    public static partial void ClusterPermitWaitLong(this ILogger logger, string queueName, long count, TimeSpan oldestWait, TimeSpan threshold);

    [LoggerMessage(EventId = 323, EventName = "PermitGrantRenewed", Level = LogLevel.Debug,
        Message = "Work queue '{QueueName}': this node's cluster permits were renewed: {Running} running permits (-1: no running limit), {InUse} in use, {Rate} starts per second with a burst of {Burst}.")]
    public static partial void PermitGrantRenewed(this ILogger logger, string queueName, int running, int inUse, double rate, int burst);

    [LoggerMessage(EventId = 324, EventName = "PermitGrantLapsed", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}': this node could not renew its cluster permits within {GrantLifetime}; it starts no item under the cluster limits until it does.")]
    public static partial void PermitGrantLapsed(this ILogger logger, string queueName, TimeSpan grantLifetime);

    [LoggerMessage(EventId = 325, EventName = "PermitGrantRestored", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': this node renewed its cluster permits again after they lapsed; it starts items under the cluster limits again.")]
    public static partial void PermitGrantRestored(this ILogger logger, string queueName);

    [LoggerMessage(EventId = 326, EventName = "HandedOff", Level = LogLevel.Debug,
        Message = "Work queue '{QueueName}' claimed {Count} items of {Keys} keys in the transaction of their predecessors' outcomes.")]
    public static partial void HandedOff(this ILogger logger, string queueName, int count, int keys);

    [LoggerMessage(EventId = 327, EventName = "KeyReserveReleased", Level = LogLevel.Debug,
        Message = "Work queue '{QueueName}' released {Count} items it had claimed ahead as the next of their key without starting them ({Reason}); they are ready again.")]
    public static partial void PrefetchReleased(this ILogger logger, string queueName, int count, string reason);
}
