using BoundedWork.AspNetCore;
using BoundedWork.AspNetCore.Internal;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers the services of the BoundedWork operator console.</summary>
public static class BoundedWorkAdminServiceCollectionExtensions
{
    /// <summary>
    /// Adds the services the console's endpoints need (<c>app.MapBoundedWorkAdmin()</c>): a sampler on a dedicated
    /// thread that records queue depth and outcome rates once per second and probes the shared ThreadPool, the
    /// change log and metric (meter <c>BoundedWork.Admin</c>), and a start-up check that the console's
    /// authorization policy exists; and, when <see cref="BoundedWorkAdminOptions.LocalSocketPath"/> is set, the local
    /// socket that answers while the ThreadPool is starved. Calling it again only applies <paramref name="configure"/> too.
    /// The options are validated when the console is mapped and at host start
    /// (<see cref="OptionsValidationException"/>, naming each bad setting).
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">Optional settings: the authorization policy's name, the history kept, the local socket.</param>
    /// <returns>The service collection, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> is <see langword="null"/>.</exception>
    /// <remarks>
    /// Register the executors themselves with <c>AddBoundedExecutor</c>. The console answers 401 and 403 with problem
    /// details by wrapping the app's <c>IAuthorizationMiddlewareResultHandler</c>: register a handler of your own before
    /// this call and the console wraps it too (after it, yours answers the console's refusals as it likes).
    /// </remarks>
    public static IServiceCollection AddBoundedWorkAdmin(this IServiceCollection services, Action<BoundedWorkAdminOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        services.AddMetrics();
        services.AddOptions<BoundedWorkAdminOptions>().ValidateOnStart();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<BoundedWorkAdminOptions>, AdminOptionsValidator>());
        if (configure is not null)
        {
            services.Configure(configure);
        }

        services.TryAddSingleton<AdminMappings>();
        services.TryAddSingleton<AdminSampler>();
        services.TryAddSingleton<AdminMetrics>();
        services.TryAddSingleton(static provider => new AdminApi(
            provider.GetRequiredService<BoundedWork.Hosting.IBoundedExecutorRegistry>(),
            provider.GetServices<BoundedWork.Hosting.IWorkQueueStorage>(),
            provider.GetRequiredService<AdminSampler>(),
            provider.GetRequiredService<AdminMetrics>(),
            provider.GetRequiredService<Microsoft.Extensions.Logging.ILoggerFactory>().CreateLogger(AdminLog.Category),
            provider.GetServices<BoundedWork.Hosting.IDeadLetterStore>(),
            provider.GetServices<BoundedWork.Hosting.IWorkQueueCluster>(),
            provider.GetServices<BoundedWork.Hosting.IStoredItemSearch>()));
        services.TryAddSingleton(static provider => new DeadLetterApi(
            provider.GetServices<BoundedWork.Hosting.IDeadLetterStore>(),
            provider.GetRequiredService<AdminMetrics>(),
            provider.GetRequiredService<Microsoft.Extensions.Logging.ILoggerFactory>().CreateLogger(AdminLog.Category)));
        services.TryAddSingleton(static provider => new ItemApi(
            provider.GetServices<BoundedWork.Hosting.IStoredItemSearch>(),
            provider.GetRequiredService<AdminMetrics>(),
            provider.GetRequiredService<Microsoft.Extensions.Logging.ILoggerFactory>().CreateLogger(AdminLog.Category)));
        services.TryAddSingleton(static provider => new ClusterApi(
            provider.GetServices<BoundedWork.Hosting.IWorkQueueCluster>(),
            provider.GetRequiredService<AdminMetrics>(),
            provider.GetRequiredService<Microsoft.Extensions.Logging.ILoggerFactory>().CreateLogger(AdminLog.Category),
            provider.GetServices<BoundedWork.Hosting.IWorkQueuePauseControl>()));
        services.TryAddSingleton(static provider => new ScheduleApi(
            provider.GetService<BoundedWork.Hosting.IRecurringSchedules>(),
            provider.GetRequiredService<Microsoft.Extensions.Logging.ILoggerFactory>().CreateLogger(AdminLog.Category),
            new DurableScheduleApi(
                provider.GetService<BoundedWork.Hosting.IDurableSchedules>(),
                provider.GetRequiredService<Microsoft.Extensions.Logging.ILoggerFactory>().CreateLogger(AdminLog.Category))));
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, AdminHostedService>());
        AdminAuthorizationResultHandler.Register(services);
        return services;
    }

    /// <summary>
    /// Serves the console's JSON API on a Unix domain socket at a per-process path, for the <c>bw</c> incident tool
    /// (<c>dotnet tool install -g BoundedWork.Cli</c>) and <c>curl --unix-socket</c>: it answers on dedicated threads
    /// while the shared ThreadPool is starved and Kestrel cannot. The socket is
    /// <c>$TMPDIR/boundedwork-{uid}/{pid}.sock</c> (<c>/tmp</c> when <c>TMPDIR</c> is unset; <c>{pid}-{n}.sock</c> for a
    /// further host in the same process; <c>%TEMP%\boundedwork</c> on Windows), in a folder created readable by the
    /// app's user only; the socket file is the user's only too, and is deleted when the host stops. Start-up fails with
    /// a message naming the folder when it is not private to the user. Calls <see cref="AddBoundedWorkAdmin"/> (no
    /// HTTP endpoint is mapped unless the app also calls <c>MapBoundedWorkAdmin</c>); an explicit
    /// <see cref="BoundedWorkAdminOptions.LocalSocketPath"/> takes precedence over the per-process path.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <returns>The service collection, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddBoundedWorkDiagnosticsSocket(this IServiceCollection services)
    {
        ArgumentNullException.ThrowIfNull(services);
        return services.AddBoundedWorkAdmin(static o => o.DiagnosticsSocket = true);
    }
}
