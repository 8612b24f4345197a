using System.Buffers;
using System.Globalization;
using System.Text;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Every message the console logs, under the category <c>BoundedWork.Admin</c>. Event ids 200-299 are stable and
/// documented in docs/metrics-and-events.md.
/// </summary>
internal static partial class AdminLog
{
    public const string Category = "BoundedWork.Admin";

    /// <summary>The most characters of a request's text (an executor name, a user name) that a message keeps.</summary>
    public const int MaxLoggedLength = 200;

    /// <summary>The C0 and C1 control characters, DEL, and the Unicode line and paragraph separators.</summary>
    private static readonly SearchValues<char> s_unsafe = SearchValues.Create(
        [.. Enumerable.Range(0, 0x20).Select(static c => (char)c), .. Enumerable.Range(0x7F, 0x21).Select(static c => (char)c), '\u2028', '\u2029']);

    /// <summary>
    /// Makes text that came with a request safe for a log line: control characters and Unicode line and paragraph
    /// separators become escapes (<c>\r</c>, <c>\n</c>, <c>\t</c>, <c>\u001b</c>, ...), and a long text is cut after
    /// <see cref="MaxLoggedLength"/> characters, so a caller can neither forge log lines nor flood the log.
    /// </summary>
    public static string Escape(string text)
    {
        if (text.Length <= MaxLoggedLength && !text.AsSpan().ContainsAny(s_unsafe))
        {
            return text;
        }

        var builder = new StringBuilder(Math.Min(text.Length, MaxLoggedLength) + 16);
        foreach (var c in text.AsSpan(0, Math.Min(text.Length, MaxLoggedLength)))
        {
            _ = c switch
            {
                '\r' => builder.Append("\\r"),
                '\n' => builder.Append("\\n"),
                '\t' => builder.Append("\\t"),
                _ when s_unsafe.Contains(c) => builder.Append(CultureInfo.InvariantCulture, $"\\u{(int)c:x4}"),
                _ => builder.Append(c),
            };
        }

        if (text.Length > MaxLoggedLength)
        {
            builder.Append(CultureInfo.InvariantCulture, $"... ({text.Length - MaxLoggedLength} more characters)");
        }

        return builder.ToString();
    }

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

    [LoggerMessage(EventId = 206, EventName = "DeadLettersRequeued", Level = LogLevel.Information,
        Message = "{Count} dead letters of work queue '{QueueName}' requeued by {User} ({RemoteAddress}) through the admin console: {Selection}.")]
    public static partial void DeadLettersRequeued(this ILogger logger, string queueName, string user, string remoteAddress, string selection, int count);

    [LoggerMessage(EventId = 207, EventName = "DeadLettersPurged", Level = LogLevel.Warning,
        Message = "{Count} dead letters of work queue '{QueueName}' purged (deleted) by {User} ({RemoteAddress}) through the admin console: {Selection}.")]
    public static partial void DeadLettersPurged(this ILogger logger, string queueName, string user, string remoteAddress, string selection, int count);

    [LoggerMessage(EventId = 208, EventName = "DeadLetterChangeRefused", Level = LogLevel.Warning,
        Message = "Refused a dead-letter {Operation} on work queue '{QueueName}' by {User} ({RemoteAddress}) through the admin console: {StatusCode} {Reason}")]
    public static partial void DeadLetterChangeRefused(this ILogger logger, string queueName, string operation, string user, string remoteAddress, int statusCode, string reason);

    [LoggerMessage(EventId = 209, EventName = "DeadLetterStorageFailed", Level = LogLevel.Error,
        Message = "The admin console could not {What} of work queue '{QueueName}': its storage failed.")]
    public static partial void DeadLetterStorageFailed(this ILogger logger, string queueName, string what, Exception exception);

    [LoggerMessage(EventId = 210, EventName = "WorkerCountPinChanged", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' worker count {Pin} by {User} ({RemoteAddress}) through the admin console.")]
    public static partial void WorkerCountPinChanged(this ILogger logger, string executorName, string user, string remoteAddress, string pin);

    [LoggerMessage(EventId = 220, EventName = "ExecutorPaused", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' paused {Until} by {User} ({RemoteAddress}) through the admin console: {Reason}")]
    public static partial void ExecutorPaused(this ILogger logger, string executorName, string until, string user, string remoteAddress, string reason);

    [LoggerMessage(EventId = 221, EventName = "ExecutorResumed", Level = LogLevel.Information,
        Message = "Executor '{ExecutorName}' resumed by {User} ({RemoteAddress}) through the admin console (it was paused: {Reason}).")]
    public static partial void ExecutorResumed(this ILogger logger, string executorName, string user, string remoteAddress, string reason);
}
