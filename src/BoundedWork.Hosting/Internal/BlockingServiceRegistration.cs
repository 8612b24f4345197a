namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Marks one effective <c>AddBlockingService&lt;TService&gt;(executorName)</c> call, so the host's start checks that the
/// executor it names is registered (the hosted service does, before it creates the executors).
/// </summary>
internal sealed class BlockingServiceRegistration(Type serviceType, string executorName)
{
    public Type ServiceType { get; } = serviceType;

    public string ExecutorName { get; } = executorName;

    /// <summary>Throws, naming the call, the missing executor and the fix, unless the executor is registered.</summary>
    public void ThrowIfExecutorUnknown(BoundedExecutorRegistry registry)
    {
        if (!registry.IsRegistered(ExecutorName))
        {
            throw UnknownExecutor(ServiceType, ExecutorName, registry.Names);
        }
    }

    /// <summary>Resolves the executor the service is bound to, or throws the start-up check's message.</summary>
    public static BoundedExecutor ResolveExecutor(IServiceProvider provider, Type serviceType, string executorName)
    {
        var registry = (BoundedExecutorRegistry)provider.GetService(typeof(BoundedExecutorRegistry))!;
        return registry.TryGetExecutor(executorName, out var executor)
            ? executor
            : throw UnknownExecutor(serviceType, executorName, registry.Names);
    }

    private static InvalidOperationException UnknownExecutor(Type serviceType, string executorName, IReadOnlyList<string> registered) =>
        new($"AddBlockingService<{serviceType.Name}>(\"{executorName}\") names an executor that is not registered: add it with " +
            $"services.AddBoundedExecutor(\"{executorName}\"), or pass the name of a registered executor " +
            $"(registered executors: {(registered.Count == 0 ? "none" : string.Join(", ", registered))}).");
}
