using System.Globalization;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Reports the worst state among all registered executors. One instance per registration, so that "refused since
/// the previous check" is measured between this check's own runs.
/// </summary>
internal sealed class BoundedWorkHealthCheck(IBoundedExecutorRegistry registry, IEnumerable<IWorkQueueStorage> storages, double degradedQueueFillRatio) : IHealthCheck
{
    private readonly Dictionary<string, IWorkQueueStorage> _storages = storages.ToDictionary(storage => storage.QueueName, StringComparer.Ordinal);

    private readonly Lock _sync = new();
    private readonly Dictionary<string, (long Refused, long BlockingWaits)> _countsAtLastCheck = new(StringComparer.Ordinal);

    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(context);
        var worst = HealthStatus.Healthy;
        var problems = new List<string>();
        var data = new Dictionary<string, object>(StringComparer.Ordinal);
        var statistics = registry.GetStatistics();
        foreach (var stats in statistics)
        {
            var refused = stats.Rejected + stats.Discarded;
            (long Refused, long BlockingWaits) before;
            lock (_sync)
            {
                _countsAtLastCheck.TryGetValue(stats.Name, out before);
                _countsAtLastCheck[stats.Name] = (refused, stats.ThreadPoolBlockingWaits);
            }

            var refusedSinceLastCheck = refused - before.Refused;
            var blockingWaitsSinceLastCheck = stats.ThreadPoolBlockingWaits - before.BlockingWaits;
            var fillRatio = (double)stats.QueueLength / stats.QueueCapacity;
            var (status, problem) = Assess(stats, refusedSinceLastCheck, blockingWaitsSinceLastCheck, fillRatio);
            _storages.TryGetValue(stats.Name, out var storage);
            var stored = storage?.Statistics;
            if (storage is not null && stored is { IsAvailable: false } && status != HealthStatus.Unhealthy)
            {
                (status, problem) = (HealthStatus.Unhealthy, $"Work queue '{stats.Name}' cannot reach its {storage.StorageKind} storage: {stored.LastError}");
            }
            else if (stored is { Warning: { } warning } && status == HealthStatus.Healthy)
            {
                (status, problem) = (HealthStatus.Degraded, $"Work queue '{stats.Name}': {warning}");
            }
            else if (stored is not null && status == HealthStatus.Healthy && stats.QueueWaitThreshold != Timeout.InfiniteTimeSpan && stored.OldestReadyAge > stats.QueueWaitThreshold)
            {
                (status, problem) = (HealthStatus.Degraded, string.Create(CultureInfo.InvariantCulture,
                    $"Work queue '{stats.Name}' has a stored item ready for {stored.OldestReadyAge}, longer than the QueueWaitThreshold of {stats.QueueWaitThreshold}."));
            }

            if (problem is not null)
            {
                problems.Add(problem);
            }

            if (status < worst)
            {
                worst = status; // Unhealthy (0) < Degraded (1) < Healthy (2)
            }

            data[stats.Name] = new Dictionary<string, object>(StringComparer.Ordinal)
            {
                ["status"] = status.ToString(),
                ["queueLength"] = stats.QueueLength,
                ["queueCapacity"] = stats.QueueCapacity,
                ["queueFillRatio"] = fillRatio,
                ["liveWorkers"] = stats.LiveWorkerCount,
                ["targetWorkers"] = stats.TargetWorkerCount,
                ["busyWorkers"] = stats.BusyWorkerCount,
                ["refusedSinceLastCheck"] = refusedSinceLastCheck,
                ["threadPoolBlockingWaitsSinceLastCheck"] = blockingWaitsSinceLastCheck,
                ["slowWorkers"] = stats.SlowWorkerCount,
                ["oldestQueuedItemAgeSeconds"] = stats.OldestQueuedItemAge.TotalSeconds,
                ["submitted"] = stats.Submitted,
                ["completed"] = stats.Completed,
                ["failed"] = stats.Failed,
                ["rejected"] = stats.Rejected,
                ["discarded"] = stats.Discarded,
                ["abandoned"] = stats.Abandoned,
            };
            if (stored is not null)
            {
                ((Dictionary<string, object>)data[stats.Name])["storage"] = new Dictionary<string, object>(StringComparer.Ordinal)
                {
                    ["kind"] = storage!.StorageKind,
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

        var description = problems.Count == 0
            ? $"{statistics.Count} bounded executors are healthy."
            : string.Join(" ", problems);
        var result = worst switch
        {
            HealthStatus.Healthy => HealthCheckResult.Healthy(description, data),
            HealthStatus.Degraded => HealthCheckResult.Degraded(description, data: data),
            _ => new HealthCheckResult(context.Registration.FailureStatus, description, data: data),
        };
        return Task.FromResult(result);
    }

    private (HealthStatus Status, string? Problem) Assess(BoundedExecutorStatistics stats, long refusedSinceLastCheck, long blockingWaitsSinceLastCheck, double fillRatio)
    {
        if (stats.IsShutdown)
        {
            return (HealthStatus.Unhealthy, $"Executor '{stats.Name}' is shut down.");
        }

        if (refusedSinceLastCheck > 0)
        {
            return (HealthStatus.Unhealthy, $"Executor '{stats.Name}' rejected or discarded {refusedSinceLastCheck} items since the previous check.");
        }

        if (stats.LiveWorkerCount < stats.TargetWorkerCount)
        {
            return (HealthStatus.Unhealthy, $"Executor '{stats.Name}' has {stats.LiveWorkerCount} live workers of a target of {stats.TargetWorkerCount}.");
        }

        if (fillRatio >= degradedQueueFillRatio)
        {
            return (HealthStatus.Degraded, string.Create(CultureInfo.InvariantCulture,
                $"Executor '{stats.Name}' queue is {fillRatio:P0} full ({stats.QueueLength} of {stats.QueueCapacity}), at or above {degradedQueueFillRatio:P0}."));
        }

        if (stats.SlowWorkerCount > 0)
        {
            return (HealthStatus.Degraded, string.Create(CultureInfo.InvariantCulture,
                $"Executor '{stats.Name}' has {stats.SlowWorkerCount} workers running an item for longer than the SlowItemThreshold of {stats.SlowItemThreshold}."));
        }

        if (stats.QueueWaitThreshold != Timeout.InfiniteTimeSpan && stats.OldestQueuedItemAge > stats.QueueWaitThreshold)
        {
            return (HealthStatus.Degraded, string.Create(CultureInfo.InvariantCulture,
                $"Executor '{stats.Name}' has an item waiting in the queue for {stats.OldestQueuedItemAge}, longer than the QueueWaitThreshold of {stats.QueueWaitThreshold}."));
        }

        if (blockingWaitsSinceLastCheck > 0)
        {
            return (HealthStatus.Degraded, string.Create(CultureInfo.InvariantCulture,
                $"Executor '{stats.Name}': {blockingWaitsSinceLastCheck} ThreadPool threads blocked waiting for it since the previous check; submit asynchronously from request code."));
        }

        return (HealthStatus.Healthy, null);
    }
}
