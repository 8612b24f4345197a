using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Internal;

/// <summary>Every message of in-memory recurring schedules, under the category <c>BoundedWork.Schedules</c> (events 600 to 607); each names its schedule.</summary>
internal static partial class ScheduleLog
{
    public const string Category = "BoundedWork.Schedules";

    [LoggerMessage(EventId = 600, EventName = "ScheduleRunFailed", Level = LogLevel.Error,
        Message = "The run of schedule '{ScheduleName}' for {ScheduledAt:O} threw; the schedule carries on.")]
    public static partial void ScheduleRunFailed(this ILogger logger, string scheduleName, DateTimeOffset scheduledAt, Exception exception);

    [LoggerMessage(EventId = 601, EventName = "ScheduleTickSkipped", Level = LogLevel.Information,
        Message = "Schedule '{ScheduleName}' skipped its tick of {ScheduledAt:O}: the previous run is still going.")]
    public static partial void ScheduleTickSkipped(this ILogger logger, string scheduleName, DateTimeOffset scheduledAt);

    [LoggerMessage(EventId = 602, EventName = "ScheduleRunRejected", Level = LogLevel.Warning,
        Message = "Schedule '{ScheduleName}' could not run on executor '{ExecutorName}': {Reason}")]
    public static partial void ScheduleRunRejected(this ILogger logger, string scheduleName, string executorName, string reason);

    [LoggerMessage(EventId = 603, EventName = "ScheduleTickMissed", Level = LogLevel.Warning,
        Message = "Schedule '{ScheduleName}' missed its tick of {ScheduledAt:O} (the process was not running then, or the clock stepped); it is skipped.")]
    public static partial void ScheduleTickMissed(this ILogger logger, string scheduleName, DateTimeOffset scheduledAt);

    [LoggerMessage(EventId = 604, EventName = "ScheduleChanged", Level = LogLevel.Information,
        Message = "Schedule '{ScheduleName}': {Change}.")]
    public static partial void ScheduleChanged(this ILogger logger, string scheduleName, string change);

    [LoggerMessage(EventId = 605, EventName = "ScheduleTriggered", Level = LogLevel.Information,
        Message = "Schedule '{ScheduleName}' was triggered now: {Result}.")]
    public static partial void ScheduleTriggered(this ILogger logger, string scheduleName, RecurringTriggerResult result);

    [LoggerMessage(EventId = 606, EventName = "ScheduleRetimed", Level = LogLevel.Information,
        Message = "Schedule '{ScheduleName}' changed from {Before} to {After}.")]
    public static partial void ScheduleRetimed(this ILogger logger, string scheduleName, RecurringSchedule before, RecurringSchedule after);

    [LoggerMessage(EventId = 607, EventName = "ScheduleAdded", Level = LogLevel.Information,
        Message = "Schedule '{ScheduleName}' was added: {Schedule} on executor '{ExecutorName}'.")]
    public static partial void ScheduleAdded(this ILogger logger, string scheduleName, RecurringSchedule schedule, string executorName);
}
