using BoundedWork.AspNetCore.Internal;

namespace Microsoft.AspNetCore.Builder;

/// <summary>
/// The endpoints of the BoundedWork operator console, returned by <c>MapBoundedWorkAdmin</c>. Conventions added here
/// (<c>RequireAuthorization</c>, <c>RequireHost</c>, <c>RequireRateLimiting</c>, <c>RequireCors</c>, ...) apply to
/// every console endpoint.
/// </summary>
public sealed class BoundedWorkAdminConventionBuilder : IEndpointConventionBuilder
{
    private readonly IEndpointConventionBuilder _group;
    private readonly AdminMapping _mapping;

    internal BoundedWorkAdminConventionBuilder(IEndpointConventionBuilder group, AdminMapping mapping)
    {
        _group = group;
        _mapping = mapping;
    }

    /// <summary>
    /// Lets anyone reach this console, including its state-changing endpoints, without the authorization policy
    /// (<see cref="BoundedWork.AspNetCore.BoundedWorkAdminOptions.AuthorizationPolicy"/>). Meant for local development:
    /// the app logs a warning at start-up (event 202, <c>AnonymousAdminAccess</c>) while this is on. The JSON
    /// content type and request header that protect against cross-site requests are still required, and a change is
    /// refused (403) unless its <c>Host</c> header names a loopback host (<c>localhost</c>, a name under
    /// <c>.localhost</c>, <c>127.0.0.1</c>, <c>[::1]</c>) and any <c>Origin</c> header is the console's own origin:
    /// otherwise a page of another site that points its own name at this machine (DNS rebinding) could make changes
    /// through the developer's browser. Reads are answered for any host.
    /// </summary>
    /// <returns>This builder, for chaining.</returns>
    public BoundedWorkAdminConventionBuilder AllowAnonymousAdmin()
    {
        _mapping.AllowAnonymous = true;
        return this;
    }

    /// <inheritdoc />
    public void Add(Action<EndpointBuilder> convention) => _group.Add(convention);

    /// <inheritdoc />
    public void Finally(Action<EndpointBuilder> finallyConvention) => _group.Finally(finallyConvention);
}
