using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>The console's audit of changes to in-memory recurring schedules (events 620 and 621) and durable ones (622 to 624).</summary>
internal static partial class AdminLog
{
    [LoggerMessage(EventId = 620, EventName = "ScheduleChangedByConsole", Level = LogLevel.Information,
        Message = "Schedule '{ScheduleName}' changed by {User} ({RemoteAddress}) through the admin console: {Change}.")]
    public static partial void ScheduleChangedByConsole(this ILogger logger, string scheduleName, string user, string remoteAddress, string change);

    [LoggerMessage(EventId = 621, EventName = "ScheduleChangeRefused", Level = LogLevel.Warning,
        Message = "Refused a change to schedule '{ScheduleName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void ScheduleChangeRefused(this ILogger logger, string scheduleName, string user, string remoteAddress, int statusCode, string reason);

    [LoggerMessage(EventId = 622, EventName = "DurableScheduleChangedByConsole", Level = LogLevel.Information,
        Message = "Durable schedule '{ScheduleName}' changed by {User} ({RemoteAddress}) through the admin console: {Change}.")]
    public static partial void DurableScheduleChangedByConsole(this ILogger logger, string scheduleName, string user, string remoteAddress, string change);

    [LoggerMessage(EventId = 623, EventName = "DurableScheduleChangeRefused", Level = LogLevel.Warning,
        Message = "Refused a change to durable schedule '{ScheduleName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void DurableScheduleChangeRefused(this ILogger logger, string scheduleName, string user, string remoteAddress, int statusCode, string reason);

    [LoggerMessage(EventId = 624, EventName = "DurableScheduleStorageFailed", Level = LogLevel.Error,
        Message = "The admin console could not {What} (durable schedule '{ScheduleName}'): the storage failed.")]
    public static partial void DurableScheduleStorageFailed(this ILogger logger, string scheduleName, string what, Exception exception);
}
