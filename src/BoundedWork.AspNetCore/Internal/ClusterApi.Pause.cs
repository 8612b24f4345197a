using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// A durable queue's fleet-wide pauses (<see cref="IWorkQueuePauseControl"/>): read them, pause the queue or one
/// ordering key (<c>POST {prefix}/queues/{name}/pause</c>, <see cref="QueuePauseRequest"/>), resume it
/// (<c>POST .../resume</c>). Held to the console's change rules, audited like a settings change (events 225-227,
/// <c>boundedwork.admin.changes</c> with the field <c>paused</c>, refusals counted).
/// </summary>
internal sealed partial class ClusterApi
{
    private readonly Dictionary<string, IWorkQueuePauseControl> _pauses = new(StringComparer.Ordinal);

    public async Task<AdminReply> GetPausesAsync(string queue, CancellationToken cancellationToken)
    {
        if (!_pauses.TryGetValue(queue, out var control))
        {
            return UnknownPausable(queue);
        }

        WorkQueuePauses pauses;
        try
        {
            pauses = await control.GetPausesAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Unavailable(queue, "read the pauses", ex);
        }

        return AdminReply.Ok(View(pauses), ClusterJsonContext.Readable.QueuePausesView);
    }

    public async Task<AdminReply> PauseAsync(ChangeRequest request, CancellationToken cancellationToken)
    {
        if (AdminApi.CheckChangeRules(request, "the pause") is { } broken)
        {
            return RefusePause(request, broken.Reason, broken.Problem);
        }

        var queue = request.ExecutorName;
        if (!_pauses.TryGetValue(queue, out var control))
        {
            return RefusePause(request, "not_found", UnknownPausable(queue));
        }

        var (reason, duration, key, errors) = request.BodyTooLarge
            ? (null, Timeout.InfiniteTimeSpan, null, ChangeRequest.TooLarge(PauseRequest.MaxBodyBytes))
            : QueuePauseRequest.ParsePause(request.Body);
        if (reason is null)
        {
            return RefusePause(request, "invalid", InvalidPause(queue, "paused", errors, request.InvalidBodyStatus));
        }

        WorkQueuePause stored;
        WorkQueuePauses after;
        try
        {
            stored = await control.PauseAsync(reason, duration, request.User, key, cancellationToken).ConfigureAwait(false);
            after = await control.GetPausesAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (ArgumentException ex)
        {
            // The storage's own validation is the last word (for example the most paused keys a queue may have).
            var field = ex.ParamName switch { "reason" => PauseRequest.Reason, "duration" => PauseRequest.For, "key" => QueuePauseRequest.Key, _ => SettingsRequest.Body };
            return RefusePause(request, "invalid", InvalidPause(queue, "paused", new FieldErrors { [field] = [MessageOf(ex)] }));
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return RefusePause(request, "unavailable", Unavailable(queue, "store the pause", ex));
        }

        if (_logger.IsEnabled(LogLevel.Information))
        {
            _logger.QueuePaused(
                AdminLog.Escape(queue),
                key is null ? "the queue" : "ordering key '" + AdminLog.Escape(key) + "'",
                duration == Timeout.InfiniteTimeSpan ? "until resumed" : $"for {SettingsRequest.FormatTimeout(duration)}",
                AdminLog.Escape(request.User),
                request.RemoteAddress,
                AdminLog.Escape(reason));
        }

        _metrics.Changed(queue, "paused");
        return AdminReply.Ok(new QueuePauseResponse(queue, Changed: true, View(stored), View(after)), ClusterJsonContext.Readable.QueuePauseResponse);
    }

    public async Task<AdminReply> ResumeAsync(ChangeRequest request, CancellationToken cancellationToken)
    {
        if (AdminApi.CheckChangeRules(request, "the resume") is { } broken)
        {
            return RefusePause(request, broken.Reason, broken.Problem);
        }

        var queue = request.ExecutorName;
        if (!_pauses.TryGetValue(queue, out var control))
        {
            return RefusePause(request, "not_found", UnknownPausable(queue));
        }

        var (key, errors) = request.BodyTooLarge ? (null, ChangeRequest.TooLarge(PauseRequest.MaxBodyBytes)) : QueuePauseRequest.ParseResume(request.Body);
        if (errors.Count > 0)
        {
            return RefusePause(request, "invalid", InvalidPause(queue, "resumed", errors, request.InvalidBodyStatus));
        }

        WorkQueuePause? ended;
        WorkQueuePauses after;
        try
        {
            ended = await control.ResumeAsync(request.User, key, cancellationToken).ConfigureAwait(false);
            after = await control.GetPausesAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (ArgumentException ex)
        {
            return RefusePause(request, "invalid", InvalidPause(queue, "resumed", new FieldErrors { [QueuePauseRequest.Key] = [MessageOf(ex)] }));
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return RefusePause(request, "unavailable", Unavailable(queue, "store the resume", ex));
        }

        if (ended is not null)
        {
            if (_logger.IsEnabled(LogLevel.Information))
            {
                _logger.QueueResumed(
                    AdminLog.Escape(queue),
                    key is null ? "the queue" : "ordering key '" + AdminLog.Escape(key) + "'",
                    AdminLog.Escape(request.User),
                    request.RemoteAddress,
                    AdminLog.Escape(ended.Reason));
            }

            _metrics.Changed(queue, "paused");
        }

        return AdminReply.Ok(new QueuePauseResponse(queue, Changed: ended is not null, View(ended), View(after)), ClusterJsonContext.Readable.QueuePauseResponse);
    }

    private static QueuePausesView View(WorkQueuePauses pauses) => new(View(pauses.Queue), [.. pauses.Keys.Select(static k => View(k)!)]);

    private static QueuePauseView? View(WorkQueuePause? pause) => pause is null ? null : new(pause.Key, pause.Reason, pause.Since, pause.Until, pause.By);

    private AdminReply RefusePause(ChangeRequest request, string reason, AdminReply problem)
    {
        _metrics.Refused(_pauses.ContainsKey(request.ExecutorName) ? request.ExecutorName : AdminMetrics.UnknownExecutor, reason);
        _logger.QueuePauseRefused(AdminLog.Escape(request.ExecutorName), AdminLog.Escape(request.User), request.RemoteAddress, problem.Status, reason);
        return problem;
    }

    private static AdminReply UnknownPausable(string queue) =>
        AdminReply.Problem(404, "Unknown queue", $"No durable work queue named '{SettingsRequest.Shorten(queue)}' can be paused fleet-wide here (an in-memory queue pauses with its executor: POST /executors/{{name}}/pause).", queue: SettingsRequest.Shorten(queue));

    private static AdminReply InvalidPause(string queue, string what, FieldErrors errors, int status = 400) =>
        AdminReply.Problem(
            status,
            "Invalid pause",
            $"Work queue '{queue}' is not {what} by this request: {string.Join(" ", errors.Listed.Values.SelectMany(static e => e))}",
            errors.Listed,
            queue: queue);
}
