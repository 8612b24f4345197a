using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The storage's messages of fleet-wide pauses and snoozes (category <see cref="PostgreSqlLog.Category"/>, event ids 340-349).</summary>
internal static partial class PauseLog
{
    [LoggerMessage(EventId = 340, EventName = "FleetPauseStored", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': {ChangedBy} paused {Target} fleet-wide until {Until}: {Reason}.")]
    public static partial void FleetPauseStored(this ILogger logger, string queueName, string changedBy, string target, string until, string reason);

    [LoggerMessage(EventId = 341, EventName = "FleetResumeStored", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': {ChangedBy} resumed {Target} fleet-wide (paused by {PausedBy}: {Reason}).")]
    public static partial void FleetResumeStored(this ILogger logger, string queueName, string changedBy, string target, string pausedBy, string reason);

    [LoggerMessage(EventId = 342, EventName = "FleetPauseApplied", Level = LogLevel.Warning,
        Message = "Work queue '{QueueName}' is paused fleet-wide (by {PausedBy}: {Reason}); node {NodeName} claims nothing and hands back what it holds unstarted.")]
    public static partial void FleetPauseApplied(this ILogger logger, string queueName, string pausedBy, string reason, string nodeName);

    [LoggerMessage(EventId = 343, EventName = "FleetPauseEnded", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}' is no longer paused fleet-wide; node {NodeName} claims again.")]
    public static partial void FleetPauseEnded(this ILogger logger, string queueName, string nodeName);

    [LoggerMessage(EventId = 344, EventName = "DurableItemSnoozed", Level = LogLevel.Information,
        Message = "Work queue '{QueueName}': item {ItemId} snoozed on delivery {Attempt}; stored to run again in {Delay}, the delivery not counted.")]
    public static partial void DurableItemSnoozed(this ILogger logger, string queueName, long itemId, int attempt, TimeSpan delay);
}
