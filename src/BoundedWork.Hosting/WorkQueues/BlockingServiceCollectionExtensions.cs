using BoundedWork;
using BoundedWork.Synchronous;
using Microsoft.Extensions.DependencyInjection.Extensions;

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
    /// so a scoped service is bound per scope. Registering the same service again changes nothing.
    /// </remarks>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="executorName"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="executorName"/> is empty or white space.</exception>
    public static IServiceCollection AddBlockingService<TService>(this IServiceCollection services, string executorName)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(executorName);
        services.TryAddTransient(provider => new BlockingService<TService>(
            provider.GetRequiredKeyedService<BoundedExecutor>(executorName),
            provider.GetRequiredService<TService>()));
        return services;
    }
}
