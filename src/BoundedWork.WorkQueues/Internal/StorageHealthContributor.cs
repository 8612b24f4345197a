using System.Globalization;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// What the BoundedWork health check says of a typed work queue with durable storage: Unhealthy while its node cannot
/// reach the storage, Degraded on the storage's warning or while its oldest stored ready item has waited longer than
/// the QueueWaitThreshold; and a <c>storage</c> entry in the queue's data. Registered once by
/// <see cref="WorkQueueBuilder{T}.UseStorage"/>.
/// </summary>
internal sealed class StorageHealthContributor(IEnumerable<IWorkQueueStorage> storages) : IExecutorHealthContributor
{
    private readonly Dictionary<string, IWorkQueueStorage> _storages = storages.ToDictionary(storage => storage.QueueName, StringComparer.Ordinal);

    public void Assess(BoundedExecutorStatistics statistics, ref HealthStatus status, ref string? problem, IDictionary<string, object> data)
    {
        if (!_storages.TryGetValue(statistics.Name, out var storage) || storage.Statistics is not { } stored)
        {
            return;
        }

        if (stored is { IsAvailable: false } && status != HealthStatus.Unhealthy)
        {
            (status, problem) = (HealthStatus.Unhealthy, $"Work queue '{statistics.Name}' cannot reach its {storage.StorageKind} storage: {stored.LastError}");
        }
        else if (stored is { Warning: { } warning } && status == HealthStatus.Healthy)
        {
            (status, problem) = (HealthStatus.Degraded, $"Work queue '{statistics.Name}': {warning}");
        }
        else if (status == HealthStatus.Healthy && statistics.QueueWaitThreshold != Timeout.InfiniteTimeSpan && stored.OldestReadyAge > statistics.QueueWaitThreshold)
        {
            (status, problem) = (HealthStatus.Degraded, string.Create(CultureInfo.InvariantCulture,
                $"Work queue '{statistics.Name}' has a stored item ready for {stored.OldestReadyAge}, longer than the QueueWaitThreshold of {statistics.QueueWaitThreshold}."));
        }

        data["storage"] = new Dictionary<string, object>(StringComparer.Ordinal)
        {
            ["kind"] = storage.StorageKind,
            ["available"] = stored.IsAvailable,
            ["ready"] = stored.Ready,
            ["scheduled"] = stored.Scheduled,
            ["running"] = stored.Running,
            ["deadLettered"] = stored.DeadLettered,
            ["oldestReadyAgeSeconds"] = stored.OldestReadyAge.TotalSeconds,
            ["lastError"] = stored.LastError ?? string.Empty,
            ["warning"] = stored.Warning ?? string.Empty,
        };
    }
}
