using System.Buffers;
using System.Globalization;
using System.Net.Sockets;
using System.Text;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// What one connection of the local socket sent: its request head and body (none when the body was over the route's
/// limit), or the 400 that answers a head that cannot be read; neither when the client closed before a head arrived.
/// </summary>
internal readonly record struct LocalSocketExchange(LocalSocketRequest? Request, ReadOnlySequence<byte> Body, bool BodyTooLarge, AdminReply? Refusal);

/// <summary>
/// The local socket's HTTP/1.1 framing, on blocking socket calls: reading one request (a head of at most
/// <see cref="MaxHeaderBytes"/>, parsed by <see cref="LocalSocketRequest"/>, then a <c>Content-Length</c> body up to the
/// route's limit) and writing one answer (<c>Connection: close</c>). Every read waits at most what is left of the
/// connection's deadline, which the caller gives as a function that throws <see cref="TimeoutException"/> once it has
/// passed.
/// </summary>
internal static class LocalSocketHttp
{
    public const int MaxHeaderBytes = 8 * 1024;

    /// <summary>Reads one request from <paramref name="client"/>.</summary>
    /// <param name="client">The connection.</param>
    /// <param name="maxBodyBytes">The largest body read for a request target.</param>
    /// <param name="remainingMilliseconds">What is left of the deadline; throws <see cref="TimeoutException"/> once it has passed.</param>
    /// <exception cref="TimeoutException">The request did not arrive before the deadline.</exception>
    public static LocalSocketExchange Read(Socket client, Func<string, int> maxBodyBytes, Func<int> remainingMilliseconds)
    {
        var buffer = new byte[MaxHeaderBytes];
        var received = 0;
        int headEnd;
        while ((headEnd = LocalSocketRequest.FindHeadEnd(buffer.AsSpan(0, received))) < 0)
        {
            if (received >= MaxHeaderBytes)
            {
                return new(null, default, false, AdminReply.Problem(400, "Bad request", "The request headers are too large."));
            }

            var n = Receive(client, buffer, received, MaxHeaderBytes - received, remainingMilliseconds);
            if (n == 0)
            {
                return default;
            }

            received += n;
        }

        var request = LocalSocketRequest.Parse(buffer.AsSpan(0, headEnd), out var error);
        if (request is null)
        {
            return new(null, default, false, AdminReply.Problem(400, "Bad request", error!));
        }

        var tooLarge = request.ContentLength > maxBodyBytes(request.Target);
        var bodyLength = tooLarge ? 0 : (int)request.ContentLength;
        if (headEnd + bodyLength > buffer.Length)
        {
            Array.Resize(ref buffer, headEnd + bodyLength);
        }

        while (!tooLarge && received < headEnd + bodyLength)
        {
            var n = Receive(client, buffer, received, headEnd + bodyLength - received, remainingMilliseconds);
            if (n == 0)
            {
                return default;
            }

            received += n;
        }

        return new(request, new ReadOnlySequence<byte>(buffer, headEnd, bodyLength), tooLarge, null);
    }

    /// <summary>Sends an answer, waiting at most <paramref name="timeoutMilliseconds"/>, then ends the sending side.</summary>
    public static void Send(Socket client, AdminReply reply, int timeoutMilliseconds)
    {
        client.SendTimeout = timeoutMilliseconds;
        client.Send(Format(reply));
        client.Shutdown(SocketShutdown.Send);
    }

    /// <summary>Sends a short answer without ever blocking: whatever the socket buffer takes now, then the end.</summary>
    public static void SendWithoutWaiting(Socket client, AdminReply reply)
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
    public static bool Drain(Socket client)
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
    public static string Peer(Socket client)
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

    private static int Receive(Socket client, byte[] buffer, int offset, int count, Func<int> remainingMilliseconds)
    {
        client.ReceiveTimeout = remainingMilliseconds();
        try
        {
            return client.Receive(buffer, offset, count, SocketFlags.None);
        }
        catch (SocketException e) when (e.SocketErrorCode == SocketError.TimedOut || e.SocketErrorCode == SocketError.WouldBlock)
        {
            throw new TimeoutException("The request did not arrive in time.", e);
        }
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
}
