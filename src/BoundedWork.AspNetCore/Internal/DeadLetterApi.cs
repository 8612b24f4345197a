using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The console's dead-letter operations on the durable queues' <see cref="IDeadLetterStore"/>s, independent of the
/// transport: list, show, requeue and purge. Changes meet the console's rules (<see cref="AdminApi.CheckChangeRules"/>),
/// and each is audited like a settings change: logged with who, what and how many (events 206 and 207; refusals 208;
/// storage failures 209), and counted (<c>boundedwork.admin.dead_letters</c>, <c>boundedwork.admin.refused</c>). Unlike the executor
/// endpoints these wait for the database, asynchronously.
/// </summary>
internal sealed class DeadLetterApi(IEnumerable<IDeadLetterStore> stores, AdminMetrics metrics, ILogger logger)
{
    /// <summary>The most characters of a payload the console shows; a longer one is cut and shown as text.</summary>
    public const int MaxPayloadLength = 64 * 1024;

    /// <summary>The most characters of a last error the console shows.</summary>
    public const int MaxErrorLength = 4096;

    public const string Requeue = "requeue";
    public const string Purge = "purge";

    private readonly Dictionary<string, IDeadLetterStore> _stores = stores.ToDictionary(store => store.QueueName, StringComparer.Ordinal);

    public async Task<AdminReply> ListAsync(string queue, IEnumerable<KeyValuePair<string, string?[]>> parameters, CancellationToken cancellationToken)
    {
        if (!_stores.TryGetValue(queue, out var store))
        {
            return UnknownQueue(queue);
        }

        var (query, errors) = DeadLetterRequest.ParseQuery(parameters);
        if (query is null)
        {
            return Invalid(queue, "The dead letters were not listed", errors);
        }

        try
        {
            var page = await store.ListDeadLettersAsync(query, cancellationToken).ConfigureAwait(false);
            return AdminReply.Ok(
                new DeadLetterListResponse(queue, [.. page.Items.Select(Summarize)], page.NextCursor),
                AdminJsonContext.Readable.DeadLetterListResponse);
        }
        catch (ArgumentException ex) when (query.Cursor is not null)
        {
            return Invalid(queue, "The dead letters were not listed", new FieldErrors { [DeadLetterRequest.Cursor] = [ex.Message] });
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Unavailable(queue, "list its dead letters", ex);
        }
    }

    public async Task<AdminReply> ShowAsync(string queue, string? idText, CancellationToken cancellationToken)
    {
        if (!_stores.TryGetValue(queue, out var store))
        {
            return UnknownQueue(queue);
        }

        if (DeadLetterRequest.ParseId(idText) is not { } id)
        {
            return BadId(queue, idText);
        }

        StoredDeadLetter? letter;
        try
        {
            letter = await store.GetDeadLetterAsync(id, MaxPayloadLength, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Unavailable(queue, "read a dead letter", ex);
        }

        if (letter is null)
        {
            return NoSuchDeadLetter(queue, id);
        }

        JsonElement? payload = null;
        if (!letter.IsPayloadTruncated && letter.Payload is { } text)
        {
            using var document = JsonDocument.Parse(text);
            payload = document.RootElement.Clone();
        }

        return AdminReply.Ok(
            new DeadLetterResponse(queue, letter.ItemId, letter.Attempts, Cut(letter.LastError), letter.EnqueuedAt, letter.DeadAt, letter.Priority,
                letter.OrderingKey, letter.TraceParent, letter.TraceState, payload, letter.PayloadLength, letter.IsPayloadTruncated,
                letter.IsPayloadTruncated ? letter.Payload : null),
            AdminJsonContext.Readable.DeadLetterResponse);
    }

    /// <summary>Requeues or purges one dead letter, named in the path (<paramref name="idText"/>); the body is empty or <c>{}</c>.</summary>
    public async Task<AdminReply> ChangeOneAsync(ChangeRequest request, string operation, string? idText, CancellationToken cancellationToken)
    {
        if (Check(request, operation) is { } refused)
        {
            return refused;
        }

        var queue = request.ExecutorName;
        if (DeadLetterRequest.ParseId(idText) is not { } id)
        {
            return Refuse(request, operation, "invalid", BadId(queue, idText));
        }

        var errors = request.BodyTooLarge
            ? ChangeRequest.TooLarge(DeadLetterRequest.MaxBodyBytes)
            : DeadLetterRequest.ParseEmpty(request.Body);
        if (errors.Count > 0)
        {
            return Refuse(request, operation, "invalid", Invalid(queue, $"Dead letter {id} was not changed", errors, request.InvalidBodyStatus));
        }

        var applied = await ApplyAsync(request, operation, DeadLetterSelection.ByIds([id]), cancellationToken).ConfigureAwait(false);
        return applied.Count == 0 ? Refuse(request, operation, "not_found", NoSuchDeadLetter(queue, id)) : applied.Reply;
    }

    /// <summary>Requeues or purges the dead letters a selection body names.</summary>
    public async Task<AdminReply> ChangeSelectionAsync(ChangeRequest request, string operation, CancellationToken cancellationToken)
    {
        if (Check(request, operation) is { } refused)
        {
            return refused;
        }

        var (selection, errors) = request.BodyTooLarge
            ? (null, ChangeRequest.TooLarge(DeadLetterRequest.MaxBodyBytes))
            : DeadLetterRequest.ParseSelection(request.Body);
        if (selection is null)
        {
            return Refuse(request, operation, "invalid", Invalid(request.ExecutorName, "No dead letter was changed", errors, request.InvalidBodyStatus));
        }

        return (await ApplyAsync(request, operation, selection, cancellationToken).ConfigureAwait(false)).Reply;
    }

    /// <summary>The console's rules for a change, then a known queue; the refusal, logged and counted, or <see langword="null"/>.</summary>
    private AdminReply? Check(ChangeRequest request, string operation)
    {
        if (AdminApi.CheckChangeRules(request, "the selection") is { } broken)
        {
            return Refuse(request, operation, broken.Reason, broken.Problem);
        }

        return _stores.ContainsKey(request.ExecutorName) ? null : Refuse(request, operation, "not_found", UnknownQueue(request.ExecutorName));
    }

    /// <summary>Requeues or purges the selection, then audits it; <c>Count</c> is how many it took, or <see langword="null"/> when the storage failed (the reply says so).</summary>
    private async Task<(AdminReply Reply, int? Count)> ApplyAsync(ChangeRequest request, string operation, DeadLetterSelection selection, CancellationToken cancellationToken)
    {
        var queue = request.ExecutorName;
        var store = _stores[queue];
        int count;
        try
        {
            count = operation == Requeue
                ? await store.RequeueDeadLettersAsync(selection, cancellationToken).ConfigureAwait(false)
                : await store.PurgeDeadLettersAsync(selection, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return (Refuse(request, operation, "unavailable", Unavailable(queue, operation + " dead letters", ex)), null);
        }

        var described = selection.ToString();
        if (operation == Requeue && logger.IsEnabled(LogLevel.Information))
        {
            logger.DeadLettersRequeued(AdminLog.Escape(queue), AdminLog.Escape(request.User), request.RemoteAddress, described, count);
        }
        else if (operation == Purge && logger.IsEnabled(LogLevel.Warning))
        {
            logger.DeadLettersPurged(AdminLog.Escape(queue), AdminLog.Escape(request.User), request.RemoteAddress, described, count);
        }

        metrics.DeadLetters(queue, operation, count);
        return (AdminReply.Ok(new DeadLetterChangeResponse(queue, operation, described, count), AdminJsonContext.Readable.DeadLetterChangeResponse), count);
    }

    /// <summary>Logs and counts a refused requeue or purge. The metric's tag is a known queue's name or <see cref="AdminMetrics.UnknownExecutor"/>.</summary>
    private AdminReply Refuse(ChangeRequest request, string operation, string reason, AdminReply problem)
    {
        var known = _stores.ContainsKey(request.ExecutorName);
        metrics.Refused(known ? request.ExecutorName : AdminMetrics.UnknownExecutor, reason);
        logger.DeadLetterChangeRefused(AdminLog.Escape(request.ExecutorName), operation, AdminLog.Escape(request.User), request.RemoteAddress, problem.Status, reason);
        return problem;
    }

    private static DeadLetterSummary Summarize(StoredDeadLetter letter) =>
        new(letter.ItemId, letter.Attempts, Cut(letter.LastError), letter.EnqueuedAt, letter.DeadAt, letter.Priority, letter.OrderingKey, letter.TraceParent);

    private static string? Cut(string? text) =>
        text is { Length: > MaxErrorLength } ? string.Concat(text.AsSpan(0, MaxErrorLength), $"... ({text.Length - MaxErrorLength} more characters)") : text;

    private static AdminReply UnknownQueue(string queue) =>
        AdminReply.Problem(404, "Unknown queue", $"No durable work queue named '{SettingsRequest.Shorten(queue)}' keeps dead letters here (in-memory queues hand theirs to their dead-letter handlers and keep none).", queue: SettingsRequest.Shorten(queue));

    private static AdminReply NoSuchDeadLetter(string queue, long id) =>
        AdminReply.Problem(404, "Unknown dead letter", $"Work queue '{queue}' has no dead letter {id} (never, already requeued, purged, or deleted after its retention).", queue: queue);

    private static AdminReply BadId(string queue, string? idText) =>
        Invalid(queue, "Nothing was done", new FieldErrors { [DeadLetterRequest.Id] = [$"The dead letter's id in the path must be a positive whole number (was '{SettingsRequest.Shorten(idText ?? string.Empty)}')."] });

    private static AdminReply Invalid(string queue, string what, FieldErrors errors, int status = 400) =>
        AdminReply.Problem(status, "Invalid request", $"{what}: {string.Join(" ", errors.Listed.Select(static e => $"{e.Key}: {string.Join(" ", e.Value)}"))}", errors.Listed, queue: queue);

    private AdminReply Unavailable(string queue, string what, Exception error)
    {
        if (logger.IsEnabled(LogLevel.Error))
        {
            logger.DeadLetterStorageFailed(AdminLog.Escape(queue), what, error);
        }

        return AdminReply.Problem(503, "Storage unavailable", $"Work queue '{queue}' could not {what}: {SettingsRequest.Shorten(error.GetBaseException().Message, 300)}", queue: queue);
    }
}
