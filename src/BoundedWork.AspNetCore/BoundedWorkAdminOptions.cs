namespace BoundedWork.AspNetCore;

/// <summary>Settings of the BoundedWork operator console, set with <c>services.AddBoundedWorkAdmin(o => ...)</c>.</summary>
public sealed class BoundedWorkAdminOptions
{
    /// <summary>The name of the authorization policy the console requires unless the app opts out.</summary>
    public const string DefaultPolicyName = "BoundedWorkAdmin";

    /// <summary>
    /// The request header every state-changing request must carry (with any non-empty value), beside a JSON
    /// content type. Browsers never add a custom header to a cross-site form post or a simple cross-origin request,
    /// so a page on another site cannot change an executor through a signed-in operator's browser.
    /// </summary>
    public const string RequestHeaderName = "X-BoundedWork-Admin";

    /// <summary>
    /// Gets or sets the name of the authorization policy every console endpoint requires. Register a policy of that
    /// name with <c>services.AddAuthorization(o => o.AddPolicy(...))</c>; start-up fails with a message naming it
    /// when none is registered, unless the console is mapped with
    /// <see cref="Microsoft.AspNetCore.Builder.BoundedWorkAdminConventionBuilder.AllowAnonymousAdmin"/>.
    /// </summary>
    /// <value>Defaults to <see cref="DefaultPolicyName"/> (<c>BoundedWorkAdmin</c>).</value>
    public string AuthorizationPolicy { get; set; } = DefaultPolicyName;

    /// <summary>
    /// Gets or sets how much history the console keeps per executor and for the ThreadPool, sampled once per
    /// second: the dashboard's queue-depth charts span it, and rates are computed over its last minute.
    /// </summary>
    /// <value>Defaults to 5 minutes. Must be between 1 minute and 1 hour.</value>
    public TimeSpan History { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// Gets or sets the path of a Unix domain socket on which the console's JSON API (not the dashboard) is also
    /// served, by a dedicated thread with blocking socket calls, so operators can read and resize executors while the
    /// shared ThreadPool is starved and Kestrel cannot answer:
    /// <c>curl --unix-socket /run/myapp/bounded-work.sock http://localhost/executors</c>. The socket file is created
    /// readable and writable by the app's user only; whoever can open it is allowed in (the app's authorization
    /// policy does not apply), and changes still need a JSON content type and the
    /// <see cref="RequestHeaderName"/> header. Start-up fails, naming the path, when its folder does not exist, when
    /// another process listens on it, or when anything but a stale socket is there (a file, a directory or a link is
    /// never replaced). Each connection is served by a thread of its own, at most 16 at once (more get 503 at once),
    /// and its one request must arrive and be answered within 5 seconds of connecting. At stop, open connections are
    /// closed, and the socket file is deleted if it is still the one the app created.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: no socket.</value>
    public string? LocalSocketPath { get; set; }

    /// <summary>Gets or sets the local socket's limits (connections at once, the whole-request deadline).</summary>
    internal BoundedWork.AspNetCore.Internal.LocalSocketLimits LocalSocketLimits { get; set; } = BoundedWork.AspNetCore.Internal.LocalSocketLimits.Default;

    /// <summary>Gets or sets a value indicating whether the socket goes to the per-process path when <see cref="LocalSocketPath"/> is unset.</summary>
    internal bool DiagnosticsSocket { get; set; }
}
