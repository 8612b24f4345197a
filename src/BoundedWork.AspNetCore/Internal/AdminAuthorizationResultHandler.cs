using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Authorization.Policy;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Gives the console's 401 and 403 answers a problem details body. The app's own result handler (ASP.NET Core's
/// default unless the app registered one before <c>AddBoundedWorkAdmin</c>) still decides and challenges or forbids
/// as usual (a <c>WWW-Authenticate</c> header, a cookie scheme's redirect to its login page); only when that left a
/// console endpoint's response a 401 or 403 with nothing written yet is the body added. Other endpoints are untouched.
/// </summary>
internal sealed class AdminAuthorizationResultHandler(IAuthorizationMiddlewareResultHandler inner, IOptions<BoundedWorkAdminOptions> options)
    : IAuthorizationMiddlewareResultHandler
{
    public async Task HandleAsync(RequestDelegate next, HttpContext context, AuthorizationPolicy policy, PolicyAuthorizationResult authorizeResult)
    {
        await inner.HandleAsync(next, context, policy, authorizeResult).ConfigureAwait(false);
        if ((authorizeResult.Challenged || authorizeResult.Forbidden)
            && context.GetEndpoint()?.Metadata.GetMetadata<AdminMapping>() is { } mapping
            && !context.Response.HasStarted
            && context.Response.StatusCode is StatusCodes.Status401Unauthorized or StatusCodes.Status403Forbidden)
        {
            if (IsBearerChallengeToTheDashboard(context, mapping))
            {
                // A browser opened the dashboard of an app that signs in with bearer tokens only: it cannot send one
                // by itself, so the 401's body is the page, with no data, which asks for a token and sends it.
                await DashboardPage.Serve(context, mapping.Prefix, signedIn: false).ConfigureAwait(false);
                return;
            }

            var requirement = mapping.AllowAnonymous ? "the app's authorization policy" : $"the authorization policy '{options.Value.AuthorizationPolicy}'";
            await AdminEndpoints.Write(context, context.Response.StatusCode == StatusCodes.Status401Unauthorized
                ? AdminReply.Problem(401, "Unauthorized", $"The BoundedWork admin console requires {requirement}: sign in as an operator and try again.")
                : AdminReply.Problem(403, "Forbidden", $"You are signed in, but {requirement} of the BoundedWork admin console does not allow you.")).ConfigureAwait(false);
        }
    }

    private static bool IsBearerChallengeToTheDashboard(HttpContext context, AdminMapping mapping) =>
        context.Response.StatusCode == StatusCodes.Status401Unauthorized
        && HttpMethods.IsGet(context.Request.Method)
        && string.Equals(context.Request.Path.Value?.TrimEnd('/'), mapping.Prefix.TrimEnd('/'), StringComparison.OrdinalIgnoreCase)
        && context.Request.Headers.Accept.ToString().Contains("text/html", StringComparison.OrdinalIgnoreCase)
        && context.Response.Headers.WWWAuthenticate.ToString().StartsWith("Bearer", StringComparison.OrdinalIgnoreCase);

    /// <summary>
    /// Wraps the result handler registered so far, keeping its lifetime, or ASP.NET Core's default one; registered
    /// once however often <c>AddBoundedWorkAdmin</c> is called. A handler the app registers later replaces this one.
    /// </summary>
    public static void Register(IServiceCollection services)
    {
        if (services.Any(static d => d.ServiceType == typeof(RegistrationMarker)))
        {
            return;
        }

        services.AddSingleton<RegistrationMarker>();
        var existing = services.LastOrDefault(static d => d.ServiceType == typeof(IAuthorizationMiddlewareResultHandler) && !d.IsKeyedService);
        if (existing is null)
        {
            services.AddSingleton<IAuthorizationMiddlewareResultHandler>(static provider => new AdminAuthorizationResultHandler(
                new AuthorizationMiddlewareResultHandler(), provider.GetRequiredService<IOptions<BoundedWorkAdminOptions>>()));
            return;
        }

        services.Remove(existing);
        services.Add(new ServiceDescriptor(
            typeof(IAuthorizationMiddlewareResultHandler),
            provider => new AdminAuthorizationResultHandler(Create(provider, existing), provider.GetRequiredService<IOptions<BoundedWorkAdminOptions>>()),
            existing.Lifetime));
    }

    /// <summary>Says the wrapper is registered, so a second <c>AddBoundedWorkAdmin</c> does not wrap it again.</summary>
    private sealed class RegistrationMarker;

    private static IAuthorizationMiddlewareResultHandler Create(IServiceProvider provider, ServiceDescriptor descriptor) =>
        (IAuthorizationMiddlewareResultHandler)(descriptor.ImplementationInstance
            ?? descriptor.ImplementationFactory?.Invoke(provider)
            ?? ActivatorUtilities.CreateInstance(provider, descriptor.ImplementationType!));
}
