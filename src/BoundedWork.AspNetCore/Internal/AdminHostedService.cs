using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authorization;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Checks at start-up, before the server listens, that every console mapped in the app is protected (its
/// authorization policy exists, and a refusal can be answered with 401 or 403: an authentication scheme to challenge
/// and forbid with) or explicitly anonymous (then warns); starts the sampler and stops it with the host.
/// </summary>
internal sealed class AdminHostedService(
    AdminMappings mappings,
    IOptions<BoundedWorkAdminOptions> options,
    IServiceProvider services,
    ILoggerFactory loggerFactory) : IHostedLifecycleService, IDisposable
{
    private LocalSocketListener? _socket;
    private AdminSampler? _sampler;

    public async Task StartingAsync(CancellationToken cancellationToken)
    {
        var logger = loggerFactory.CreateLogger(AdminLog.Category);
        var policy = options.Value.AuthorizationPolicy;
        foreach (var mapping in mappings.All)
        {
            if (mapping.AllowAnonymous)
            {
                logger.AnonymousAdminAccess(mapping.Prefix);
                continue;
            }

            var provider = services.GetService<IAuthorizationPolicyProvider>()
                ?? throw new InvalidOperationException(MissingPolicy(mapping.Prefix, policy, "no authorization services are registered"));
            var authorizationPolicy = await provider.GetPolicyAsync(policy).ConfigureAwait(false)
                ?? throw new InvalidOperationException(MissingPolicy(mapping.Prefix, policy, $"no authorization policy named '{policy}' is registered"));
            await CheckAuthenticationAsync(mapping.Prefix, policy, authorizationPolicy).ConfigureAwait(false);
        }

        if (services.GetService<BoundedWork.Hosting.IBoundedExecutorRegistry>() is null)
        {
            throw new InvalidOperationException(
                "The BoundedWork admin console (AddBoundedWorkAdmin) has no executors to show: register them with builder.Services.AddBoundedExecutor(\"name\").");
        }

        _sampler = services.GetRequiredService<AdminSampler>();
        _sampler.Start();
        var path = options.Value.LocalSocketPath is { Length: > 0 } configured ? configured
            : options.Value.DiagnosticsSocket ? DiagnosticsSocketPath.Allocate()
            : null;
        if (path is not null)
        {
            _socket = new LocalSocketListener(
                services.GetRequiredService<AdminApi>(),
                services.GetRequiredService<DeadLetterApi>(),
                services.GetRequiredService<BoundedWork.Hosting.IBoundedExecutorRegistry>(),
                path,
                logger,
                options.Value.LocalSocketLimits,
                services.GetRequiredService<ClusterApi>(),
                services.GetRequiredService<ScheduleApi>(),
                services.GetRequiredService<ItemApi>());
        }
    }

    public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StartedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppedAsync(CancellationToken cancellationToken)
    {
        Dispose();
        return Task.CompletedTask;
    }

    public void Dispose()
    {
        Interlocked.Exchange(ref _socket, null)?.Dispose();
        _sampler?.Stop();
    }

    /// <summary>
    /// Checks that a refusal can be answered: the authorization middleware challenges (401) or forbids (403) with the
    /// policy's own schemes, else with the default ones, and throws "No authenticationScheme was specified" on every
    /// request when there are none.
    /// </summary>
    private async Task CheckAuthenticationAsync(string prefix, string policyName, AuthorizationPolicy policy)
    {
        var schemes = services.GetService<IAuthenticationSchemeProvider>()
            ?? throw new InvalidOperationException(MissingScheme(prefix, policyName, "no authentication services are registered", []));
        var registered = (await schemes.GetAllSchemesAsync().ConfigureAwait(false)).Select(static scheme => scheme.Name).ToList();
        if (policy.AuthenticationSchemes.Count > 0)
        {
            foreach (var name in policy.AuthenticationSchemes)
            {
                if (await schemes.GetSchemeAsync(name).ConfigureAwait(false) is null)
                {
                    throw new InvalidOperationException(MissingScheme(prefix, policyName, $"the policy names the authentication scheme '{name}', which is not registered", registered));
                }
            }

            return;
        }

        if (await schemes.GetDefaultChallengeSchemeAsync().ConfigureAwait(false) is null
            || await schemes.GetDefaultForbidSchemeAsync().ConfigureAwait(false) is null)
        {
            throw new InvalidOperationException(MissingScheme(prefix, policyName, "no default authentication scheme is set and the policy names none", registered));
        }
    }

    private static string MissingScheme(string prefix, string policy, string problem, List<string> registered) =>
        $"The BoundedWork admin console at '{prefix}' requires the authorization policy '{policy}', but {problem}, so every refused request " +
        "would fail with 500 instead of 401 or 403 (\"No authenticationScheme was specified\"). " +
        "Name the scheme that signs operators in when you add authentication, for example: builder.Services.AddAuthentication(\"Cookies\").AddCookie(\"Cookies\"); " +
        $"or list it in the policy: o.AddPolicy(\"{policy}\", p => p.AddAuthenticationSchemes(\"Cookies\").RequireRole(\"ops\")). " +
        (registered.Count == 0 ? "No authentication scheme is registered." : $"Registered schemes: {string.Join(", ", registered.Select(static name => $"'{name}'"))}.");

    private static string MissingPolicy(string prefix, string policy, string problem) =>
        $"The BoundedWork admin console at '{prefix}' requires the authorization policy '{policy}', but {problem}. " +
        $"Register it, for example: builder.Services.AddAuthorization(o => o.AddPolicy(\"{policy}\", p => p.RequireRole(\"ops\"))); " +
        "or, for local development only, allow anonymous access explicitly: app.MapBoundedWorkAdmin().AllowAnonymousAdmin().";
}
