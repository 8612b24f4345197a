using System.Buffers;
using System.IO.Pipelines;
using Microsoft.AspNetCore.Http;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The Kestrel side of the console: plain request delegates (no model binding) over the <see cref="AdminRouteTable"/>.
/// They complete without yielding whenever the handler is in memory and the request body has already arrived, so each
/// request costs the fewest ThreadPool dispatches Kestrel allows.
/// </summary>
internal sealed class AdminEndpoints(AdminMapping mapping)
{
    /// <summary>The request delegate of <paramref name="operation"/> on <paramref name="route"/>.</summary>
    public RequestDelegate Handler(AdminRoute route, AdminOperation operation) =>
        !operation.ReadsChange ? context => Answer(context, operation.Handler(Call(context, default), context.RequestAborted))
        : operation.AwaitsStorage ? context => ChangeAwaitingStorage(context, route, operation)
        : context => ChangeInMemory(context, route, operation);

    public static Task MethodNotAllowed(HttpContext context, string allow) =>
        Write(context, AdminApi.MethodNotAllowed(context.Request.Method, context.Request.Path, allow));

    public static Task Write(HttpContext context, AdminReply reply)
    {
        var response = context.Response;
        response.StatusCode = reply.Status;
        response.ContentType = reply.ContentType;
        response.ContentLength = reply.Body.Length;
        response.Headers.CacheControl = "no-store";
        response.Headers.XContentTypeOptions = "nosniff";
        if (reply.Allow is not null)
        {
            response.Headers.Allow = reply.Allow;
        }

        return response.Body.WriteAsync(reply.Body, context.RequestAborted).AsTask();
    }

    /// <summary>Writes an answer, without yielding when it is already there.</summary>
    private static Task Answer(HttpContext context, ValueTask<AdminReply> reply) =>
        reply.IsCompletedSuccessfully ? Write(context, reply.Result) : AnswerLater(context, reply);

    private static async Task AnswerLater(HttpContext context, ValueTask<AdminReply> reply) =>
        await Write(context, await reply.ConfigureAwait(false)).ConfigureAwait(false);

    /// <summary>The request as a route's handler sees it: route values, history, query and <paramref name="change"/>.</summary>
    private static AdminCall Call(HttpContext context, ChangeRequest change) =>
        new(RouteName(context), context.Request.RouteValues["id"] as string, WantsHistory(context), context.Request.Query.Select(static q => new KeyValuePair<string, string?[]>(q.Key, q.Value.ToArray())), change);

    /// <summary>A change answered from memory: the body is read (up to the route's limit) and handed over as it is.</summary>
    private async Task ChangeInMemory(HttpContext context, AdminRoute route, AdminOperation operation)
    {
        var reader = context.Request.BodyReader;
        var (body, tooLarge) = await ReadBody(reader, route.MaxBodyBytes, context.RequestAborted).ConfigureAwait(false);
        AdminReply reply;
        try
        {
            var answer = operation.Handler(Call(context, DescribeChange(context, mapping, body, tooLarge)), context.RequestAborted);
            reply = answer.IsCompletedSuccessfully ? answer.Result : await answer.ConfigureAwait(false);
        }
        finally
        {
            reader.AdvanceTo(body.End);
        }

        await Write(context, reply).ConfigureAwait(false);
    }

    /// <summary>A change whose answer awaits storage: the body is copied (see <see cref="ReadCopiedChange"/>), then applied.</summary>
    private async Task ChangeAwaitingStorage(HttpContext context, AdminRoute route, AdminOperation operation)
    {
        var request = await ReadCopiedChange(context, mapping, route.MaxBodyBytes).ConfigureAwait(false);
        var reply = await operation.Handler(Call(context, request), context.RequestAborted).ConfigureAwait(false);
        await Write(context, reply).ConfigureAwait(false);
    }

    /// <summary>A change as it arrived over HTTP: the route's name, content type, request header, body, who sent it, for an anonymous console whether its origin is refused, and a header it reads that came twice.</summary>
    public static ChangeRequest DescribeChange(HttpContext context, AdminMapping mapping, ReadOnlySequence<byte> body, bool tooLarge) =>
        new(
            RouteName(context),
            context.Request.ContentType,
            !string.IsNullOrWhiteSpace(context.Request.Headers[BoundedWorkAdminOptions.RequestHeaderName]),
            body,
            tooLarge,
            context.User.Identity is { IsAuthenticated: true } identity ? identity.Name ?? "an authenticated user without a name" : "anonymous",
            context.Connection.RemoteIpAddress?.ToString() ?? "unknown",
            mapping.AllowAnonymous ? LocalOrigin.Check(context.Request.Scheme, context.Request.Headers.Host, context.Request.Headers.Origin) : null,
            DuplicateHeader(context.Request.Headers));

    /// <summary>The first header a change reads that the request carries more than once, or <see langword="null"/>.</summary>
    private static string? DuplicateHeader(IHeaderDictionary headers) =>
        headers.ContentType.Count > 1 ? "Content-Type"
        : headers[BoundedWorkAdminOptions.RequestHeaderName].Count > 1 ? BoundedWorkAdminOptions.RequestHeaderName
        : null;

    /// <summary>
    /// Reads a change whose answer awaits storage: the body (up to <paramref name="maxBytes"/>) is copied, so the reader
    /// is done with it before the storage is awaited, and described as <see cref="DescribeChange"/> does.
    /// </summary>
    public static async Task<ChangeRequest> ReadCopiedChange(HttpContext context, AdminMapping mapping, int maxBytes)
    {
        var reader = context.Request.BodyReader;
        var (buffer, tooLarge) = await ReadBody(reader, maxBytes, context.RequestAborted).ConfigureAwait(false);
        byte[] body;
        try
        {
            body = tooLarge ? [] : BuffersExtensions.ToArray(buffer);
        }
        finally
        {
            reader.AdvanceTo(buffer.End);
        }

        return DescribeChange(context, mapping, new ReadOnlySequence<byte>(body), tooLarge);
    }

    /// <summary>
    /// Reads the whole body, up to <paramref name="maxBytes"/>. The caller advances the reader past the returned
    /// buffer. A body that has already arrived is read without yielding.
    /// </summary>
    public static async ValueTask<(ReadOnlySequence<byte> Buffer, bool TooLarge)> ReadBody(PipeReader reader, int maxBytes, CancellationToken cancellationToken)
    {
        while (true)
        {
            var read = await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
            if (read.Buffer.Length > maxBytes)
            {
                return (read.Buffer, true);
            }

            if (read.IsCompleted || read.IsCanceled)
            {
                return (read.Buffer, false);
            }

            reader.AdvanceTo(read.Buffer.Start, read.Buffer.End);
        }
    }

    public static string RouteName(HttpContext context) => context.Request.RouteValues["name"] as string ?? string.Empty;

    private static bool WantsHistory(HttpContext context) =>
        context.Request.Query.TryGetValue("history", out var value) && string.Equals(value, "true", StringComparison.OrdinalIgnoreCase);
}
