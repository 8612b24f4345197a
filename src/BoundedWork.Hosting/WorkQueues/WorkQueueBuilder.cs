using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.DependencyInjection;
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
}
