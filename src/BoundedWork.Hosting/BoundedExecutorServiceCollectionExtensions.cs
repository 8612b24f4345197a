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
    /// singleton <see cref="BoundedExecutor"/> resolvable with <c>[FromKeyedServices("name")]</c> (the key matched
    /// ignoring case, as the registry does), an entry in
    /// <see cref="IBoundedExecutorRegistry"/>, and the shared hosted service that starts executors with the host,
    /// reconfigures them when configuration reloads and shuts them down when the host stops.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="name">
    /// The executor's name: the options name, the service key, the registry key and the
    /// <c>boundedwork.executor</c> tag of its metrics. It overrides <see cref="BoundedExecutorOptions.Name"/>.
    /// </param>
    /// <param name="configure">Optional settings applied before any configuration bound through the returned builder.</param>
    /// <returns>
    /// The options builder, to chain <c>.BindConfiguration("BoundedWork:Executors:name")</c> (which reports every value
    /// configuration cannot convert: see <see cref="BoundedExecutorOptionsBuilderExtensions"/>), <c>.Configure(...)</c>
    /// or <c>.Validate(...)</c>. <c>.ValidateOnStart()</c> is already applied.
    /// </returns>
    /// <remarks>
    /// <para>
    /// A configuration reload applies every runtime setting (<see cref="BoundedExecutorOptions.WorkerCount"/>,
    /// <see cref="BoundedExecutorOptions.QueueCapacity"/>, <see cref="BoundedExecutorOptions.RejectionPolicy"/>,
    /// <see cref="BoundedExecutorOptions.WaitTimeout"/>, <see cref="BoundedExecutorOptions.SlowItemThreshold"/>,
    /// <see cref="BoundedExecutorOptions.QueueWaitThreshold"/>) in one <see cref="BoundedExecutor.Reconfigure(Func{BoundedExecutorSettings, BoundedExecutorSettings})"/> call,
    /// but only the settings whose configured value changed since the last applied configuration, so a reload never
    /// undoes a runtime change made to another setting. <see cref="BoundedExecutorOptions.MaxWorkerCount"/>,
    /// <see cref="BoundedExecutorOptions.FlowExecutionContext"/> and <see cref="BoundedExecutorOptions.DisposeTimeout"/>
    /// are fixed for the executor's lifetime: a reload that changes them logs a warning that a restart is needed.
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
        RejectionPolicyConverter.Register();
        services.AddOptions();
        services.TryAddSingleton<BoundedExecutorRegistry>();
        services.TryAddSingleton<IBoundedExecutorRegistry>(static provider => provider.GetRequiredService<BoundedExecutorRegistry>());
        services.TryAddSingleton<LastGoodOptionsStore>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IPostConfigureOptions<BoundedExecutorOptions>, BoundedExecutorOptionsSetup>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<BoundedExecutorOptions>, BoundedExecutorOptionsValidator>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, BoundedExecutorHostedService>());

        // Keyed injection matches names as the registry does, ignoring case: one registration answers every key and
        // resolves it through the registry, so [FromKeyedServices("Payments")] gets the executor named "payments".
        // An unknown name resolves to null, which GetRequiredKeyedService reports as "no service registered".
        if (!services.Any(static descriptor => descriptor.ServiceType == typeof(BoundedExecutor) && Equals(descriptor.ServiceKey, KeyedService.AnyKey)))
        {
            services.AddKeyedSingleton(typeof(BoundedExecutor), KeyedService.AnyKey, static (provider, key) =>
                key is string name && provider.GetRequiredService<BoundedExecutorRegistry>().TryGetExecutor(name, out var executor) ? executor : null!);
        }
    }
}
