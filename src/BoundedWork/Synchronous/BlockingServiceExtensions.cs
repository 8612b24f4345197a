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

    /// <summary>
    /// Creates a <see cref="TaskScheduler"/> whose tasks run on <paramref name="executor"/>'s workers. Create one and
    /// keep it: each call returns a new scheduler.
    /// </summary>
    /// <param name="executor">The executor.</param>
    /// <returns>The scheduler.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="executor"/> is <see langword="null"/>.</exception>
    public static BoundedExecutorTaskScheduler AsTaskScheduler(this BoundedExecutor executor) => new(executor);
}
