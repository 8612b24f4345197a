using System.Buffers;
using System.Diagnostics;
using Microsoft.AspNetCore.WebUtilities;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Answers a request read from the local socket by the <see cref="AdminRouteTable"/>: the route its path matches, the
/// operation of its method (else 405 with the route's methods), the table's 404 for a path no route matches. A handler
/// that waits for storage is waited for on the client's own thread (a kernel wait, no ThreadPool thread) until the
/// request's deadline; past it the operation is cancelled and the answer is 503.
/// </summary>
internal sealed class LocalSocketRouter(AdminRouteTable table, string socketPath, ILogger logger, TimeSpan requestTimeout)
{
    /// <summary>The largest body read for a request to <paramref name="target"/>: its route's (see <see cref="AdminRouteTable.MaxBodyBytes"/>).</summary>
    public int MaxBodyBytes(string target) => table.MaxBodyBytes(Segments(target.Split('?', 2)[0]), AdminTransports.LocalSocket);

    /// <summary>Answers <paramref name="request"/>.</summary>
    /// <param name="request">The request's head.</param>
    /// <param name="body">Its body (empty when over the route's limit).</param>
    /// <param name="tooLarge">Whether the body was over the route's limit.</param>
    /// <param name="peer">Who connected, for the change log.</param>
    /// <param name="deadline">The request's deadline (a <see cref="Stopwatch"/> timestamp).</param>
    public AdminReply Route(LocalSocketRequest request, ReadOnlySequence<byte> body, bool tooLarge, string peer, long deadline)
    {
        var (method, target) = (request.Method, request.Target);
        var query = target.IndexOf('?', StringComparison.Ordinal);
        var path = query < 0 ? target : target[..query];
        var segments = Segments(path);
        if (table.Match(segments, AdminTransports.LocalSocket) is not { } route)
        {
            return table.NotFound(path, AdminTransports.LocalSocket);
        }

        if (route.Find(method) is not { } operation)
        {
            return AdminApi.MethodNotAllowed(method, path, route.Allow(AdminTransports.LocalSocket));
        }

        var name = Uri.UnescapeDataString(route.Value(segments, "{name}") ?? string.Empty);
        var id = route.Value(segments, "{id}") is { } rawId ? Uri.UnescapeDataString(rawId) : null;
        var history = query >= 0 && target[(query + 1)..].Split('&').Contains("history=true", StringComparer.OrdinalIgnoreCase);
        var change = new ChangeRequest(name, request.ContentType, !string.IsNullOrWhiteSpace(request.AdminHeader), body, tooLarge, peer, "unix:" + socketPath, DuplicateHeader: request.DuplicateHeader);
        var call = new AdminCall(name, id, history, Query(target, query), change);
        if (!operation.AwaitsStorage)
        {
            var reply = operation.Handler(call, CancellationToken.None);
            return reply.IsCompletedSuccessfully ? reply.Result : reply.AsTask().GetAwaiter().GetResult();
        }

        return WaitFor(name, deadline, cancel => operation.Handler(call, cancel).AsTask(), operation.MayHaveApplied);
    }

    private static string[] Segments(string path) => path.Trim('/').Split('/');

    /// <summary>The query string's parameters as HTTP's request query gives them to the same handler: decoded, each name with all its values.</summary>
    private static IEnumerable<KeyValuePair<string, string?[]>> Query(string target, int query) =>
        query < 0 ? [] : QueryHelpers.ParseQuery(target[query..]).Select(static q => new KeyValuePair<string, string?[]>(q.Key, q.Value.ToArray()));

    /// <summary>
    /// Runs a database-bound operation and blocks this client thread on it (a kernel wait, no ThreadPool thread) until
    /// the request's deadline. Past it the operation is cancelled and the answer is 503: a requeue or purge may have
    /// been applied all the same, and is then logged like any other.
    /// </summary>
    /// <param name="queue">The queue's name, for the answer.</param>
    /// <param name="deadline">The request's deadline (a <see cref="Stopwatch"/> timestamp).</param>
    /// <param name="operation">The operation.</param>
    /// <param name="change">What may have been applied all the same when the deadline passes, for the answer; <see langword="null"/> for a read.</param>
    private AdminReply WaitFor(string queue, long deadline, Func<CancellationToken, Task<AdminReply>> operation, string? change)
    {
        var cancel = new CancellationTokenSource();
        var task = operation(cancel.Token);
        var remaining = Math.Max(0, (deadline - Stopwatch.GetTimestamp()) * 1000 / Stopwatch.Frequency);
        bool done;
        try
        {
            done = task.Wait((int)Math.Min(remaining, int.MaxValue));
        }
        catch (AggregateException)
        {
            done = true; // rethrown, unwrapped, below
        }

        if (done)
        {
            cancel.Dispose();
            return task.GetAwaiter().GetResult();
        }

        // The operation may still hold the token: the source is left to the collector, not disposed under it.
        _ = task.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously | TaskContinuationOptions.OnlyOnFaulted, TaskScheduler.Default);
        var detail = $"Work queue '{SettingsRequest.Shorten(queue)}' did not answer within the local socket's request deadline ({requestTimeout.TotalSeconds:0.#} seconds from connecting), so the operation was cancelled" + (change is null ? "." : $"; {change} may have been applied all the same, and the app's log records each one that was.");
        logger.LocalSocketFailed(socketPath, new TimeoutException(detail));
        try
        {
            cancel.Cancel();
        }
        catch (AggregateException exception)
        {
            logger.LocalSocketFailed(socketPath, exception);
        }

        return AdminReply.Problem(503, "Storage did not answer in time", detail, queue: SettingsRequest.Shorten(queue));
    }
}
