using System.Diagnostics;
using System.Net.Sockets;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Serves the console's JSON API on a Unix domain socket with dedicated threads and blocking socket calls only, so it
/// answers while the shared ThreadPool is starved and Kestrel cannot.
/// <para>
/// This type is the server: accept and admission. One accept thread takes every connection at once, so the listen
/// backlog never fills, and hands each to a thread of its own, up to <see cref="LocalSocketLimits.MaxClients"/> at a
/// time; past that a connection gets a 503 at once and is closed. Each connection carries one request
/// (<c>Connection: close</c>) that must arrive and be answered within <see cref="LocalSocketLimits.RequestTimeout"/>
/// from its accept, however its bytes trickle in; a client that is too slow is cut off, and never delays another.
/// Stopping closes every open connection and waits for no client.
/// </para>
/// <para>
/// Its parts: the socket file's life (<see cref="LocalSocketFile"/>: access is the file's, readable and writable by the
/// app's own user only), the HTTP framing (<see cref="LocalSocketHttp"/>), and the routes, the same table Kestrel maps
/// (<see cref="LocalSocketRouter"/> over <see cref="AdminRouteTable"/>), whose storage waits block the client's thread
/// up to the request's deadline.
/// </para>
/// </summary>
internal sealed class LocalSocketListener : IDisposable
{
    private const int ClientThreadStackBytes = 256 * 1024;
    private const int MaxLingering = 64;
    private static readonly TimeSpan s_linger = TimeSpan.FromSeconds(1);

    private readonly ILogger _logger;
    private readonly LocalSocketLimits _limits;
    private readonly LocalSocketFile _file;
    private readonly Socket _listener;
    private readonly LocalSocketRouter _router;
    private readonly Thread _acceptThread;
    private readonly Lock _sync = new();
    private readonly HashSet<Socket> _clients = [];
    private readonly Queue<(Socket Client, long CloseAt)> _lingering = new(); // accept thread only
    private volatile bool _stopping;

    public LocalSocketListener(AdminApi api, DeadLetterApi deadLetters, IBoundedExecutorRegistry registry, string path, ILogger logger, LocalSocketLimits limits, ClusterApi cluster, ScheduleApi? schedules = null, ItemApi? items = null)
    {
        _logger = logger;
        _limits = limits;
        Path = System.IO.Path.GetFullPath(path);
        (_file, _listener) = LocalSocketFile.Create(Path);
        var table = AdminRouteTable.Create(api, deadLetters, cluster, () => ProcessDocument.Reply(Path, registry), schedules, items);
        _router = new LocalSocketRouter(table, Path, logger, limits.RequestTimeout);
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
        _file.DeleteIfOurs();
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
        LocalSocketHttp.SendWithoutWaiting(client, AdminReply.Problem(
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
            if (LocalSocketHttp.Drain(refused.Client) || now >= refused.CloseAt)
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
                LocalSocketHttp.SendWithoutWaiting(client, AdminReply.Problem(408, "Request timeout", $"The whole request must arrive within {owner._limits.RequestTimeout.TotalSeconds:0.#} seconds of connecting."));
            }
            catch (Exception exception) when (exception is SocketException or IOException or ObjectDisposedException)
            {
                // The client went away, or the listener is stopping; nothing to answer.
            }
            catch (Exception exception)
            {
                owner._logger.LocalSocketFailed(owner.Path, exception);
                LocalSocketHttp.SendWithoutWaiting(client, AdminReply.Problem(500, "Internal error", "The request failed; the app's log has the details."));
            }
            finally
            {
                owner.Release(client);
                LocalSocketHttp.Drain(client);
                client.Dispose();
            }
        }

        private void Serve()
        {
            var exchange = LocalSocketHttp.Read(client, owner._router.MaxBodyBytes, RemainingMilliseconds);
            if (exchange.Refusal is { } refusal)
            {
                Send(refusal);
            }
            else if (exchange.Request is { } request)
            {
                Send(owner._router.Route(request, exchange.Body, exchange.BodyTooLarge, LocalSocketHttp.Peer(client), _deadline));
            }
        }

        private void Send(AdminReply reply) =>
            LocalSocketHttp.Send(client, reply, SendTimeoutMilliseconds(_deadline, Stopwatch.GetTimestamp()));

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

/// <summary>The local socket's limits: how many connections at once, and how long one request may take from accept.</summary>
internal sealed record LocalSocketLimits(int MaxClients, TimeSpan RequestTimeout)
{
    public static LocalSocketLimits Default { get; } = new(16, TimeSpan.FromSeconds(5));
}
