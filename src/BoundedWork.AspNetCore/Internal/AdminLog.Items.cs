using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>The console's audit of actions on stored items: who, what, which selection and how many.</summary>
internal static partial class AdminLog
{
    [LoggerMessage(EventId = 240, EventName = "ItemActionApplied", Level = LogLevel.Warning,
        Message = "{Applied} items of work queue '{QueueName}' changed by {User} ({RemoteAddress}) through the admin console: {Action} of {Selection}; {Skipped} skipped, dry run counted {Confirmed}.")]
    public static partial void ItemActionApplied(this ILogger logger, string queueName, string user, string remoteAddress, string action, string selection, int applied, int skipped, int confirmed);

    [LoggerMessage(EventId = 241, EventName = "ItemActionRefused", Level = LogLevel.Warning,
        Message = "Refused an item {Operation} on work queue '{QueueName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void ItemActionRefused(this ILogger logger, string queueName, string operation, string user, string remoteAddress, int statusCode, string reason);

    [LoggerMessage(EventId = 242, EventName = "ItemStorageFailed", Level = LogLevel.Error,
        Message = "The admin console could not {What} of work queue '{QueueName}': its storage failed.")]
    public static partial void ItemStorageFailed(this ILogger logger, string queueName, string what, Exception exception);

    [LoggerMessage(EventId = 243, EventName = "ItemActionPreviewed", Level = LogLevel.Information,
        Message = "Dry run by {User} ({RemoteAddress}) through the admin console on work queue '{QueueName}': {Action} of {Selection} would touch {Count} items.")]
    public static partial void ItemActionPreviewed(this ILogger logger, string queueName, string user, string remoteAddress, string action, string selection, int count);
}
