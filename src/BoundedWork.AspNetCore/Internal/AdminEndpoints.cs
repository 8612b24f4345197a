using System.Buffers;
using System.IO.Pipelines;
using Microsoft.AspNetCore.Http;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The Kestrel side of the console: plain request delegates (no model binding) over <see cref="AdminApi"/>. They
/// complete without yielding whenever the request body has already arrived, so each request costs the fewest
/// ThreadPool dispatches Kestrel allows.
/// </summary>
internal sealed class AdminEndpoints(AdminApi api, AdminMapping mapping)
{
    public Task ListExecutors(HttpContext context) => Write(context, api.ListExecutors(WantsHistory(context)));

    public Task GetExecutor(HttpContext context) => Write(context, api.GetExecutor(RouteName(context), WantsHistory(context)));

    public Task GetThreadPool(HttpContext context) => Write(context, api.GetThreadPool(WantsHistory(context)));

    public Task PutWorkers(HttpContext context) => ChangeSettings(context, workersOnly: true);

    public Task PatchSettings(HttpContext context) => ChangeSettings(context, workersOnly: false);

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

    private async Task ChangeSettings(HttpContext context, bool workersOnly)
    {
        var reader = context.Request.BodyReader;
        var (body, tooLarge) = await ReadBody(reader, SettingsRequest.MaxBodyBytes, context.RequestAborted).ConfigureAwait(false);
        AdminReply reply;
        try
        {
            reply = api.ChangeSettings(DescribeChange(context, mapping, body, tooLarge), workersOnly);
        }
        finally
        {
            reader.AdvanceTo(body.End);
        }

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
