using System.Security.Cryptography;
using System.Text.Encodings.Web;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Serves the dashboard: one self-contained HTML page (an embedded resource, no external scripts), with the
/// console's base path and local socket path filled in and its inline script and style allowed by a per-response
/// nonce.
/// </summary>
internal static class DashboardPage
{
    private static readonly Lazy<string> s_template = new(Load);

    /// <param name="context">The request.</param>
    /// <param name="prefix">The console's route prefix.</param>
    /// <param name="signedIn">
    /// <see langword="false"/> when the page is the body of a bearer scheme's 401 to a browser: the page holds no data
    /// (and here not even the local socket's path); it asks for a token and sends it with its own requests.
    /// </param>
    public static Task Serve(HttpContext context, string prefix, bool signedIn = true)
    {
        var nonce = Convert.ToBase64String(RandomNumberGenerator.GetBytes(16));
        var basePath = (context.Request.PathBase + new PathString(prefix.TrimEnd('/'))).ToString();
        var localSocket = signedIn ? context.RequestServices.GetRequiredService<IOptions<BoundedWorkAdminOptions>>().Value.LocalSocketPath : null;
        var html = s_template.Value
            .Replace("__NONCE__", nonce, StringComparison.Ordinal)
            .Replace("\"__BASE_PATH__\"", JavaScriptString(basePath), StringComparison.Ordinal)
            .Replace("\"__LOCAL_SOCKET__\"", string.IsNullOrEmpty(localSocket) ? "null" : JavaScriptString(localSocket), StringComparison.Ordinal);

        var headers = context.Response.Headers;
        headers.ContentSecurityPolicy =
            $"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
        headers.CacheControl = "no-store";
        headers.XContentTypeOptions = "nosniff";
        context.Response.ContentType = "text/html; charset=utf-8";
        return context.Response.WriteAsync(html, context.RequestAborted);
    }

    /// <summary>A JavaScript string literal of <paramref name="value"/>, safe inside an inline script.</summary>
    private static string JavaScriptString(string value) => "\"" + JavaScriptEncoder.Default.Encode(value) + "\"";

    private static string Load()
    {
        using var stream = typeof(DashboardPage).Assembly.GetManifestResourceStream("BoundedWork.AspNetCore.dashboard.html")
            ?? throw new InvalidOperationException("The dashboard page is missing from the BoundedWork.AspNetCore assembly.");
        using var reader = new StreamReader(stream);
        return reader.ReadToEnd();
    }
}
