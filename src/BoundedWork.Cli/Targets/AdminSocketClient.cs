using System.Globalization;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;

namespace BoundedWork.Cli.Targets;

/// <summary>An answer of the admin API: the HTTP status and the JSON document (a problem document for errors).</summary>
internal sealed record AdminAnswer(int Status, JsonElement Json, string Text)
{
    public bool IsSuccess => Status is >= 200 and < 300;
}

/// <summary>
/// HTTP/1.1 over the app's Unix domain socket, one request per connection, with blocking calls and one deadline.
/// Every failure becomes a <see cref="ToolException"/> that says what went wrong and what to do.
/// </summary>
internal sealed class AdminSocketClient(string path, TimeSpan timeout)
{
    private const int MaxAnswerBytes = 16 * 1024 * 1024;

    public string Path { get; } = path;

    public AdminAnswer Get(string target) => Send("GET", target, null);

    public AdminAnswer Send(string method, string target, string? json)
    {
        using var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        socket.SendTimeout = socket.ReceiveTimeout = (int)timeout.TotalMilliseconds;
        try
        {
            socket.Connect(new UnixDomainSocketEndPoint(Path));
            var body = Encoding.UTF8.GetBytes(json ?? "");
            var head = new StringBuilder().Append(CultureInfo.InvariantCulture, $"{method} {target} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nUser-Agent: bw\r\n");
            if (json is not null)
            {
                head.Append(CultureInfo.InvariantCulture, $"Content-Type: application/json\r\nX-BoundedWork-Admin: bw\r\nContent-Length: {body.Length}\r\n");
            }

            socket.Send([.. Encoding.ASCII.GetBytes(head.Append("\r\n").ToString()), .. body]);
            return Parse(ReadAll(socket));
        }
        catch (SocketException e)
        {
            throw ToolException.Unreachable(Explain(e));
        }
        catch (ArgumentException e)
        {
            throw ToolException.Unreachable($"'{Path}' is not a usable socket path: {e.Message}");
        }
    }

    private static byte[] ReadAll(Socket socket)
    {
        using var answer = new MemoryStream();
        var buffer = new byte[16 * 1024];
        int n;
        while ((n = socket.Receive(buffer)) > 0)
        {
            answer.Write(buffer, 0, n);
            if (answer.Length > MaxAnswerBytes)
            {
                break;
            }
        }

        return answer.ToArray();
    }

    private AdminAnswer Parse(byte[] raw)
    {
        var text = Encoding.UTF8.GetString(raw);
        var split = text.IndexOf("\r\n\r\n", StringComparison.Ordinal);
        if (split < 0 || !text.StartsWith("HTTP/1.", StringComparison.Ordinal) || text.Length < 12
            || !int.TryParse(text.AsSpan(9, 3), NumberStyles.None, CultureInfo.InvariantCulture, out var status))
        {
            throw NotOurs(raw.Length == 0 ? "it closed the connection without a word" : $"its answer is not HTTP ('{Excerpt(text)}')");
        }

        var head = text[..split];
        var body = text[(split + 4)..];
        if (!head.Contains("json", StringComparison.OrdinalIgnoreCase))
        {
            throw NotOurs($"it answered {status} without a JSON document ('{Excerpt(body)}')");
        }

        try
        {
            using var document = JsonDocument.Parse(body);
            if (document.RootElement.ValueKind != JsonValueKind.Object)
            {
                throw NotOurs("its answer is JSON but not an object");
            }

            return new AdminAnswer(status, document.RootElement.Clone(), body);
        }
        catch (JsonException)
        {
            throw NotOurs($"its answer is not valid JSON ('{Excerpt(body)}')");
        }
    }

    private ToolException NotOurs(string what) =>
        ToolException.Unreachable($"'{Path}' does not speak the BoundedWork admin API: {what}. Is it another program's socket?");

    private string Explain(SocketException e) => e.SocketErrorCode switch
    {
        SocketError.ConnectionRefused =>
            $"Nothing listens on '{Path}': the process has exited or stopped serving, and left a stale socket behind.",
        SocketError.AddressNotAvailable or SocketError.HostNotFound or SocketError.AddressFamilyNotSupported when !File.Exists(Path) =>
            $"There is no socket at '{Path}'.",
        SocketError.AccessDenied =>
            $"Permission denied on '{Path}': the socket is the app's user's only; run bw as that user (or root).",
        SocketError.TimedOut or SocketError.WouldBlock =>
            $"No answer from '{Path}' within {timeout.TotalSeconds:0.#} s. The app may be overloaded beyond its socket's limits; try again, or raise --timeout.",
        _ when !File.Exists(Path) => $"There is no socket at '{Path}'.",
        _ => $"Could not talk to '{Path}': {e.Message}.",
    };

    private static string Excerpt(string text)
    {
        var line = text.Split('\n', 2)[0].Trim();
        var shown = line.Length > 60 ? line[..60] + "..." : line;
        return new string([.. shown.Select(c => char.IsControl(c) ? '?' : c)]);
    }
}
