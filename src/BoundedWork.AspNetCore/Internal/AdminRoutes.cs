namespace BoundedWork.AspNetCore.Internal;

/// <summary>Which transports serve a route.</summary>
[Flags]
internal enum AdminTransports
{
    /// <summary>Kestrel, under the prefix given to <c>MapBoundedWorkAdmin</c>.</summary>
    Http = 1,

    /// <summary>The local socket (<see cref="LocalSocketListener"/>).</summary>
    LocalSocket = 2,

    /// <summary>Both.</summary>
    Both = Http | LocalSocket,
}

/// <summary>
/// Answers one request to a route, whatever the transport. A handler over in-memory state completes synchronously; one
/// that waits for storage honours <paramref name="cancellationToken"/>.
/// </summary>
/// <param name="call">The request as the route sees it.</param>
/// <param name="cancellationToken">The transport's cancellation: the client went away, or (local socket) the deadline passed.</param>
internal delegate ValueTask<AdminReply> AdminHandler(AdminCall call, CancellationToken cancellationToken);

/// <summary>
/// A request as a route's handler sees it, read by the transport: the route's <c>{name}</c> and <c>{id}</c> (decoded),
/// whether <c>history=true</c> was asked, the query's parameters, and, for an operation that reads a change, the change.
/// </summary>
internal readonly record struct AdminCall(string Name, string? Id, bool History, IEnumerable<KeyValuePair<string, string?[]>> Query, ChangeRequest Change);

/// <summary>One method a route answers.</summary>
/// <param name="Method">The HTTP method. Over HTTP, <c>HEAD</c> is answered wherever <c>GET</c> is.</param>
/// <param name="Handler">The handler.</param>
/// <param name="ReadsChange">Whether the request's body is a change the handler reads (<see cref="AdminCall.Change"/>).</param>
/// <param name="AwaitsStorage">
/// Whether the handler waits for storage: Kestrel then copies the body before awaiting; the local socket blocks its
/// client thread on it up to the request's deadline.
/// </param>
/// <param name="MayHaveApplied">
/// For the local socket's answer when storage did not answer by the deadline: what may have been applied all the same,
/// or <see langword="null"/> for a read.
/// </param>
internal sealed record AdminOperation(string Method, AdminHandler Handler, bool ReadsChange = false, bool AwaitsStorage = false, string? MayHaveApplied = null);

/// <summary>One route of the console's JSON API: its pattern, the methods it answers and the largest body it reads.</summary>
internal sealed class AdminRoute
{
    public AdminRoute(string pattern, AdminTransports transports, int maxBodyBytes, params AdminOperation[] operations)
    {
        Pattern = pattern;
        Segments = pattern.Trim('/').Split('/');
        Transports = transports;
        MaxBodyBytes = maxBodyBytes;
        Operations = operations;
    }

    /// <summary>Gets the route pattern, relative to the console's prefix (<c>/executors/{name}</c>).</summary>
    public string Pattern { get; }

    /// <summary>Gets the pattern's segments: a literal, or a parameter in braces.</summary>
    public IReadOnlyList<string> Segments { get; }

    /// <summary>Gets the transports that serve this route.</summary>
    public AdminTransports Transports { get; }

    /// <summary>Gets the largest request body read on this route; a larger one is refused with 413.</summary>
    public int MaxBodyBytes { get; }

    /// <summary>Gets the methods this route answers, in the order its <c>Allow</c> header lists them.</summary>
    public IReadOnlyList<AdminOperation> Operations { get; }

    /// <summary>Gets the number of literal segments: where two patterns match a path, the one with more literals wins.</summary>
    public int Literals => Segments.Count(static s => !IsParameter(s));

    public static bool IsParameter(string segment) => segment.StartsWith('{');

    /// <summary>The methods a transport answers on this route: over HTTP, <c>HEAD</c> follows every <c>GET</c>.</summary>
    public IEnumerable<string> Methods(AdminTransports transport) =>
        Operations.SelectMany(o => transport == AdminTransports.Http && o.Method == "GET" ? (string[])["GET", "HEAD"] : [o.Method]);

    /// <summary>The <c>Allow</c> header of a 405 on this route, for <paramref name="transport"/>.</summary>
    public string Allow(AdminTransports transport) => string.Join(", ", Methods(transport));

    public AdminOperation? Find(string method) => Operations.FirstOrDefault(o => o.Method == method);

    /// <summary>Whether <paramref name="segments"/> (a path split at '/') match this pattern; any text matches a parameter.</summary>
    public bool Matches(IReadOnlyList<string> segments)
    {
        if (segments.Count != Segments.Count)
        {
            return false;
        }

        for (var i = 0; i < segments.Count; i++)
        {
            if (!IsParameter(Segments[i]) && !string.Equals(Segments[i], segments[i], StringComparison.Ordinal))
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>The value of the parameter <paramref name="parameter"/> (<c>{name}</c>) in matched <paramref name="segments"/>, or <see langword="null"/>.</summary>
    public string? Value(IReadOnlyList<string> segments, string parameter)
    {
        for (var i = 0; i < Segments.Count; i++)
        {
            if (Segments[i] == parameter)
            {
                return segments[i];
            }
        }

        return null;
    }

    /// <summary>
    /// Whether <paramref name="other"/> matches every path this route matches and more (a parameter where this route has
    /// a literal): over HTTP, its methods would otherwise answer on this route's paths.
    /// </summary>
    public bool IsShadowedBy(AdminRoute other)
    {
        if (other == this || other.Segments.Count != Segments.Count || other.Literals >= Literals)
        {
            return false;
        }

        for (var i = 0; i < Segments.Count; i++)
        {
            if (!IsParameter(other.Segments[i]) && other.Segments[i] != Segments[i])
            {
                return false;
            }
        }

        return true;
    }
}

/// <summary>
/// The console's JSON API, once, for every transport: each route's pattern, methods, handler and body limit. Kestrel
/// maps it (<c>MapBoundedWorkAdmin</c>, through <see cref="AdminEndpoints"/>); the local socket routes by it
/// (<see cref="LocalSocketRouter"/>); the 405 answers (<see cref="AdminRoute.Allow"/>), the socket's 404 text and its
/// body limits derive from it. Authorization is the transport's: Kestrel's policy on the whole group, the socket file's
/// permissions on the socket. The dashboard page, HTML for a browser, is mapped by Kestrel alone and is not listed here.
/// </summary>
internal sealed class AdminRouteTable
{
    private AdminRouteTable(IReadOnlyList<AdminRoute> routes) => Routes = routes;

    /// <summary>Gets every route, in the order the socket's 404 lists them.</summary>
    public IReadOnlyList<AdminRoute> Routes { get; }

    /// <summary>Builds the table over the console's APIs.</summary>
    /// <param name="api">The executors' API.</param>
    /// <param name="deadLetters">The durable queues' dead letters.</param>
    /// <param name="cluster">The durable queues' clusters.</param>
    /// <param name="process">The process document (the local socket's alone), or <see langword="null"/> where it is not served.</param>
    /// <param name="schedules">The in-memory recurring schedules (and through them the durable ones), or <see langword="null"/> where they are not served.</param>
    /// <param name="items">The durable queues' stored items, or <see langword="null"/> where they are not served.</param>
    public static AdminRouteTable Create(AdminApi api, DeadLetterApi deadLetters, ClusterApi cluster, Func<AdminReply>? process = null, ScheduleApi? schedules = null, ItemApi? items = null)
    {
        const int settings = SettingsRequest.MaxBodyBytes;
        const int selection = DeadLetterRequest.MaxBodyBytes;
        const string applied = "a requeue or purge";
        List<AdminRoute> routes =
        [
            new("/executors", AdminTransports.Both, settings,
                new AdminOperation("GET", (call, _) => new(api.ListExecutors(call.History)))),
            new("/executors/{name}", AdminTransports.Both, settings,
                new AdminOperation("GET", (call, _) => new(api.GetExecutor(call.Name, call.History))),
                new AdminOperation("PATCH", (call, _) => new(api.ChangeSettings(call.Change, workersOnly: false)), ReadsChange: true)),
            new("/executors/{name}/workers", AdminTransports.Both, settings,
                new AdminOperation("PUT", (call, _) => new(api.ChangeSettings(call.Change, workersOnly: true)), ReadsChange: true)),
            new("/executors/{name}/pause", AdminTransports.Both, PauseRequest.MaxBodyBytes,
                new AdminOperation("POST", (call, _) => new(api.Pause(call.Change)), ReadsChange: true)),
            new("/executors/{name}/resume", AdminTransports.Both, PauseRequest.MaxBodyBytes,
                new AdminOperation("POST", (call, _) => new(api.Resume(call.Change)), ReadsChange: true)),
            new("/threadpool", AdminTransports.Both, settings,
                new AdminOperation("GET", (call, _) => new(api.GetThreadPool(call.History)))),
            new("/process", process is null ? 0 : AdminTransports.LocalSocket, settings,
                new AdminOperation("GET", (_, _) => new(process!()))),
            new("/queues/{name}/dead-letters", AdminTransports.Both, selection,
                new AdminOperation("GET", (call, cancel) => new(deadLetters.ListAsync(call.Name, call.Query, cancel)), AwaitsStorage: true, MayHaveApplied: applied)),
            new("/queues/{name}/dead-letters/{id}", AdminTransports.Both, selection,
                new AdminOperation("GET", (call, cancel) => new(deadLetters.ShowAsync(call.Name, call.Id, cancel)), AwaitsStorage: true, MayHaveApplied: applied),
                new AdminOperation("DELETE", (call, cancel) => new(deadLetters.ChangeOneAsync(call.Change, DeadLetterApi.Purge, call.Id, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: applied)),
            new("/queues/{name}/dead-letters/{id}/requeue", AdminTransports.Both, selection,
                new AdminOperation("POST", (call, cancel) => new(deadLetters.ChangeOneAsync(call.Change, DeadLetterApi.Requeue, call.Id, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: applied)),
            new("/queues/{name}/dead-letters/requeue", AdminTransports.Both, selection,
                new AdminOperation("POST", (call, cancel) => new(deadLetters.ChangeSelectionAsync(call.Change, DeadLetterApi.Requeue, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: applied)),
            new("/queues/{name}/dead-letters/purge", AdminTransports.Both, selection,
                new AdminOperation("POST", (call, cancel) => new(deadLetters.ChangeSelectionAsync(call.Change, DeadLetterApi.Purge, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: applied)),
            new("/queues/{name}/cluster", AdminTransports.Both, ClusterSettingsRequest.MaxBodyBytes,
                new AdminOperation("GET", (call, cancel) => new(cluster.GetAsync(call.Name, cancel)), AwaitsStorage: true),
                new AdminOperation("PATCH", (call, cancel) => new(cluster.ChangeAsync(call.Change, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: "the change")),
            new("/queues/{name}/pause", AdminTransports.Both, PauseRequest.MaxBodyBytes,
                new AdminOperation("GET", (call, cancel) => new(cluster.GetPausesAsync(call.Name, cancel)), AwaitsStorage: true),
                new AdminOperation("POST", (call, cancel) => new(cluster.PauseAsync(call.Change, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: "the pause")),
            new("/queues/{name}/resume", AdminTransports.Both, PauseRequest.MaxBodyBytes,
                new AdminOperation("POST", (call, cancel) => new(cluster.ResumeAsync(call.Change, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: "the resume")),
        ];
        if (schedules is not null)
        {
            routes.Add(new("/schedules", AdminTransports.Both, ScheduleApi.MaxBodyBytes,
                new AdminOperation("GET", (_, _) => new(schedules.List()))));
            routes.Add(new("/schedules/{name}", AdminTransports.Both, ScheduleApi.MaxBodyBytes,
                new AdminOperation("GET", (call, _) => new(schedules.Get(call.Name))),
                new AdminOperation("PATCH", (call, _) => new(schedules.Change(call.Change)), ReadsChange: true)));
            routes.Add(new("/schedules/{name}/trigger", AdminTransports.Both, ScheduleApi.MaxBodyBytes,
                new AdminOperation("POST", (call, _) => new(schedules.Trigger(call.Change)), ReadsChange: true)));
            var durable = schedules.Durable;
            const string stored = "the schedule change";
            routes.Add(new("/durable-schedules", AdminTransports.Both, DurableScheduleApi.MaxBodyBytes,
                new AdminOperation("GET", (_, cancel) => new(durable.ListAsync(cancel)), AwaitsStorage: true),
                new AdminOperation("POST", (call, cancel) => new(durable.AddAsync(call.Change, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: stored)));
            routes.Add(new("/durable-schedules/{name}", AdminTransports.Both, DurableScheduleApi.MaxBodyBytes,
                new AdminOperation("GET", (call, cancel) => new(durable.GetAsync(call.Name, cancel)), AwaitsStorage: true),
                new AdminOperation("PATCH", (call, cancel) => new(durable.ChangeAsync(call.Change, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: stored),
                new AdminOperation("DELETE", (call, cancel) => new(durable.RemoveAsync(call.Change, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: stored)));
            routes.Add(new("/durable-schedules/{name}/trigger", AdminTransports.Both, DurableScheduleApi.MaxBodyBytes,
                new AdminOperation("POST", (call, cancel) => new(durable.TriggerAsync(call.Change, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: "the trigger")));
        }

        if (items is not null)
        {
            routes.Add(new("/queues/{name}/items", AdminTransports.Both, ItemRequest.MaxBodyBytes,
                new AdminOperation("GET", (call, cancel) => new(items.SearchAsync(call.Name, call.Query, cancel)), AwaitsStorage: true)));
            routes.Add(new("/queues/{name}/items/preview", AdminTransports.Both, ItemRequest.MaxBodyBytes,
                new AdminOperation("POST", (call, cancel) => new(items.ActAsync(call.Change, ItemApi.Preview, cancel)), ReadsChange: true, AwaitsStorage: true)));
            routes.Add(new("/queues/{name}/items/apply", AdminTransports.Both, ItemRequest.MaxBodyBytes,
                new AdminOperation("POST", (call, cancel) => new(items.ActAsync(call.Change, ItemApi.Apply, cancel)), ReadsChange: true, AwaitsStorage: true, MayHaveApplied: "some batches of the action")));
        }

        return new AdminRouteTable(routes);
    }

    /// <summary>The routes <paramref name="transport"/> serves, in the table's order.</summary>
    public IEnumerable<AdminRoute> For(AdminTransports transport) => Routes.Where(r => (r.Transports & transport) != 0);

    /// <summary>The route of <paramref name="transport"/> that <paramref name="segments"/> match (a literal outranks a parameter), or <see langword="null"/>.</summary>
    public AdminRoute? Match(IReadOnlyList<string> segments, AdminTransports transport) =>
        For(transport).Where(r => r.Matches(segments)).MaxBy(static r => r.Literals);

    /// <summary>
    /// The largest body read for a request to <paramref name="segments"/> on <paramref name="transport"/>: its route's;
    /// for a path no route matches, the largest of the routes under the same first segment, else the smallest of all.
    /// </summary>
    public int MaxBodyBytes(IReadOnlyList<string> segments, AdminTransports transport)
    {
        if (Match(segments, transport) is { } route)
        {
            return route.MaxBodyBytes;
        }

        var routes = For(transport).ToList();
        var under = routes.Where(r => segments.Count > 0 && r.Segments[0] == segments[0]).ToList();
        return under.Count > 0 ? under.Max(static r => r.MaxBodyBytes) : routes.Min(static r => r.MaxBodyBytes);
    }

    /// <summary>The 404 of <paramref name="transport"/> for a path no route matches: it lists every route that transport serves.</summary>
    public AdminReply NotFound(string path, AdminTransports transport)
    {
        var patterns = For(transport).Select(static r => r.Pattern).ToList();
        var listed = patterns.Count > 1 ? string.Join(", ", patterns[..^1]) + " and " + patterns[^1] : string.Concat(patterns);
        var server = transport == AdminTransports.LocalSocket ? "the socket" : "the console";
        return AdminReply.Problem(404, "Not found", $"No console endpoint at '{path}'; {server} serves {listed}.");
    }
}
