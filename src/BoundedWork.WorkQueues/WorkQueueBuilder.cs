using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting;

/// <summary>
/// Returned by <c>services.AddWorkQueue&lt;T, THandler&gt;(name, ...)</c>: the options builder of the queue's executor
/// (workers, capacity, policy), and the place where a storage package plugs in, for example
/// <c>.UsePostgreSql(connectionString)</c> from BoundedWork.PostgreSql.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
public sealed class WorkQueueBuilder<T> : OptionsBuilder<BoundedExecutorOptions>
{
    internal WorkQueueBuilder(IServiceCollection services, WorkQueueRegistration<T> registration)
        : base(services, registration.Name)
    {
        Registration = registration;
    }

    /// <summary>Gets the queue's settings, as validated by <c>AddWorkQueue</c>.</summary>
    internal WorkQueueRegistration<T> Registration { get; }

    /// <summary>
    /// Keeps the queue's items in a durable storage instead of memory: <paramref name="storage"/> creates it once, when
    /// the queue is first resolved, and the host starts and stops it with the queue. Producers keep injecting
    /// <see cref="IWorkQueue{T}"/>, or <see cref="IDurableWorkQueue{T}"/> for ids, idempotent, delayed, prioritised and
    /// bulk enqueues and cancellation; the storage is also registered as an <see cref="IWorkQueueStorage"/> (health
    /// check, admin console) and an <see cref="IDeadLetterStore"/>. Storage packages call this from their own
    /// <c>Use…</c> extension (for example <c>UsePostgreSql</c>).
    /// </summary>
    /// <param name="storage">Creates the storage from the application's services and the queue's context.</param>
    /// <returns>This builder, to configure the executor.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="storage"/> is <see langword="null"/>.</exception>
    /// <exception cref="InvalidOperationException">The queue already has a storage.</exception>
    public WorkQueueBuilder<T> UseStorage(Func<IServiceProvider, WorkQueueStorageContext<T>, IWorkQueueStorage<T>> storage)
    {
        ArgumentNullException.ThrowIfNull(storage);
        if (Registration.Storage is not null)
        {
            throw new InvalidOperationException($"Work queue '{Name}' already has a storage.");
        }

        Registration.Storage = storage;
        var name = Name;
        Services.AddKeyedSingleton<IDurableWorkQueue<T>>(name, static (provider, key) => (IDurableWorkQueue<T>)provider.GetRequiredKeyedService<IWorkQueue<T>>(key));
        if (!Services.Any(descriptor => descriptor.ServiceType == typeof(IDurableWorkQueue<T>) && descriptor.ServiceKey is null))
        {
            Services.AddSingleton(provider => provider.GetRequiredKeyedService<IDurableWorkQueue<T>>(name));
        }

        Services.AddSingleton<IWorkQueueStorage>(provider => (IWorkQueueStorage)provider.GetRequiredKeyedService<IWorkQueue<T>>(name));
        Services.AddSingleton<IDeadLetterStore>(provider => (IDeadLetterStore)provider.GetRequiredKeyedService<IWorkQueue<T>>(name));
        Services.TryAddEnumerable(ServiceDescriptor.Singleton<IExecutorHealthContributor, StorageHealthContributor>());
        return this;
    }
}
