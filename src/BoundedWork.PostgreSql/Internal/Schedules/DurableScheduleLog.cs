using BoundedWork.Hosting;

using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>Messages of durable schedules, under the category <c>BoundedWork.Schedules</c> (events 610 to 614); changes are audited with who made them.</summary>
internal static partial class DurableScheduleLog
{
    public const string Category = "BoundedWork.Schedules";

    [LoggerMessage(EventId = 610, EventName = "DurableSchedulePassFailed", Level = LogLevel.Warning,
        Message = "Durable schedules of queue '{QueueName}' could not be read or enqueued ({Failures} failures in a row); the pass is tried again, and no tick is lost while it fails within the misfire threshold.")]
    public static partial void PassFailed(this ILogger logger, string queueName, int failures, Exception exception);

    [LoggerMessage(EventId = 611, EventName = "DurableScheduleTicksMissed", Level = LogLevel.Warning,
        Message = "Durable schedule '{ScheduleName}' on queue '{QueueName}' missed {Missed} ticks (no node enqueued them in time); policy {Policy} enqueued {Enqueued}.")]
    public static partial void TicksMissed(this ILogger logger, string scheduleName, string queueName, long missed, MissedTickPolicy policy, int enqueued);

    [LoggerMessage(EventId = 612, EventName = "DurableScheduleUnreadable", Level = LogLevel.Error,
        Message = "Durable schedule '{ScheduleName}' on queue '{QueueName}' has a stored definition this node cannot read; this node leaves it to the others: {Reason}")]
    public static partial void Unreadable(this ILogger logger, string scheduleName, string queueName, string reason);

    [LoggerMessage(EventId = 613, EventName = "DurableScheduleChanged", Level = LogLevel.Information,
        Message = "Durable schedule '{ScheduleName}' on queue '{QueueName}' {Change} by {ChangedBy}.")]
    public static partial void Changed(this ILogger logger, string scheduleName, string queueName, string change, string changedBy);

    [LoggerMessage(EventId = 614, EventName = "DurableScheduleStored", Level = LogLevel.Information,
        Message = "Durable schedule '{ScheduleName}' on queue '{QueueName}' is defined in code as {Definition}: {Outcome}.")]
    public static partial void Stored(this ILogger logger, string scheduleName, string queueName, string definition, string outcome);
}
