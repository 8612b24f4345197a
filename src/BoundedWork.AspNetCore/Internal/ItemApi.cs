using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The console's search over the durable queues' stored items and its bulk actions (<see cref="IStoredItemSearch"/>),
/// independent of the transport: search, dry run (<c>preview</c>) and <c>apply</c>. An application must carry the
/// confirmation token of the dry run of the same action and selection, and touches at most the items the dry run
/// counted: a selection that takes a whole state is applied only as far as the count its operator saw. Changes meet
/// the console's rules (<see cref="AdminApi.CheckChangeRules"/>) and are audited like a settings change: dry runs
/// (event 243), applications with who, what, which and how many (240), refusals (241, counted in
/// <c>boundedwork.admin.refused</c>) and storage failures (242).
/// </summary>
internal sealed class ItemApi(IEnumerable<IStoredItemSearch> stores, AdminMetrics metrics, ILogger logger)
{
    public const string Preview = "preview";
    public const string Apply = "apply";

    private readonly Dictionary<string, IStoredItemSearch> _stores = stores.ToDictionary(store => store.QueueName, StringComparer.Ordinal);

    public async Task<AdminReply> SearchAsync(string queue, IEnumerable<KeyValuePair<string, string?[]>> parameters, CancellationToken cancellationToken)
    {
        if (!_stores.TryGetValue(queue, out var store))
        {
            return UnknownQueue(queue);
        }

        var (query, errors) = ItemRequest.ParseSearch(parameters);
        if (query is null)
        {
            return Invalid(queue, "No item was searched", errors);
        }

        try
        {
            var page = await store.SearchItemsAsync(query, cancellationToken).ConfigureAwait(false);
            return AdminReply.Ok(
                new ItemListResponse(queue, ItemRequest.Name(query.State), [.. page.Items.Select(Summarize)], page.NextCursor, page.Examined),
                ItemJsonContext.Readable.ItemListResponse);
        }
        catch (ArgumentException ex)
        {
            return Invalid(queue, "No item was searched", new FieldErrors { [ItemRequest.FieldOf(ex.ParamName)] = [ex.Message] });
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Unavailable(queue, "search its items", ex);
        }
    }

    /// <summary>The dry run (<see cref="Preview"/>) or the application (<see cref="Apply"/>) of the action a body names.</summary>
    public async Task<AdminReply> ActAsync(ChangeRequest request, string operation, CancellationToken cancellationToken)
    {
        var queue = request.ExecutorName;
        if (AdminApi.CheckChangeRules(request, "the action") is { } broken)
        {
            return Refuse(request, operation, broken.Reason, broken.Problem);
        }

        if (!_stores.TryGetValue(queue, out var store))
        {
            return Refuse(request, operation, "not_found", UnknownQueue(queue));
        }

        var (action, token, errors) = request.BodyTooLarge
            ? (null, null, ChangeRequest.TooLarge(ItemRequest.MaxBodyBytes))
            : ItemRequest.ParseAction(request.Body, operation == Apply);
        if (action is null)
        {
            return Refuse(request, operation, "invalid", Invalid(queue, "No item was changed", errors, request.InvalidBodyStatus));
        }

        var actionName = ItemRequest.Name(action.Kind);
        var selection = ItemRequest.Describe(action.Selection);
        try
        {
            if (operation == Preview)
            {
                var preview = await store.PreviewItemActionAsync(action, cancellationToken).ConfigureAwait(false);
                if (logger.IsEnabled(LogLevel.Information))
                {
                    logger.ItemActionPreviewed(AdminLog.Escape(queue), AdminLog.Escape(request.User), request.RemoteAddress, actionName, AdminLog.Escape(selection), preview.Count);
                }

                return AdminReply.Ok(
                    new ItemPreviewResponse(queue, actionName, selection, action.Selection.MatchesWholeState, preview.Count, preview.ConfirmToken),
                    ItemJsonContext.Readable.ItemPreviewResponse);
            }

            // Not cancelled once started (a client that leaves, the socket's deadline): the walk ends by itself after at
            // most the confirmed count, and what it changed is always audited.
            var result = await store.ApplyItemActionAsync(action, token!, CancellationToken.None).ConfigureAwait(false);
            if (logger.IsEnabled(LogLevel.Warning))
            {
                var confirmed = int.TryParse(token!.AsSpan(0, Math.Max(token!.IndexOf('.', StringComparison.Ordinal), 0)), out var c) ? c : -1;
                logger.ItemActionApplied(AdminLog.Escape(queue), AdminLog.Escape(request.User), request.RemoteAddress, actionName, AdminLog.Escape(selection), result.Applied, result.Skipped, confirmed);
            }

            return AdminReply.Ok(
                new ItemActionResponse(queue, actionName, selection, result.Applied, result.Skipped, result.StoppedAtConfirmedCount),
                ItemJsonContext.Readable.ItemActionResponse);
        }
        catch (ArgumentException ex)
        {
            return Refuse(request, operation, "invalid", Invalid(queue, "No item was changed", new FieldErrors { [ItemRequest.FieldOf(ex.ParamName)] = [ex.Message] }));
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Refuse(request, operation, "unavailable", Unavailable(queue, operation == Preview ? "count the items of an action" : "apply an action to its items", ex));
        }
    }

    private AdminReply Refuse(ChangeRequest request, string operation, string reason, AdminReply problem)
    {
        var known = _stores.ContainsKey(request.ExecutorName);
        metrics.Refused(known ? request.ExecutorName : AdminMetrics.UnknownExecutor, reason);
        logger.ItemActionRefused(AdminLog.Escape(request.ExecutorName), operation, AdminLog.Escape(request.User), request.RemoteAddress, problem.Status, reason);
        return problem;
    }

    private static ItemSummary Summarize(StoredItemInfo item) =>
        new(item.ItemId, ItemRequest.Name(item.State), item.Attempts, item.Priority, item.OrderingKey, item.EnqueuedAt, item.RunAt, item.FinishedAt, item.LastError);

    private static AdminReply UnknownQueue(string queue) =>
        AdminReply.Problem(404, "Unknown queue", $"No durable work queue named '{SettingsRequest.Shorten(queue)}' keeps its items here (in-memory queues keep none to search).", queue: SettingsRequest.Shorten(queue));

    private static AdminReply Invalid(string queue, string what, FieldErrors errors, int status = 400) =>
        AdminReply.Problem(status, "Invalid request", $"{what}: {string.Join(" ", errors.Listed.Select(static e => $"{e.Key}: {string.Join(" ", e.Value)}"))}", errors.Listed, queue: queue);

    private AdminReply Unavailable(string queue, string what, Exception error)
    {
        if (logger.IsEnabled(LogLevel.Error))
        {
            logger.ItemStorageFailed(AdminLog.Escape(queue), what, error);
        }

        return AdminReply.Problem(503, "Storage unavailable", $"Work queue '{queue}' could not {what}: {SettingsRequest.Shorten(error.GetBaseException().Message, 300)}", queue: queue);
    }
}
