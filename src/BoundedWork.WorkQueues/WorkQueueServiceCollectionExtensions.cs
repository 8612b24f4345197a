using System.Diagnostics.CodeAnalysis;
using BoundedWork;
using BoundedWork.Hosting;
using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers typed work queues with dependency injection.</summary>
public static class WorkQueueServiceCollectionExtensions
{
    /// <summary>
    /// Registers a typed work queue: producers inject <see cref="IWorkQueue{T}"/> (also keyed by
    /// <paramref name="name"/>), each item is handled by <typeparamref name="THandler"/>, resolved in a new scope for
    /// every attempt, through a Polly resilience pipeline, on a <see cref="BoundedExecutor"/> registered under the same
    /// name with <c>AddBoundedExecutor</c> (so it is listed in <see cref="IBoundedExecutorRegistry"/>, statistics,
    /// metrics, health checks and admin endpoints). Items that are never handled go to the
    /// <see cref="IDeadLetterHandler{T}"/> services.
    /// </summary>
    /// <typeparam name="T">The item type.</typeparam>
    /// <typeparam name="THandler">
    /// The handler: an <see cref="IBlockingWorkHandler{T}"/> (preferred when it implements both) or an
    /// <see cref="IWorkHandler{T}"/>. Registered as scoped unless already registered.
    /// </typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The queue's name: its executor's name, the key of its <see cref="IWorkQueue{T}"/>, and the name its log lines and resilience telemetry carry.</param>
    /// <param name="configure">Optional queue settings (retries, timeout, ordering key, pipeline); validated here.</param>
    /// <returns>
    /// The executor's options builder, to configure workers, capacity and policy (<c>.Configure(...)</c>,
    /// <c>.BindConfiguration(...)</c>), and to choose durable storage (<c>.UsePostgreSql(...)</c> from BoundedWork.PostgreSql).
    /// </returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="name"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="name"/> is empty, <typeparamref name="THandler"/> is not a handler of <typeparamref name="T"/>, or a queue setting is invalid (the message names it).</exception>
    /// <exception cref="InvalidOperationException">An executor or queue with the same name is already registered.</exception>
    public static WorkQueueBuilder<T> AddWorkQueue<T, [DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicConstructors)] THandler>(
        this IServiceCollection services,
        string name,
        Action<WorkQueueOptions<T>>? configure = null)
        where THandler : class
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        if (!HandlerInvoker<T, THandler>.IsHandler)
        {
            throw new ArgumentException(
                $"{typeof(THandler).Name} must implement IWorkHandler<{typeof(T).Name}> or IBlockingWorkHandler<{typeof(T).Name}> to handle the items of work queue '{name}'.",
                nameof(THandler));
        }

        var options = new WorkQueueOptions<T>();
        configure?.Invoke(options);
        var errors = options.GetValidationErrors();
        if (errors.Count > 0)
        {
            throw new ArgumentException($"Invalid WorkQueueOptions for work queue '{name}': {string.Join(" ", errors)}", nameof(configure));
        }

        var builder = services.AddBoundedExecutor(name);

        // After every other configuration (including the package's own logging): items of this queue that the
        // executor refuses, drops or evicts become dead letters.
        builder.PostConfigure(static executorOptions =>
        {
            var onRejected = executorOptions.OnRejected;
            executorOptions.OnRejected = args =>
            {
                if (args.Item.State is IWorkQueueDelivery entry)
                {
                    _ = entry.OnNotRun(args.Reason);
                }

                onRejected?.Invoke(args);
            };
        });

        var registration = new WorkQueueRegistration<T>(name, options, HandlerInvoker<T, THandler>.Instance, typeof(THandler).FullName ?? typeof(THandler).Name);
        services.TryAddScoped<THandler>();
        services.TryAddScoped<WorkItemContext>();
        services.TryAddSingleton<RetryClock>();
        services.TryAddSingleton<WorkQueueDiagnostics>();
        services.TryAddSingleton(provider => new DeadLetterHandlerFallback(services, provider));
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IAbandonedWorkHandler, WorkQueueAbandonedItems>());
        services.AddKeyedSingleton<IWorkQueueRuntime<T>>(name, (provider, _) =>
            registration.Storage is { } storage
                ? new StorageRuntime<T>(storage(provider, new WorkQueueStorageContext<T>(registration, provider)))
                : new WorkQueue<T>(name, options, registration.Handle, provider, registration.HandlerName));
        services.AddKeyedSingleton<IWorkQueue<T>>(name, static (provider, key) => provider.GetRequiredKeyedService<IWorkQueueRuntime<T>>(key).Queue);
        services.TryAddSingleton<IWorkQueue<T>>(provider => provider.GetRequiredKeyedService<IWorkQueueRuntime<T>>(name).Queue);
        services.AddSingleton<IHostedService>(provider => new WorkQueueHostedService<T>(provider.GetRequiredKeyedService<IWorkQueueRuntime<T>>(name)));
        return new WorkQueueBuilder<T>(services, registration);
    }
}
