using System.Globalization;
using System.Text;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The head of one HTTP/1.1 request read from the local socket, parsed strictly: a request line, then header lines,
/// each ended by CRLF or a bare LF (RFC 9112 §2.2 lets a recipient accept one), then an empty line. A header without a
/// name and colon, whitespace before the colon, a folded line, a bare CR, more than one <c>Content-Length</c>, or a
/// <c>Transfer-Encoding</c> is refused, as a server must.
/// </summary>
internal sealed class LocalSocketRequest
{
    private LocalSocketRequest(string method, string target, string? contentType, string? adminHeader, long contentLength, string? duplicateHeader)
    {
        Method = method;
        Target = target;
        ContentType = contentType;
        AdminHeader = adminHeader;
        ContentLength = contentLength;
        DuplicateHeader = duplicateHeader;
    }

    public string Method { get; }

    public string Target { get; }

    public string? ContentType { get; }

    public string? AdminHeader { get; }

    public long ContentLength { get; }

    /// <summary>Gets the first of <c>Content-Type</c> and the console's request header that came more than once, or <see langword="null"/>.</summary>
    public string? DuplicateHeader { get; }

    /// <summary>
    /// Finds the end of the head in what has arrived: the index just past the empty line, or -1 while it has not
    /// arrived yet.
    /// </summary>
    public static int FindHeadEnd(ReadOnlySpan<byte> received)
    {
        for (var i = received.IndexOf((byte)'\n'); i >= 0 && i < received.Length - 1;)
        {
            var rest = received[(i + 1)..];
            if (rest[0] == '\n')
            {
                return i + 2;
            }

            if (rest[0] == '\r' && rest.Length > 1 && rest[1] == '\n')
            {
                return i + 3;
            }

            var next = rest.IndexOf((byte)'\n');
            i = next < 0 ? -1 : i + 1 + next;
        }

        return -1;
    }

    /// <summary>Parses a complete head (up to <see cref="FindHeadEnd"/>), or says why it is refused.</summary>
    public static LocalSocketRequest? Parse(ReadOnlySpan<byte> head, out string? error)
    {
        var lines = Encoding.Latin1.GetString(head).Split('\n');
        for (var i = 0; i < lines.Length; i++)
        {
            lines[i] = lines[i].EndsWith('\r') ? lines[i][..^1] : lines[i];
            if (lines[i].Contains('\r', StringComparison.Ordinal))
            {
                error = "A line of the request holds a bare CR; end lines with CRLF.";
                return null;
            }
        }

        var requestLine = lines[0].Split(' ');
        if (requestLine.Length != 3 || requestLine[0].Length == 0 || !requestLine[2].StartsWith("HTTP/1.", StringComparison.Ordinal))
        {
            error = "Send an HTTP/1.1 request.";
            return null;
        }

        string? contentType = null, adminHeader = null, duplicateHeader = null;
        long? contentLength = null;
        foreach (var line in lines.AsSpan(1))
        {
            if (line.Length == 0)
            {
                continue; // the empty line that ends the head
            }

            var colon = line.IndexOf(':', StringComparison.Ordinal);
            if (colon <= 0 || char.IsWhiteSpace(line[0]) || char.IsWhiteSpace(line[colon - 1]))
            {
                error = $"Malformed header line '{Printable(line)}': send 'Name: value', without folding.";
                return null;
            }

            var name = line[..colon];
            var value = line[(colon + 1)..].Trim(' ', '\t');
            if (name.Equals("Content-Length", StringComparison.OrdinalIgnoreCase))
            {
                if (contentLength is not null)
                {
                    error = "The request has more than one Content-Length header.";
                    return null;
                }

                if (!long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out var length))
                {
                    error = "Content-Length is not a number.";
                    return null;
                }

                contentLength = length;
            }
            else if (name.Equals("Transfer-Encoding", StringComparison.OrdinalIgnoreCase))
            {
                error = "Send the body with a Content-Length, not chunked.";
                return null;
            }
            else if (name.Equals("Content-Type", StringComparison.OrdinalIgnoreCase))
            {
                duplicateHeader ??= contentType is null ? null : "Content-Type";
                contentType = value;
            }
            else if (name.Equals(BoundedWorkAdminOptions.RequestHeaderName, StringComparison.OrdinalIgnoreCase))
            {
                duplicateHeader ??= adminHeader is null ? null : BoundedWorkAdminOptions.RequestHeaderName;
                adminHeader = value;
            }
        }

        error = null;
        return new LocalSocketRequest(requestLine[0], requestLine[1], contentType, adminHeader, contentLength ?? 0, duplicateHeader);
    }

    private static string Printable(string line)
    {
        var shown = line.Length > 40 ? line[..40] + "..." : line;
        return string.Create(shown.Length, shown, static (span, text) =>
        {
            for (var i = 0; i < text.Length; i++)
            {
                span[i] = char.IsControl(text[i]) || text[i] > '~' ? '?' : text[i];
            }
        });
    }
}
