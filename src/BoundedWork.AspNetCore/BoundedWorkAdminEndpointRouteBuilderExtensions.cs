using System.Diagnostics.CodeAnalysis;
using BoundedWork.AspNetCore;
using BoundedWork.AspNetCore.Internal;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps the BoundedWork operator console: JSON admin endpoints and a live dashboard page.</summary>
public static class BoundedWorkAdminEndpointRouteBuilderExtensions
{
    private static readonly string[] s_read = ["GET", "HEAD"];

    /// <summary>
    /// Maps the console under <paramref name="prefix"/>:
    /// <c>GET {prefix}/</c> (the dashboard page),
    /// <c>GET {prefix}/executors</c>, <c>GET {prefix}/executors/{name}</c>,
    /// <c>PUT {prefix}/executors/{name}/workers</c>, <c>PATCH {prefix}/executors/{name}</c> and
    /// <c>GET {prefix}/threadpool</c>; for durable queues' dead letters,
    /// <c>GET {prefix}/queues/{name}/dead-letters</c> (a page: <c>limit</c>, <c>since</c>, <c>until</c>, <c>cursor</c>),
    /// <c>GET {prefix}/queues/{name}/dead-letters/{id}</c>, <c>POST {prefix}/queues/{name}/dead-letters/{id}/requeue</c>,
    /// <c>DELETE {prefix}/queues/{name}/dead-letters/{id}</c>, and <c>POST {prefix}/queues/{name}/dead-letters/requeue</c>
    /// and <c>.../purge</c> with a selection; for durable queues' clusters, <c>GET {prefix}/queues/{name}/cluster</c> (nodes,
    /// limits and their use, stored items by state) and <c>PATCH {prefix}/queues/{name}/cluster</c> (the fleet-wide
    /// settings); <c>HEAD</c> wherever <c>GET</c> is. Any other method on these paths gets 405
    /// with an <c>Allow</c> header that lists exactly the methods above.
    /// </summary>
    /// <param name="endpoints">The app or route builder.</param>
    /// <param name="prefix">The route prefix of the console.</param>
    /// <returns>
    /// The console's endpoints as a group, to chain conventions (<c>RequireHost</c>, <c>RequireRateLimiting</c>,
    /// <c>RequireCors</c>, more <c>RequireAuthorization</c>) or <see cref="BoundedWorkAdminConventionBuilder.AllowAnonymousAdmin"/>.
    /// </returns>
    /// <remarks>
    /// <para>
    /// Secure by default: every endpoint requires the authorization policy named by
    /// <see cref="BoundedWorkAdminOptions.AuthorizationPolicy"/> (<c>BoundedWorkAdmin</c>), and the app fails to start,
    /// with a message naming the fix, while no such policy is registered. Anonymous callers get 401, authenticated
    /// callers the policy refuses get 403.
    /// </para>
    /// <para>
    /// Changes are never made by GET. A change must have a JSON content type (else 415) and carry the
    /// <see cref="BoundedWorkAdminOptions.RequestHeaderName"/> header (else 400), so neither a cross-site form post
    /// nor a simple cross-origin request can make one. Every change is logged (event 200; dead letters 206 and 207; a
    /// queue's fleet-wide settings 211) and
    /// counted (<c>boundedwork.admin.changes</c>, <c>boundedwork.admin.dead_letters</c>).
    /// </para>
    /// </remarks>
    /// <exception cref="ArgumentNullException"><paramref name="endpoints"/> or <paramref name="prefix"/> is <see langword="null"/>.</exception>
    /// <exception cref="InvalidOperationException">
    /// <c>services.AddBoundedWorkAdmin()</c> or <c>services.AddBoundedExecutor(...)</c> was not called.
    /// </exception>
    /// <exception cref="OptionsValidationException">A <see cref="BoundedWorkAdminOptions"/> setting is invalid; the message names it.</exception>
    public static BoundedWorkAdminConventionBuilder MapBoundedWorkAdmin(
        this IEndpointRouteBuilder endpoints,
        [StringSyntax("Route")] string prefix = "/bounded-work")
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        ArgumentNullException.ThrowIfNull(prefix);

        var services = endpoints.ServiceProvider;
        var mappings = services.GetService<AdminMappings>()
            ?? throw new InvalidOperationException(
                "MapBoundedWorkAdmin needs the console's services: call builder.Services.AddBoundedWorkAdmin() when you register services.");
        _ = services.GetService<IBoundedExecutorRegistry>()
            ?? throw new InvalidOperationException(
                "MapBoundedWorkAdmin needs the executor registry: register executors with builder.Services.AddBoundedExecutor(\"name\") when you register services.");

        var policy = services.GetRequiredService<IOptions<BoundedWorkAdminOptions>>().Value.AuthorizationPolicy;
        var mapping = new AdminMapping(prefix);
        var table = AdminRouteTable.Create(
            services.GetRequiredService<AdminApi>(),
            services.GetRequiredService<DeadLetterApi>(),
            services.GetRequiredService<ClusterApi>(),
            schedules: services.GetRequiredService<ScheduleApi>(),
            items: services.GetRequiredService<ItemApi>());
        var handlers = new AdminEndpoints(mapping);
        mappings.Add(mapping);

        var group = endpoints.MapGroup(prefix);
        ((IEndpointConventionBuilder)group).Add(endpoint =>
        {
            endpoint.Metadata.Add(mapping); // marks the console's endpoints (for its 401/403 answers)

            // Read when the endpoints are built, so AllowAnonymousAdmin() chained after this call counts.
            if (!mapping.AllowAnonymous)
            {
                endpoint.Metadata.Add(new AuthorizeAttribute(policy));
            }
        });

        MapRoute(group, "/", [(s_read, context => DashboardPage.Serve(context, prefix))]);
        var routes = table.For(AdminTransports.Http).ToList();
        foreach (var route in routes)
        {
            MapRoute(group, route.Pattern, [.. route.Operations.Select(o => (Methods(o), handlers.Handler(route, o)))]);

            // A route with a parameter where this one has a literal (dead-letters/{id} beside dead-letters/requeue) would
            // take its methods on this route's paths too: answer those here with this route's own 405 (a literal segment
            // outranks a parameter).
            var allow = route.Allow(AdminTransports.Http);
            var shadowing = routes.Where(route.IsShadowedBy).SelectMany(r => r.Methods(AdminTransports.Http)).Except(route.Methods(AdminTransports.Http)).ToArray();
            if (shadowing.Length > 0)
            {
                group.MapMethods(route.Pattern, shadowing, context => AdminEndpoints.MethodNotAllowed(context, allow));
            }
        }

        return new BoundedWorkAdminConventionBuilder(group, mapping);
    }

    /// <summary>
    /// Maps each handler for its methods, and behind them (a higher order, so only when none of those methods matches)
    /// one endpoint for every other method, standard or not, that answers 405 with exactly the methods mapped here.
    /// Routing's own 405 would list the methods of every endpoint on the path and send no problem body.
    /// </summary>
    private static void MapRoute(RouteGroupBuilder group, string pattern, IEnumerable<(string[] Methods, RequestDelegate Handler)> handlers)
    {
        var allowed = new List<string>();
        foreach (var (methods, handler) in handlers)
        {
            group.MapMethods(pattern, methods, handler);
            allowed.AddRange(methods);
        }

        var allow = string.Join(", ", allowed);
        group.Map(pattern, context => AdminEndpoints.MethodNotAllowed(context, allow)).WithOrder(1);
    }

    /// <summary>The methods Kestrel maps for an operation: <c>HEAD</c> with every <c>GET</c>.</summary>
    private static string[] Methods(AdminOperation operation) => operation.Method == "GET" ? s_read : [operation.Method];
}
