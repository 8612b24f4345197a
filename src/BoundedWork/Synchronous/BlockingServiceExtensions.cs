namespace BoundedWork.Synchronous;

/// <summary>Binds blocking services to executors.</summary>
public static class BlockingServiceExtensions
{
    /// <summary>Binds <paramref name="service"/> to <paramref name="executor"/>: every call through the result runs on the executor's workers.</summary>
    /// <typeparam name="TService">The blocking service's type.</typeparam>
    /// <param name="executor">The executor.</param>
    /// <param name="service">The blocking service.</param>
    /// <returns>The bound service.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="executor"/> or <paramref name="service"/> is <see langword="null"/>.</exception>
    public static BlockingService<TService> Bind<TService>(this BoundedExecutor executor, TService service)
        where TService : class => new(executor, service);
}
