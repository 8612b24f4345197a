using Microsoft.AspNetCore.Authorization;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Checks at start-up, before the server listens, that every console mapped in the app is protected (its
/// authorization policy exists) or explicitly anonymous (then warns); starts the sampler and stops it with the host.
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
            if (await provider.GetPolicyAsync(policy).ConfigureAwait(false) is null)
            {
                throw new InvalidOperationException(MissingPolicy(mapping.Prefix, policy, $"no authorization policy named '{policy}' is registered"));
            }
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
                services.GetRequiredService<BoundedWork.Hosting.IBoundedExecutorRegistry>(),
                path,
                logger,
                options.Value.LocalSocketLimits);
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

    private static string MissingPolicy(string prefix, string policy, string problem) =>
        $"The BoundedWork admin console at '{prefix}' requires the authorization policy '{policy}', but {problem}. " +
        $"Register it, for example: builder.Services.AddAuthorization(o => o.AddPolicy(\"{policy}\", p => p.RequireRole(\"ops\"))); " +
        "or, for local development only, allow anonymous access explicitly: app.MapBoundedWorkAdmin().AllowAnonymousAdmin().";
}
