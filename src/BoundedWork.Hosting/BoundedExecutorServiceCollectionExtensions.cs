using BoundedWork;
using BoundedWork.Hosting;
using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers named <see cref="BoundedExecutor"/> instances with dependency injection.</summary>
public static class BoundedExecutorServiceCollectionExtensions
{
    /// <summary>
    /// Registers a named executor: its options (named <paramref name="name"/>, validated at host start), a keyed
    /// singleton <see cref="BoundedExecutor"/> resolvable with <c>[FromKeyedServices("name")]</c>, an entry in
    /// <see cref="IBoundedExecutorRegistry"/>, and the shared hosted service that starts executors with the host,
    /// resizes them when configuration reloads and shuts them down when the host stops.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="name">
    /// The executor's name: the options name, the service key, the registry key and the
    /// <c>boundedwork.executor</c> tag of its metrics. It overrides <see cref="BoundedExecutorOptions.Name"/>.
    /// </param>
    /// <param name="configure">Optional settings applied before any configuration bound through the returned builder.</param>
    /// <returns>
    /// The options builder, to chain <c>.BindConfiguration("BoundedWork:Executors:name")</c>, <c>.Configure(...)</c>
    /// or <c>.Validate(...)</c>. <c>.ValidateOnStart()</c> is already applied.
    /// </returns>
    /// <remarks>
    /// <para>
    /// Only <see cref="BoundedExecutorOptions.WorkerCount"/> follows a configuration reload (through
    /// <see cref="BoundedExecutor.Resize(int)"/>), and only when the configured value changes, so a reload of an
    /// unrelated key never undoes a resize made at runtime. The other settings (<see cref="BoundedExecutorOptions.QueueCapacity"/>,
    /// <see cref="BoundedExecutorOptions.MaxWorkerCount"/>, <see cref="BoundedExecutorOptions.RejectionPolicy"/>,
    /// <see cref="BoundedExecutorOptions.WaitTimeout"/>, <see cref="BoundedExecutorOptions.FlowExecutionContext"/>)
    /// are fixed for the executor's lifetime: a reload that changes them logs a warning that a restart is needed,
    /// and the executor keeps running with its original values.
    /// </para>
    /// <para>
    /// An invalid reload (a setting out of range, or a value configuration cannot convert) is logged as a warning
    /// and ignored: the options keep their last valid values until a valid reload arrives.
    /// </para>
    /// <para>
    /// <see cref="BoundedExecutorOptions.OnError"/> and <see cref="BoundedExecutorOptions.OnRejected"/> set here
    /// still run; the package logs the event first. Unless set, <see cref="BoundedExecutorOptions.MeterFactory"/>
    /// is the host's <see cref="System.Diagnostics.Metrics.IMeterFactory"/>.
    /// </para>
    /// </remarks>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="name"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="name"/> is empty or white space.</exception>
    /// <exception cref="InvalidOperationException">An executor with the same name (ignoring case) is already registered.</exception>
    public static OptionsBuilder<BoundedExecutorOptions> AddBoundedExecutor(
        this IServiceCollection services,
        string name,
        Action<BoundedExecutorOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);

        foreach (var descriptor in services)
        {
            if (descriptor.ServiceType == typeof(BoundedExecutorRegistration)
                && descriptor.ImplementationInstance is BoundedExecutorRegistration existing
                && string.Equals(existing.Name, name, StringComparison.OrdinalIgnoreCase))
            {
                throw new InvalidOperationException(
                    $"A bounded executor named '{existing.Name}' is already registered; executor names must be unique (ignoring case), so '{name}' cannot be added again.");
            }
        }

        AddBoundedExecutorCore(services);
        services.AddSingleton(new BoundedExecutorRegistration(name));
        services.AddKeyedSingleton(name, static (provider, key) =>
            provider.GetRequiredService<BoundedExecutorRegistry>().GetExecutor((string)key!));

        var builder = services.AddOptions<BoundedExecutorOptions>(name).ValidateOnStart();
        if (configure is not null)
        {
            builder.Configure(configure);
        }

        return builder;
    }

    /// <summary>The shared registrations; every call after the first changes nothing.</summary>
    internal static void AddBoundedExecutorCore(IServiceCollection services)
    {
        services.AddOptions();
        services.TryAddSingleton<BoundedExecutorRegistry>();
        services.TryAddSingleton<IBoundedExecutorRegistry>(static provider => provider.GetRequiredService<BoundedExecutorRegistry>());
        services.TryAddSingleton<LastGoodOptionsStore>();
        services.TryAddTransient<IOptionsFactory<BoundedExecutorOptions>, LastGoodOptionsFactory>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IPostConfigureOptions<BoundedExecutorOptions>, BoundedExecutorOptionsSetup>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<BoundedExecutorOptions>, BoundedExecutorOptionsValidator>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, BoundedExecutorHostedService>());
    }
}
