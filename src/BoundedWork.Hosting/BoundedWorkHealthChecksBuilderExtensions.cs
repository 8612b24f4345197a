using BoundedWork.Hosting;
using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Adds the BoundedWork health check to a health checks builder.</summary>
public static class BoundedWorkHealthChecksBuilderExtensions
{
    /// <summary>The default name of the health check.</summary>
    public const string DefaultName = "boundedwork";

    /// <summary>
    /// Adds one health check covering every executor in <see cref="IBoundedExecutorRegistry"/>. It reports, for the
    /// worst executor: <see cref="HealthStatus.Unhealthy"/> (or <paramref name="failureStatus"/>) while an executor is
    /// refusing work (its rejected or discarded count rose since the previous check), has fewer live workers than its
    /// target, or is shut down; <see cref="HealthStatus.Degraded"/> when a queue is at or above
    /// <see cref="BoundedWorkHealthCheckOptions.DegradedQueueFillRatio"/>, while a worker has run its item for longer
    /// than <see cref="BoundedWork.BoundedExecutorOptions.SlowItemThreshold"/>, when the oldest queued item has waited longer than
    /// <see cref="BoundedWork.BoundedExecutorOptions.QueueWaitThreshold"/>, or when ThreadPool threads blocked waiting for the
    /// executor since the previous check; otherwise <see cref="HealthStatus.Healthy"/>.
    /// A typed work queue with durable storage (BoundedWork.WorkQueues, <c>IWorkQueueStorage</c>) is also Unhealthy while its node cannot
    /// reach the storage, and Degraded while its oldest stored ready item has waited longer than the QueueWaitThreshold.
    /// The result's data holds one entry per executor, keyed by its name (with a <c>storage</c> entry for durable queues).
    /// </summary>
    /// <param name="builder">The health checks builder.</param>
    /// <param name="name">The health check's name. Defaults to <see cref="DefaultName"/>.</param>
    /// <param name="configure">Optional settings, such as the degraded fill ratio.</param>
    /// <param name="failureStatus">The status reported instead of <see cref="HealthStatus.Unhealthy"/>; <see langword="null"/> for Unhealthy.</param>
    /// <param name="tags">Tags to filter health checks by, or <see langword="null"/>.</param>
    /// <returns>The builder, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="builder"/> or <paramref name="name"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">The configured fill ratio is not greater than 0 and at most 1.</exception>
    /// <exception cref="InvalidOperationException">A BoundedWork health check with the same name is already added.</exception>
    public static IHealthChecksBuilder AddBoundedWork(
        this IHealthChecksBuilder builder,
        string name = DefaultName,
        Action<BoundedWorkHealthCheckOptions>? configure = null,
        HealthStatus? failureStatus = null,
        IEnumerable<string>? tags = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);

        var options = new BoundedWorkHealthCheckOptions();
        configure?.Invoke(options);
        if (!(options.DegradedQueueFillRatio > 0 && options.DegradedQueueFillRatio <= 1))
        {
            throw new ArgumentOutOfRangeException(nameof(configure), options.DegradedQueueFillRatio,
                $"{nameof(BoundedWorkHealthCheckOptions.DegradedQueueFillRatio)} of health check '{name}' must be greater than 0 and at most 1.");
        }

        if (builder.Services.Any(descriptor => descriptor.ServiceType == typeof(BoundedWorkHealthCheck) && Equals(descriptor.ServiceKey, name)))
        {
            throw new InvalidOperationException($"A BoundedWork health check named '{name}' is already added.");
        }

        BoundedExecutorServiceCollectionExtensions.AddBoundedExecutorCore(builder.Services);
        builder.Services.AddKeyedSingleton(name, (provider, _) =>
            new BoundedWorkHealthCheck(provider.GetRequiredService<IBoundedExecutorRegistry>(), provider.GetServices<IExecutorHealthContributor>(), options.DegradedQueueFillRatio));
        return builder.Add(new HealthCheckRegistration(
            name,
            provider => provider.GetRequiredKeyedService<BoundedWorkHealthCheck>(name),
            failureStatus,
            tags));
    }
}
