using System.Buffers;
using System.Globalization;
using System.Net.Sockets;
using System.Text;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Serves the console's JSON API on a Unix domain socket from one dedicated thread, with blocking socket calls only,
/// so it answers while the shared ThreadPool is starved and Kestrel cannot. Access is the socket file's: it is
/// created readable and writable by the app's own user only. One request per connection (<c>Connection: close</c>),
/// connections served one at a time, each with a 5-second read and write timeout.
/// </summary>
internal sealed class LocalSocketListener : IDisposable
{
    private const int MaxHeaderBytes = 8 * 1024;
    private static readonly TimeSpan s_ioTimeout = TimeSpan.FromSeconds(5);

    private readonly AdminApi _api;
    private readonly string _path;
    private readonly ILogger _logger;
    private readonly Socket _listener;
    private readonly Thread _thread;
    private volatile bool _stopping;

    public LocalSocketListener(AdminApi api, string path, ILogger logger)
    {
        _api = api;
        _path = Path.GetFullPath(path);
        _logger = logger;
        if (File.Exists(_path))
        {
            if (IsListening(_path))
            {
                throw new InvalidOperationException(
                    $"The admin console's local socket '{_path}' is in use by another process; set BoundedWorkAdminOptions.LocalSocketPath to a path of this instance's own.");
            }

            File.Delete(_path); // a stale socket file left by a process that did not stop cleanly
        }

        _listener = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        try
        {
            _listener.Bind(new UnixDomainSocketEndPoint(_path));
            if (!OperatingSystem.IsWindows())
            {
                File.SetUnixFileMode(_path, UnixFileMode.UserRead | UnixFileMode.UserWrite);
            }

            _listener.Listen(16);
        }
        catch
        {
            _listener.Dispose();
            throw;
        }

        _thread = new Thread(static state => ((LocalSocketListener)state!).Run()) { IsBackground = true, Name = "BoundedWork admin socket" };
        _thread.UnsafeStart(this);
        _logger.LocalSocketListening(_path);
    }

    public void Dispose()
    {
        if (_stopping)
        {
            return;
        }

        _stopping = true;
        try
        {
            // Wake the blocking Accept: closing a listening socket does not interrupt it on every platform.
            using var wake = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            wake.Connect(new UnixDomainSocketEndPoint(_path));
        }
        catch (SocketException)
        {
            // Already closed.
        }

        _thread.Join(s_ioTimeout * 2);
        _listener.Dispose();
        try
        {
            File.Delete(_path);
        }
        catch (IOException)
        {
            // Best effort: a stale file is replaced at the next start.
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

    private void Run()
    {
        while (!_stopping)
        {
            Socket client;
            try
            {
                client = _listener.Accept();
            }
            catch (Exception) when (_stopping)
            {
                return;
            }
            catch (SocketException exception)
            {
                _logger.LocalSocketFailed(_path, exception);
                continue;
            }

            using (client)
            {
                if (_stopping)
                {
                    return;
                }

                try
                {
                    Serve(client);
                }
                catch (Exception exception) when (exception is SocketException or IOException or ObjectDisposedException)
                {
                    // The client went away or was too slow; nothing to answer.
                }
                catch (Exception exception)
                {
                    _logger.LocalSocketFailed(_path, exception);
                    TryWrite(client, AdminReply.Problem(500, "Internal error", "The request failed; the app's log has the details."));
                }
            }
        }
    }

    private void Serve(Socket client)
    {
        client.ReceiveTimeout = client.SendTimeout = (int)s_ioTimeout.TotalMilliseconds;
        var buffer = new byte[MaxHeaderBytes + SettingsRequest.MaxBodyBytes + 1];
        var received = 0;
        int headerEnd;
        while ((headerEnd = buffer.AsSpan(0, received).IndexOf("\r\n\r\n"u8)) < 0)
        {
            if (received >= MaxHeaderBytes)
            {
                TryWrite(client, AdminReply.Problem(400, "Bad request", "The request headers are too large."));
                return;
            }

            var n = client.Receive(buffer, received, MaxHeaderBytes - received, SocketFlags.None);
            if (n == 0)
            {
                return;
            }

            received += n;
        }

        var head = Encoding.ASCII.GetString(buffer, 0, headerEnd).Split("\r\n");
        var requestLine = head[0].Split(' ');
        if (requestLine.Length != 3 || !requestLine[2].StartsWith("HTTP/1.", StringComparison.Ordinal))
        {
            TryWrite(client, AdminReply.Problem(400, "Bad request", "Send an HTTP/1.1 request."));
            return;
        }

        string? contentType = null, adminHeader = null;
        var contentLength = 0L;
        foreach (var line in head.AsSpan(1))
        {
            var colon = line.IndexOf(':', StringComparison.Ordinal);
            if (colon <= 0)
            {
                continue;
            }

            var name = line[..colon].Trim();
            var value = line[(colon + 1)..].Trim();
            if (name.Equals("Content-Type", StringComparison.OrdinalIgnoreCase))
            {
                contentType = value;
            }
            else if (name.Equals(BoundedWorkAdminOptions.RequestHeaderName, StringComparison.OrdinalIgnoreCase))
            {
                adminHeader = value;
            }
            else if (name.Equals("Content-Length", StringComparison.OrdinalIgnoreCase) && !long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out contentLength))
            {
                TryWrite(client, AdminReply.Problem(400, "Bad request", "Content-Length is not a number."));
                return;
            }
            else if (name.Equals("Transfer-Encoding", StringComparison.OrdinalIgnoreCase))
            {
                TryWrite(client, AdminReply.Problem(400, "Bad request", "Send the body with a Content-Length, not chunked."));
                return;
            }
        }

        var bodyStart = headerEnd + 4;
        var tooLarge = contentLength > SettingsRequest.MaxBodyBytes;
        if (!tooLarge)
        {
            var bodyEnd = bodyStart + (int)contentLength;
            while (received < bodyEnd)
            {
                var n = client.Receive(buffer, received, bodyEnd - received, SocketFlags.None);
                if (n == 0)
                {
                    return;
                }

                received += n;
            }
        }

        var body = tooLarge ? ReadOnlySequence<byte>.Empty : new ReadOnlySequence<byte>(buffer, bodyStart, (int)contentLength);
        var (method, target) = (requestLine[0], requestLine[1]);
        TryWrite(client, Route(method, target, contentType, adminHeader, body, tooLarge, Peer(client)));
    }

    private AdminReply Route(string method, string target, string? contentType, string? adminHeader, ReadOnlySequence<byte> body, bool tooLarge, string peer)
    {
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
            default:
                return AdminReply.Problem(404, "Not found", $"No console endpoint at '{path}'; the socket serves /executors, /executors/{{name}}, /executors/{{name}}/workers and /threadpool.");
        }

        ChangeRequest Change(string name) =>
            new(name, contentType, !string.IsNullOrWhiteSpace(adminHeader), body, tooLarge, peer, "unix:" + _path);
    }

    private static void TryWrite(Socket client, AdminReply reply)
    {
        var head = new StringBuilder()
            .Append(CultureInfo.InvariantCulture, $"HTTP/1.1 {reply.Status} {Reason(reply.Status)}\r\n")
            .Append(CultureInfo.InvariantCulture, $"Content-Type: {reply.ContentType}\r\n")
            .Append(CultureInfo.InvariantCulture, $"Content-Length: {reply.Body.Length}\r\n")
            .Append("Cache-Control: no-store\r\nConnection: close\r\n");
        if (reply.Allow is not null)
        {
            head.Append(CultureInfo.InvariantCulture, $"Allow: {reply.Allow}\r\n");
        }

        head.Append("\r\n");
        client.Send(Encoding.ASCII.GetBytes(head.ToString()));
        client.Send(reply.Body);
        client.Shutdown(SocketShutdown.Send);
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
        409 => "Conflict",
        415 => "Unsupported Media Type",
        _ => "Internal Server Error",
    };
}
