using Microsoft.AspNetCore.Http;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>The Kestrel side of the dead-letter endpoints: plain request delegates over <see cref="DeadLetterApi"/>.</summary>
internal sealed class DeadLetterEndpoints(DeadLetterApi api, AdminMapping mapping)
{
    public async Task List(HttpContext context) =>
        await AdminEndpoints.Write(context, await api.ListAsync(
            AdminEndpoints.RouteName(context),
            context.Request.Query.Select(static q => new KeyValuePair<string, string?[]>(q.Key, q.Value.ToArray())),
            context.RequestAborted).ConfigureAwait(false)).ConfigureAwait(false);

    public async Task Show(HttpContext context) =>
        await AdminEndpoints.Write(context, await api.ShowAsync(AdminEndpoints.RouteName(context), Id(context), context.RequestAborted).ConfigureAwait(false)).ConfigureAwait(false);

    public Task RequeueOne(HttpContext context) => ChangeAsync(context, (api, request, id, cancel) => api.ChangeOneAsync(request, DeadLetterApi.Requeue, id, cancel));

    public Task PurgeOne(HttpContext context) => ChangeAsync(context, (api, request, id, cancel) => api.ChangeOneAsync(request, DeadLetterApi.Purge, id, cancel));

    public Task RequeueSelection(HttpContext context) => ChangeAsync(context, (api, request, _, cancel) => api.ChangeSelectionAsync(request, DeadLetterApi.Requeue, cancel));

    public Task PurgeSelection(HttpContext context) => ChangeAsync(context, (api, request, _, cancel) => api.ChangeSelectionAsync(request, DeadLetterApi.Purge, cancel));

    private static string? Id(HttpContext context) => context.Request.RouteValues["id"] as string;

    /// <summary>Reads the body (up to <see cref="DeadLetterRequest.MaxBodyBytes"/>, see <see cref="AdminEndpoints.ReadCopiedChange"/>), then applies the change.</summary>
    private async Task ChangeAsync(HttpContext context, Func<DeadLetterApi, ChangeRequest, string?, CancellationToken, Task<AdminReply>> apply)
    {
        var request = await AdminEndpoints.ReadCopiedChange(context, mapping, DeadLetterRequest.MaxBodyBytes).ConfigureAwait(false);
        var reply = await apply(api, request, Id(context), context.RequestAborted).ConfigureAwait(false);
        await AdminEndpoints.Write(context, reply).ConfigureAwait(false);
    }
}
