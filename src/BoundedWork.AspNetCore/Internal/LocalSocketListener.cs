using System.Buffers;
using System.Diagnostics;
using System.Globalization;
using System.Net.Sockets;
using System.Text;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.WebUtilities;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Serves the console's JSON API on a Unix domain socket with dedicated threads and blocking socket calls only, so it
/// answers while the shared ThreadPool is starved and Kestrel cannot.
/// <para>
/// One accept thread takes every connection at once, so the listen backlog never fills, and hands each to a thread of
/// its own, up to <see cref="LocalSocketLimits.MaxClients"/> at a time; past that a connection gets a 503 at once and
/// is closed. Each connection carries one request (<c>Connection: close</c>) that must arrive and be answered within
/// <see cref="LocalSocketLimits.RequestTimeout"/> from its accept, however its bytes trickle in; a client that is too
/// slow is cut off, and never delays another. Stopping closes every open connection and waits for no client.
/// </para>
/// <para>
/// The durable queues' dead-letter routes are served here too, by the same <see cref="DeadLetterApi"/> as over HTTP.
/// They wait for the database (and, as every database call does, for the ThreadPool to run its continuations): the
/// client thread blocks on the operation until the request's deadline, then cancels it and answers 503. So are the
/// durable queues' cluster routes (<see cref="ClusterApi"/>), alike.
/// </para>
/// <para>
/// Access is the socket file's: it is created readable and writable by the app's own user only. Only a stale socket
/// (one nobody listens on) is ever replaced, never a file, a directory or a link; at stop, the socket file is deleted
/// only if it is still the one this listener created.
/// </para>
/// </summary>
internal sealed class LocalSocketListener : IDisposable
{
    private const int MaxHeaderBytes = 8 * 1024;
    private const int ClientThreadStackBytes = 256 * 1024;
    private const int MaxLingering = 64;
    private static readonly TimeSpan s_linger = TimeSpan.FromSeconds(1);

    private readonly AdminApi _api;
    private readonly DeadLetterApi _deadLetters;
    private readonly ClusterApi? _cluster;
    private readonly ScheduleApi? _schedules;
    private readonly IBoundedExecutorRegistry _registry;
    private readonly ILogger _logger;
    private readonly LocalSocketLimits _limits;
    private readonly Socket _listener;
    private readonly Thread _acceptThread;
    private readonly Lock _sync = new();
    private readonly HashSet<Socket> _clients = [];
    private readonly Queue<(Socket Client, long CloseAt)> _lingering = new(); // accept thread only
    private readonly SocketFile _created;
    private volatile bool _stopping;

    public LocalSocketListener(AdminApi api, DeadLetterApi deadLetters, IBoundedExecutorRegistry registry, string path, ILogger logger, LocalSocketLimits limits, ClusterApi? cluster = null, ScheduleApi? schedules = null)
    {
        _api = api;
        _deadLetters = deadLetters;
        _cluster = cluster;
        _schedules = schedules;
        _registry = registry;
        _logger = logger;
        _limits = limits;
        Path = System.IO.Path.GetFullPath(path);
        _listener = Bind(Path);
        _created = SocketFile.Inspect(Path);
        _acceptThread = new Thread(static state => ((LocalSocketListener)state!).AcceptLoop()) { IsBackground = true, Name = "BoundedWork admin socket" };
        _acceptThread.UnsafeStart(this);
        _logger.LocalSocketListening(Path);
    }

    /// <summary>Gets the full path of the socket file.</summary>
    public string Path { get; }

    /// <summary>Gets how many connections are being served now.</summary>
    public int ActiveClients
    {
        get
        {
            lock (_sync)
            {
                return _clients.Count;
            }
        }
    }

    public void Dispose()
    {
        if (_stopping)
        {
            return;
        }

        _stopping = true;
        WakeAccept();
        _listener.Dispose(); // also ends a blocking Accept where the wake-up connection could not reach it
        Socket[] clients;
        lock (_sync)
        {
            clients = [.. _clients];
            _clients.Clear();
        }

        foreach (var client in clients)
        {
            Abort(client); // their threads see the connection end at once and exit; nobody waits for them
        }

        _acceptThread.Join(TimeSpan.FromSeconds(2));
        DeleteIfOurs();
    }

    private static Socket Bind(string path)
    {
        var folder = System.IO.Path.GetDirectoryName(path);
        if (folder is not null && !Directory.Exists(folder))
        {
            throw new InvalidOperationException(
                $"The admin console's local socket '{path}' cannot be created: the folder '{folder}' does not exist. Create it (readable by the app's user only), or set BoundedWorkAdminOptions.LocalSocketPath to a path in an existing folder.");
        }

        var existing = SocketFile.Inspect(path);
        if (existing.Kind == SocketFileKind.Socket)
        {
            if (IsListening(path))
            {
                throw new InvalidOperationException(
                    $"The admin console's local socket '{path}' is in use by another process; set BoundedWorkAdminOptions.LocalSocketPath to a path of this instance's own.");
            }

            File.Delete(path); // a stale socket left by a process that did not stop cleanly
        }
        else if (existing.Kind != SocketFileKind.None)
        {
            throw new InvalidOperationException(
                $"The admin console's local socket '{path}' cannot be created: {existing.Describe()} is already there, and only a stale socket is ever replaced. Remove it, or set BoundedWorkAdminOptions.LocalSocketPath to another path.");
        }

        UnixDomainSocketEndPoint endPoint;
        try
        {
            endPoint = new UnixDomainSocketEndPoint(path);
        }
        catch (ArgumentException e)
        {
            throw new InvalidOperationException($"The admin console's local socket path '{path}' is not usable: {e.Message} Choose a shorter path.", e);
        }

        var listener = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        try
        {
            // Bound through an endpoint the runtime does not track, or disposing the listener would delete whatever is
            // at the path by then; DeleteIfOurs decides.
            listener.Bind(new UntrackedEndPoint(endPoint));
            if (!OperatingSystem.IsWindows())
            {
                File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite);
            }

            listener.Listen(64);
            return listener;
        }
        catch (Exception e) when (e is SocketException or IOException or UnauthorizedAccessException)
        {
            listener.Dispose();
            throw new InvalidOperationException($"The admin console's local socket '{path}' cannot be created: {e.Message}", e);
        }
    }

    private static bool IsListening(string path)
    {
        try
        {
            using var probe = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            probe.Connect(new UnixDomainSocketEndPoint(path));
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }

    private static void Abort(Socket client)
    {
        try
        {
            client.Shutdown(SocketShutdown.Both);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // Already gone.
        }

        client.Dispose();
    }

    private static byte[] Format(AdminReply reply)
    {
        var head = new StringBuilder()
            .Append(CultureInfo.InvariantCulture, $"HTTP/1.1 {reply.Status} {Reason(reply.Status)}\r\n")
            .Append(CultureInfo.InvariantCulture, $"Content-Type: {reply.ContentType}\r\n")
            .Append(CultureInfo.InvariantCulture, $"Content-Length: {reply.Body.Length}\r\n")
            .Append("Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n");
        if (reply.Allow is not null)
        {
            head.Append(CultureInfo.InvariantCulture, $"Allow: {reply.Allow}\r\n");
        }

        if (reply.Status == 503)
        {
            head.Append("Retry-After: 1\r\n");
        }

        return [.. Encoding.ASCII.GetBytes(head.Append("\r\n").ToString()), .. reply.Body];
    }

    /// <summary>Sends a short answer without ever blocking: whatever the socket buffer takes now, then the end.</summary>
    private static void SendWithoutWaiting(Socket client, AdminReply reply)
    {
        try
        {
            client.Blocking = false;
            client.Send(Format(reply), SocketFlags.None, out _);
            client.Shutdown(SocketShutdown.Send);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // The client is gone; nothing to tell it.
        }
    }

    /// <summary>
    /// Reads and drops what the client has sent, without blocking: a socket closed with unread input makes the peer's
    /// next read fail with a reset, before it has read the answer. Returns whether the client has closed its side.
    /// </summary>
    private static bool Drain(Socket client)
    {
        Span<byte> sink = stackalloc byte[1024];
        try
        {
            client.Blocking = false;
            for (var total = 0; total < 64 * 1024; )
            {
                var n = client.Receive(sink, SocketFlags.None, out var error);
                if (error == SocketError.WouldBlock)
                {
                    return false;
                }

                if (error != SocketError.Success || n == 0)
                {
                    return true;
                }

                total += n;
            }
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            return true;
        }

        return false;
    }

    /// <summary>Names the connecting process for the change log: on Linux its user and process ids (SO_PEERCRED).</summary>
    private static string Peer(Socket client)
    {
        if (OperatingSystem.IsLinux())
        {
            Span<byte> credentials = stackalloc byte[12];
            try
            {
                if (client.GetRawSocketOption(1 /* SOL_SOCKET */, 17 /* SO_PEERCRED */, credentials) == 12)
                {
                    var pid = BitConverter.ToInt32(credentials[..4]);
                    var uid = BitConverter.ToInt32(credentials[4..8]);
                    return $"local socket peer (uid {uid}, pid {pid})";
                }
            }
            catch (SocketException)
            {
                // Fall through to the anonymous description.
            }
        }

        return "local socket peer";
    }

    private static string Reason(int status) => status switch
    {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    };

    private void WakeAccept()
    {
        try
        {
            // Closing a listening socket does not interrupt a blocking Accept on every platform; a connection does.
            using var wake = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            wake.Connect(new UnixDomainSocketEndPoint(Path));
        }
        catch (SocketException)
        {
            // Already closed.
        }
    }

    private void DeleteIfOurs()
    {
        var now = SocketFile.Inspect(Path);
        if (now.Kind == SocketFileKind.Socket && now == _created)
        {
            try
            {
                File.Delete(Path);
            }
            catch (IOException)
            {
                // Best effort: a stale socket is replaced at the next start.
            }
        }
    }

    private void AcceptLoop()
    {
        try
        {
            AcceptConnections();
        }
        finally
        {
            while (_lingering.TryDequeue(out var refused))
            {
                refused.Client.Dispose();
            }
        }
    }

    private void AcceptConnections()
    {
        while (!_stopping)
        {
            Socket client;
            try
            {
                // While refused connections linger, wake up now and then to close them.
                if (_lingering.Count > 0 && !_listener.Poll(s_linger / 4, SelectMode.SelectRead))
                {
                    CloseLingering();
                    continue;
                }

                client = _listener.Accept();
            }
            catch (Exception) when (_stopping)
            {
                return;
            }
            catch (SocketException exception)
            {
                _logger.LocalSocketFailed(Path, exception);
                continue;
            }

            if (_stopping)
            {
                client.Dispose();
                return;
            }

            CloseLingering();
            if (!TryAdmit(client))
            {
                Refuse(client);
                continue;
            }

            try
            {
                var thread = new Thread(static state => ((Connection)state!).Run(), ClientThreadStackBytes) { IsBackground = true, Name = "BoundedWork admin socket client" };
                thread.UnsafeStart(new Connection(this, client));
            }
            catch (OutOfMemoryException exception)
            {
                // No thread could be created for it: refuse this one and keep listening.
                _logger.LocalSocketFailed(Path, exception);
                Release(client);
                Abort(client);
            }
        }
    }

    /// <summary>
    /// Answers 503 at once and keeps the connection open a moment, so the client can finish sending its request and
    /// read the answer; the accept thread closes it when the client closes, or after <see cref="s_linger"/>.
    /// </summary>
    private void Refuse(Socket client)
    {
        SendWithoutWaiting(client, AdminReply.Problem(
            503,
            "Too many connections",
            $"The local socket serves at most {_limits.MaxClients} connections at a time; they are all busy. Try again in a second."));
        if (_lingering.Count >= MaxLingering)
        {
            _lingering.Dequeue().Client.Dispose();
        }

        _lingering.Enqueue((client, Stopwatch.GetTimestamp() + (long)(s_linger.TotalSeconds * Stopwatch.Frequency)));
    }

    private void CloseLingering()
    {
        var now = Stopwatch.GetTimestamp();
        for (var i = _lingering.Count; i > 0; i--)
        {
            var refused = _lingering.Dequeue();
            if (Drain(refused.Client) || now >= refused.CloseAt)
            {
                refused.Client.Dispose();
            }
            else
            {
                _lingering.Enqueue(refused);
            }
        }
    }

    private bool TryAdmit(Socket client)
    {
        lock (_sync)
        {
            if (_stopping || _clients.Count >= _limits.MaxClients)
            {
                return false;
            }

            _clients.Add(client);
            return true;
        }
    }

    private void Release(Socket client)
    {
        lock (_sync)
        {
            _clients.Remove(client);
        }
    }

    /// <summary>The largest body a request to <paramref name="target"/> may carry: a cluster change's, a dead-letter selection's, else a settings change's.</summary>
    private static int MaxBodyBytes(string target)
    {
        var path = target.Split('?', 2)[0].Trim('/');
        return path.StartsWith("queues/", StringComparison.Ordinal) && path.EndsWith("/cluster", StringComparison.Ordinal) ? ClusterSettingsRequest.MaxBodyBytes
            : path.StartsWith("queues/", StringComparison.Ordinal) ? DeadLetterRequest.MaxBodyBytes
            : SettingsRequest.MaxBodyBytes;
    }

    private AdminReply Route(LocalSocketRequest request, ReadOnlySequence<byte> body, bool tooLarge, string peer, long deadline)
    {
        var (method, target) = (request.Method, request.Target);
        var query = target.IndexOf('?', StringComparison.Ordinal);
        var path = query < 0 ? target : target[..query];
        var history = query >= 0 && target[(query + 1)..].Split('&').Contains("history=true", StringComparer.OrdinalIgnoreCase);
        var segments = path.Trim('/').Split('/');
        switch (segments)
        {
            case ["executors"]:
                return method == "GET" ? _api.ListExecutors(history) : AdminApi.MethodNotAllowed(method, path, "GET");
            case ["threadpool"]:
                return method == "GET" ? _api.GetThreadPool(history) : AdminApi.MethodNotAllowed(method, path, "GET");
            case ["process"]:
                return method == "GET" ? ProcessDocument.Reply(Path, _registry) : AdminApi.MethodNotAllowed(method, path, "GET");
            case ["executors", var name]:
                return method switch
                {
                    "GET" => _api.GetExecutor(Uri.UnescapeDataString(name), history),
                    "PATCH" => _api.ChangeSettings(Change(Uri.UnescapeDataString(name)), workersOnly: false),
                    _ => AdminApi.MethodNotAllowed(method, path, "GET, PATCH"),
                };
            case ["executors", var name, "workers"]:
                return method == "PUT"
                    ? _api.ChangeSettings(Change(Uri.UnescapeDataString(name)), workersOnly: true)
                    : AdminApi.MethodNotAllowed(method, path, "PUT");
            case ["queues", var queue, "dead-letters"]:
                return method == "GET"
                    ? WaitFor(Uri.UnescapeDataString(queue), deadline, cancel => _deadLetters.ListAsync(Uri.UnescapeDataString(queue), Query(target, query), cancel))
                    : AdminApi.MethodNotAllowed(method, path, "GET");
            case ["queues", var queue, "dead-letters", (DeadLetterApi.Requeue or DeadLetterApi.Purge) and var operation]:
                return method == "POST"
                    ? WaitFor(Uri.UnescapeDataString(queue), deadline, cancel => _deadLetters.ChangeSelectionAsync(Change(Uri.UnescapeDataString(queue)), operation, cancel))
                    : AdminApi.MethodNotAllowed(method, path, "POST");
            case ["queues", var queue, "dead-letters", var id]:
                return method switch
                {
                    "GET" => WaitFor(Uri.UnescapeDataString(queue), deadline, cancel => _deadLetters.ShowAsync(Uri.UnescapeDataString(queue), Uri.UnescapeDataString(id), cancel)),
                    "DELETE" => WaitFor(Uri.UnescapeDataString(queue), deadline, cancel => _deadLetters.ChangeOneAsync(Change(Uri.UnescapeDataString(queue)), DeadLetterApi.Purge, Uri.UnescapeDataString(id), cancel)),
                    _ => AdminApi.MethodNotAllowed(method, path, "GET, DELETE"),
                };
            case ["queues", var queue, "dead-letters", var id, DeadLetterApi.Requeue]:
                return method == "POST"
                    ? WaitFor(Uri.UnescapeDataString(queue), deadline, cancel => _deadLetters.ChangeOneAsync(Change(Uri.UnescapeDataString(queue)), DeadLetterApi.Requeue, Uri.UnescapeDataString(id), cancel))
                    : AdminApi.MethodNotAllowed(method, path, "POST");
            case ["queues", var queue, "cluster"] when _cluster is { } cluster:
                return method switch
                {
                    "GET" => WaitFor(Uri.UnescapeDataString(queue), deadline, cancel => cluster.GetAsync(Uri.UnescapeDataString(queue), cancel), change: null),
                    "PATCH" => WaitFor(Uri.UnescapeDataString(queue), deadline, cancel => cluster.ChangeAsync(Change(Uri.UnescapeDataString(queue)), cancel), "the change"),
                    _ => AdminApi.MethodNotAllowed(method, path, "GET, PATCH"),
                };
            case ["schedules"] when _schedules is { } schedules:
                return method == "GET" ? schedules.List() : AdminApi.MethodNotAllowed(method, path, "GET");
            case ["schedules", var schedule] when _schedules is { } schedules:
                return method switch
                {
                    "GET" => schedules.Get(Uri.UnescapeDataString(schedule)),
                    "PATCH" => schedules.Change(Change(Uri.UnescapeDataString(schedule))),
                    _ => AdminApi.MethodNotAllowed(method, path, "GET, PATCH"),
                };
            case ["schedules", var schedule, "trigger"] when _schedules is { } schedules:
                return method == "POST" ? schedules.Trigger(Change(Uri.UnescapeDataString(schedule))) : AdminApi.MethodNotAllowed(method, path, "POST");
            default:
                return AdminReply.Problem(404, "Not found", $"No console endpoint at '{path}'; the socket serves /executors, /executors/{{name}}, /executors/{{name}}/workers, /threadpool, /process, /queues/{{name}}/dead-letters, /queues/{{name}}/dead-letters/{{id}}, /queues/{{name}}/dead-letters/{{id}}/requeue, /queues/{{name}}/dead-letters/requeue, /queues/{{name}}/dead-letters/purge, /queues/{{name}}/cluster, /schedules, /schedules/{{name}} and /schedules/{{name}}/trigger.");
        }

        ChangeRequest Change(string name) =>
            new(name, request.ContentType, !string.IsNullOrWhiteSpace(request.AdminHeader), body, tooLarge, peer, "unix:" + Path, DuplicateHeader: request.DuplicateHeader);
    }

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
    private AdminReply WaitFor(string queue, long deadline, Func<CancellationToken, Task<AdminReply>> operation, string? change = "a requeue or purge")
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
        var detail = $"Work queue '{SettingsRequest.Shorten(queue)}' did not answer within the local socket's request deadline ({_limits.RequestTimeout.TotalSeconds:0.#} seconds from connecting), so the operation was cancelled" + (change is null ? "." : $"; {change} may have been applied all the same, and the app's log records each one that was.");
        _logger.LocalSocketFailed(Path, new TimeoutException(detail));
        try
        {
            cancel.Cancel();
        }
        catch (AggregateException exception)
        {
            _logger.LocalSocketFailed(Path, exception);
        }

        return AdminReply.Problem(503, "Storage did not answer in time", detail, queue: SettingsRequest.Shorten(queue));
    }

    /// <summary>
    /// How long an answer may take to go out: what is left of the deadline, and never less than the linger, so
    /// an answer the deadline overtook (or nearly overtook) while the storage worked still gets a bounded moment.
    /// It reads the clock once: checking the deadline and then reading what remains could see it pass in between.
    /// </summary>
    internal static int SendTimeoutMilliseconds(long deadline, long now)
    {
        var remaining = (deadline - now) * 1000 / Stopwatch.Frequency;
        return (int)Math.Min(Math.Max(remaining, (long)s_linger.TotalMilliseconds), int.MaxValue);
    }

    /// <summary>One accepted connection, served on its own thread against one deadline for the whole exchange.</summary>
    private sealed class Connection(LocalSocketListener owner, Socket client)
    {
        private readonly long _deadline = Stopwatch.GetTimestamp() + (long)(owner._limits.RequestTimeout.TotalSeconds * Stopwatch.Frequency);

        public void Run()
        {
            try
            {
                Serve();
            }
            catch (TimeoutException)
            {
                SendWithoutWaiting(client, AdminReply.Problem(408, "Request timeout", $"The whole request must arrive within {owner._limits.RequestTimeout.TotalSeconds:0.#} seconds of connecting."));
            }
            catch (Exception exception) when (exception is SocketException or IOException or ObjectDisposedException)
            {
                // The client went away, or the listener is stopping; nothing to answer.
            }
            catch (Exception exception)
            {
                owner._logger.LocalSocketFailed(owner.Path, exception);
                SendWithoutWaiting(client, AdminReply.Problem(500, "Internal error", "The request failed; the app's log has the details."));
            }
            finally
            {
                owner.Release(client);
                Drain(client);
                client.Dispose();
            }
        }

        private void Serve()
        {
            var buffer = new byte[MaxHeaderBytes];
            var received = 0;
            int headEnd;
            while ((headEnd = LocalSocketRequest.FindHeadEnd(buffer.AsSpan(0, received))) < 0)
            {
                if (received >= MaxHeaderBytes)
                {
                    Send(AdminReply.Problem(400, "Bad request", "The request headers are too large."));
                    return;
                }

                var n = Receive(buffer, received, MaxHeaderBytes - received);
                if (n == 0)
                {
                    return;
                }

                received += n;
            }

            var request = LocalSocketRequest.Parse(buffer.AsSpan(0, headEnd), out var error);
            if (request is null)
            {
                Send(AdminReply.Problem(400, "Bad request", error!));
                return;
            }

            var tooLarge = request.ContentLength > MaxBodyBytes(request.Target);
            var bodyLength = tooLarge ? 0 : (int)request.ContentLength;
            if (headEnd + bodyLength > buffer.Length)
            {
                Array.Resize(ref buffer, headEnd + bodyLength);
            }

            while (!tooLarge && received < headEnd + bodyLength)
            {
                var n = Receive(buffer, received, headEnd + bodyLength - received);
                if (n == 0)
                {
                    return;
                }

                received += n;
            }

            var body = new ReadOnlySequence<byte>(buffer, headEnd, bodyLength);
            Send(owner.Route(request, body, tooLarge, Peer(client), _deadline));
        }

        private int Receive(byte[] buffer, int offset, int count)
        {
            client.ReceiveTimeout = RemainingMilliseconds();
            try
            {
                return client.Receive(buffer, offset, count, SocketFlags.None);
            }
            catch (SocketException e) when (e.SocketErrorCode == SocketError.TimedOut || e.SocketErrorCode == SocketError.WouldBlock)
            {
                throw new TimeoutException("The request did not arrive in time.", e);
            }
        }

        private void Send(AdminReply reply)
        {
            client.SendTimeout = SendTimeoutMilliseconds(_deadline, Stopwatch.GetTimestamp());
            client.Send(Format(reply));
            client.Shutdown(SocketShutdown.Send);
        }

        private int RemainingMilliseconds()
        {
            var remaining = (_deadline - Stopwatch.GetTimestamp()) * 1000 / Stopwatch.Frequency;
            if (remaining <= 0)
            {
                throw new TimeoutException("The request's deadline has passed.");
            }

            return (int)Math.Min(remaining, int.MaxValue);
        }
    }
}

/// <summary>
/// A Unix domain socket address the runtime does not remember as bound: a listener bound to a
/// <see cref="UnixDomainSocketEndPoint"/> deletes the file at its path when disposed, whatever is there by then.
/// </summary>
internal sealed class UntrackedEndPoint(UnixDomainSocketEndPoint inner) : System.Net.EndPoint
{
    public override AddressFamily AddressFamily => AddressFamily.Unix;

    public override System.Net.SocketAddress Serialize() => inner.Serialize();

    public override System.Net.EndPoint Create(System.Net.SocketAddress socketAddress) => inner.Create(socketAddress);

    public override string ToString() => inner.ToString();
}

/// <summary>The local socket's limits: how many connections at once, and how long one request may take from accept.</summary>
internal sealed record LocalSocketLimits(int MaxClients, TimeSpan RequestTimeout)
{
    public static LocalSocketLimits Default { get; } = new(16, TimeSpan.FromSeconds(5));
}
