using BoundedWork.Diagnostics;
using BoundedWork.Diagnostics.Internal;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Adds the ThreadPool starvation sentinel to an app's services.</summary>
public static class StarvationSentinelServiceCollectionExtensions
{
    /// <summary>The name of the sentinel's health check.</summary>
    public const string HealthCheckName = "threadpool";

    /// <summary>
    /// Adds the starvation sentinel: a thread of its own that measures how long the shared ThreadPool takes to start a
    /// work item and, when the pool stays starved past <see cref="StarvationSentinelOptions.DiagnoseAfter"/>, samples
    /// the app's own stacks through the runtime's diagnostics port and writes one log event (and one OpenTelemetry
    /// event) that names the code holding the pool's threads, with the evidence and the advice, as <c>bw doctor</c>
    /// does. It also adds the health check <see cref="HealthCheckName"/> and <see cref="IThreadPoolDiagnosisSource"/>
    /// (the last diagnosis, which the admin console shows). Calling it again only adds <paramref name="configure"/>.
    /// </summary>
    /// <param name="services">The app's services.</param>
    /// <param name="configure">Optional settings.</param>
    /// <returns>The services, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> is <see langword="null"/>.</exception>
    /// <remarks>A setting out of range fails the host's start with a message that names it.</remarks>
    public static IServiceCollection AddStarvationSentinel(this IServiceCollection services, Action<StarvationSentinelOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        var options = services.AddOptions<StarvationSentinelOptions>();
        if (configure is not null)
        {
            options.Configure(configure);
        }

        if (services.Any(d => d.ServiceType == typeof(StarvationSentinel)))
        {
            return services;
        }

        options
            .Validate(o => o.ProbeInterval >= TimeSpan.FromMilliseconds(10) && o.ProbeInterval <= TimeSpan.FromMinutes(1), $"{nameof(StarvationSentinelOptions.ProbeInterval)} must be between 10 ms and 1 minute.")
            .Validate(o => o.StarvationThreshold > TimeSpan.Zero, $"{nameof(StarvationSentinelOptions.StarvationThreshold)} must be greater than zero.")
            .Validate(o => o.DiagnoseAfter >= o.ProbeInterval * 2, $"{nameof(StarvationSentinelOptions.DiagnoseAfter)} must be at least twice {nameof(StarvationSentinelOptions.ProbeInterval)} (the starved rule needs two readings).")
            .Validate(o => o.DiagnosisInterval >= TimeSpan.Zero, $"{nameof(StarvationSentinelOptions.DiagnosisInterval)} must not be negative.")
            .Validate(o => o.SampleDuration >= TimeSpan.FromMilliseconds(50) && o.SampleDuration <= TimeSpan.FromSeconds(10), $"{nameof(StarvationSentinelOptions.SampleDuration)} must be between 50 ms and 10 seconds.")
            .ValidateOnStart();
        services.AddLogging();
        services.TryAddSingleton(TimeProvider.System);
        services.AddSingleton<StarvationSentinel>();
        services.AddSingleton<IThreadPoolDiagnosisSource>(static provider => provider.GetRequiredService<StarvationSentinel>());
        services.AddSingleton<IHostedService>(static provider => provider.GetRequiredService<StarvationSentinel>());
        services.AddHealthChecks().Add(new HealthCheckRegistration(HealthCheckName, static provider => provider.GetRequiredService<StarvationSentinel>(), failureStatus: null, tags: null));
        return services;
    }
}
