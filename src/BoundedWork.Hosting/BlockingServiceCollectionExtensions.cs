using BoundedWork;
using BoundedWork.Synchronous;
using BoundedWork.Hosting.Internal;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers blocking (legacy synchronous) services bound to a named executor.</summary>
public static class BlockingServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="BlockingService{TService}"/>: the registered <typeparamref name="TService"/> bound to the
    /// executor registered as <paramref name="executorName"/> with <c>AddBoundedExecutor</c>, so asynchronous callers
    /// inject <c>BlockingService&lt;IProductRepository&gt;</c> and every call runs on that executor's workers.
    /// </summary>
    /// <typeparam name="TService">The blocking service's type; register it as usual (any lifetime).</typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="executorName">The name of the executor whose workers run the calls.</param>
    /// <returns>The service collection.</returns>
    /// <remarks>
    /// The bound service is transient and resolves <typeparamref name="TService"/> from the same provider or scope,
    /// so a scoped service is bound per scope. Registering the same service again changes nothing. The executor's name
    /// is matched ignoring case, as <c>AddBoundedExecutor</c> registers it; a name that no <c>AddBoundedExecutor</c>
    /// call registers fails the host's start (or, without a host, the service's resolution) with a message that
    /// names it.
    /// </remarks>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="executorName"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="executorName"/> is empty or white space.</exception>
    public static IServiceCollection AddBlockingService<TService>(this IServiceCollection services, string executorName)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(executorName);
        if (services.Any(static descriptor => descriptor.ServiceType == typeof(BlockingService<TService>)))
        {
            return services;
        }

        // The shared registrations include the hosted service whose start checks that the executor exists.
        BoundedExecutorServiceCollectionExtensions.AddBoundedExecutorCore(services);
        services.AddSingleton(new BlockingServiceRegistration(typeof(TService), executorName));
        services.AddTransient(provider => new BlockingService<TService>(
            BlockingServiceRegistration.ResolveExecutor(provider, typeof(TService), executorName),
            provider.GetRequiredService<TService>()));
        return services;
    }
}
