using System.Globalization;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Reports the worst state among all registered executors. One instance per registration, so that "refused since
/// the previous check" is measured between this check's own runs.
/// </summary>
internal sealed class BoundedWorkHealthCheck(IBoundedExecutorRegistry registry, IEnumerable<IExecutorHealthContributor> contributors, double degradedQueueFillRatio) : IHealthCheck
{
    private readonly IExecutorHealthContributor[] _contributors = [.. contributors];

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
            var contributed = new Dictionary<string, object>(StringComparer.Ordinal);
            foreach (var contributor in _contributors)
            {
                contributor.Assess(stats, ref status, ref problem, contributed);
            }

            if (problem is not null)
            {
                problems.Add(problem);
            }

            if (status < worst)
            {
                worst = status; // Unhealthy (0) < Degraded (1) < Healthy (2)
            }

            var executorData = new Dictionary<string, object>(StringComparer.Ordinal)
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
            foreach (var (key, value) in contributed)
            {
                executorData[key] = value;
            }

            data[stats.Name] = executorData;
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
