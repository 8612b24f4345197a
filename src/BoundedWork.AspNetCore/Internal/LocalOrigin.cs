using System.Net;
using Microsoft.AspNetCore.Http;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>A change refused before it is read: why (the log's and the metric's reason) and what the caller is told.</summary>
internal readonly record struct OriginRefusal(string Reason, string Detail);

/// <summary>
/// What a console mapped with <c>AllowAnonymousAdmin()</c> requires of a change: a loopback host in the <c>Host</c>
/// header and, when the browser sends an <c>Origin</c>, the console's own origin. A page of another site that points its
/// own name at this machine (DNS rebinding) is same-origin to the browser, so its JSON requests with custom headers
/// pass the console's other checks; only the host it names gives it away. A page of another local origin (another dev
/// server) is caught by <c>Origin</c>. Clients that send no <c>Origin</c> (curl, scripts) only need the host.
/// </summary>
internal static class LocalOrigin
{
    public const string NotLoopbackHostReason = "not_loopback_host";
    public const string CrossOriginReason = "cross_origin";

    private const string Rule =
        "This console allows anonymous access (AllowAnonymousAdmin), so it accepts changes only for a loopback host (localhost, *.localhost, 127.0.0.1, [::1]) and, from a browser, only from its own origin";

    /// <summary>Says why a change may not be made, or <see langword="null"/> when it may.</summary>
    /// <param name="scheme">The request's scheme (<c>http</c> or <c>https</c>).</param>
    /// <param name="host">The <c>Host</c> header, with any port.</param>
    /// <param name="origin">The <c>Origin</c> header, if any.</param>
    public static OriginRefusal? Check(string scheme, string? host, string? origin)
    {
        var hostString = new HostString(host ?? string.Empty);
        if (!IsLoopbackHost(hostString.Host))
        {
            return new OriginRefusal(
                NotLoopbackHostReason,
                $"{Rule}; this request was for '{SettingsRequest.Shorten(host ?? string.Empty)}', as a page of another site pointed at this machine (DNS rebinding) would send. " +
                "Open the console as http://localhost:<port>/..., or protect it with an authorization policy instead of AllowAnonymousAdmin.");
        }

        if (origin is not null && !IsSameOrigin(origin, scheme, hostString))
        {
            return new OriginRefusal(
                CrossOriginReason,
                $"{Rule} ({scheme}://{hostString.Value}); this request came from '{SettingsRequest.Shorten(origin)}'. " +
                "Use the dashboard this app serves, or a client that sends no Origin header (curl, a script).");
        }

        return null;
    }

    /// <summary>
    /// Whether a host (no port; an IPv6 address in brackets) names this machine by a name no DNS answer can change:
    /// <c>localhost</c>, a name under <c>.localhost</c> (which browsers resolve to loopback themselves), or a loopback
    /// address. <c>localhost.</c> (fully qualified) is refused: it is looked up like any other name.
    /// </summary>
    public static bool IsLoopbackHost(string host)
    {
        if (host.Equals("localhost", StringComparison.OrdinalIgnoreCase)
            || (host.EndsWith(".localhost", StringComparison.OrdinalIgnoreCase) && host.Length > ".localhost".Length))
        {
            return true;
        }

        var address = host.StartsWith('[') && host.EndsWith(']') ? host[1..^1] : host;
        return address.Length > 0 && IPAddress.TryParse(address, out var ip) && IPAddress.IsLoopback(ip);
    }

    private static bool IsSameOrigin(string origin, string scheme, HostString host) =>
        Uri.TryCreate(origin, UriKind.Absolute, out var uri)
        && (uri.Scheme == Uri.UriSchemeHttp || uri.Scheme == Uri.UriSchemeHttps)
        && uri.AbsolutePath == "/"
        && string.Equals(uri.Scheme, scheme, StringComparison.OrdinalIgnoreCase)
        && string.Equals(uri.Host, host.Host, StringComparison.OrdinalIgnoreCase)
        && uri.Port == (host.Port ?? (string.Equals(scheme, Uri.UriSchemeHttps, StringComparison.OrdinalIgnoreCase) ? 443 : 80));
}
