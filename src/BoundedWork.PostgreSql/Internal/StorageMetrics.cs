using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The meter <c>BoundedWork.PostgreSql</c>: what each node did (claims, outcomes, expired leases, all tagged with
/// <c>boundedwork.queue</c>), and the stored depth and oldest age each node last read from the database.
/// </summary>
internal static class StorageMetrics
{
    public const string MeterName = PostgreSqlWorkQueueDiagnostics.MeterName;

    private static readonly ConcurrentDictionary<IWorkQueueStorage, bool> s_queues = new();
    private static readonly Meter s_meter = new(MeterName, typeof(StorageMetrics).Assembly.GetName().Version?.ToString());

    public static readonly Counter<long> Claimed = s_meter.CreateCounter<long>("boundedwork.storage.claimed", "{item}", "Deliveries claimed by this node.");
    public static readonly Counter<long> Completed = s_meter.CreateCounter<long>("boundedwork.storage.completed", "{item}", "Deliveries this node completed.");
    public static readonly Counter<long> Retried = s_meter.CreateCounter<long>("boundedwork.storage.retried", "{item}", "Failed deliveries this node stored a retry for.");
    public static readonly Counter<long> DeadLettered = s_meter.CreateCounter<long>("boundedwork.storage.dead_lettered", "{item}", "Items this node made dead letters.");
    public static readonly Counter<long> Released = s_meter.CreateCounter<long>("boundedwork.storage.released", "{item}", "Claimed deliveries this node handed back unrun (stopping).");
    public static readonly Counter<long> Snoozed = s_meter.CreateCounter<long>("boundedwork.storage.snoozed", "{item}", "Deliveries whose handler snoozed its item on this node: stored to run again later, the delivery not counted.");
    public static readonly Counter<long> Cancelled = s_meter.CreateCounter<long>("boundedwork.storage.cancelled", "{item}", "Items this node cancelled: waiting items cancelled through it, and deliveries that ended cancelled on it.");
    public static readonly Counter<long> ClusterLimitedClaims = s_meter.CreateCounter<long>("boundedwork.storage.cluster.limited_claims", "{claim}",
        "Claims of this node that a cluster limit cut short (tag boundedwork.storage.cluster.limit: max_running or starts_per_second).");
    public static readonly Counter<long> LeasesExpired = s_meter.CreateCounter<long>("boundedwork.storage.leases_expired", "{item}", "Claims of other nodes whose lease expired, returned to ready by this node.");

    static StorageMetrics()
    {
        s_meter.CreateObservableGauge("boundedwork.storage.items", ObserveItems, "{item}",
            "Stored items of the queue by state (ready, scheduled, running, dead_lettered, completed, cancelled), as last read from the database.");
        s_meter.CreateObservableGauge("boundedwork.storage.tenant.items", ObserveTenantItems, "{item}",
            "Stored items of each tenant by state (ready, running), as last read from the database: the busiest tenants (TenantSeriesLimit), the rest as \"(other)\".");
        s_meter.CreateObservableCounter("boundedwork.storage.tenant.outcomes", ObserveTenantOutcomes, "{item}",
            "This node's deliveries of each tenant by outcome (completed, failed, dead_lettered): the first TenantSeriesLimit tenants seen, the rest as \"(other)\".");
        s_meter.CreateObservableGauge("boundedwork.storage.oldest_ready_age", ObserveOldestAge, "s",
            "How long the oldest ready item has waited, as last read from the database.");
        s_meter.CreateObservableGauge("boundedwork.storage.available", ObserveAvailable, "{boolean}",
            "1 while this node reaches the database on every loop, else 0.");
        s_meter.CreateObservableGauge("boundedwork.storage.paused", ObservePaused, "{boolean}",
            "1 while the queue is paused fleet-wide, as this node last read it, else 0.");
        s_meter.CreateObservableGauge("boundedwork.storage.cluster.waiting", ObserveClusterWaiting, "{item}",
            "Ready items this node had idle workers for that its last claim left waiting for a cluster permit.");
        s_meter.CreateObservableGauge("boundedwork.storage.cluster.oldest_wait", ObserveClusterOldestWait, "s",
            "How long the oldest item waiting for a cluster permit on this node has waited since it became due.");
    }

    public static KeyValuePair<string, object?> QueueTag(string queueName) => new("boundedwork.queue", queueName);

    public static void Register(IWorkQueueStorage queue) => s_queues[queue] = true;

    public static void Unregister(IWorkQueueStorage queue) => s_queues.TryRemove(queue, out _);

    private static IEnumerable<Measurement<long>> ObserveItems()
    {
        foreach (var queue in s_queues.Keys)
        {
            var statistics = queue.Statistics;
            var tag = QueueTag(queue.QueueName);
            yield return new Measurement<long>(statistics.Ready, tag, new("boundedwork.storage.state", "ready"));
            yield return new Measurement<long>(statistics.Scheduled, tag, new("boundedwork.storage.state", "scheduled"));
            yield return new Measurement<long>(statistics.Running, tag, new("boundedwork.storage.state", "running"));
            yield return new Measurement<long>(statistics.DeadLettered, tag, new("boundedwork.storage.state", "dead_lettered"));
            yield return new Measurement<long>(statistics.Completed, tag, new("boundedwork.storage.state", "completed"));
            yield return new Measurement<long>(statistics.Cancelled, tag, new("boundedwork.storage.state", "cancelled"));
        }
    }

    /// <summary>Each queue's busiest tenants as its node last read them: at most its series limit + 1 tenants per state.</summary>
    private static IEnumerable<Measurement<long>> ObserveTenantItems()
    {
        foreach (var queue in s_queues.Keys)
        {
            var tag = QueueTag(queue.QueueName);
            foreach (var tenant in queue.Statistics.Tenants)
            {
                var tenantTag = new KeyValuePair<string, object?>(BoundedWorkDiagnostics.TenantTag, tenant.Tenant);
                yield return new Measurement<long>(tenant.Ready, tag, new("boundedwork.storage.state", "ready"), tenantTag);
                yield return new Measurement<long>(tenant.Running, tag, new("boundedwork.storage.state", "running"), tenantTag);
            }
        }
    }

    private static IEnumerable<Measurement<long>> ObserveTenantOutcomes()
    {
        foreach (var queue in s_queues.Keys.OfType<ITenantOutcomeSource>())
        {
            var tag = QueueTag(queue.QueueName);
            foreach (var (tenant, completed, failed, deadLettered) in queue.TenantOutcomes.Read())
            {
                var tenantTag = new KeyValuePair<string, object?>(BoundedWorkDiagnostics.TenantTag, tenant);
                yield return new Measurement<long>(completed, tag, tenantTag, new(BoundedWorkDiagnostics.OutcomeTag, "completed"));
                yield return new Measurement<long>(failed, tag, tenantTag, new(BoundedWorkDiagnostics.OutcomeTag, "failed"));
                yield return new Measurement<long>(deadLettered, tag, tenantTag, new(BoundedWorkDiagnostics.OutcomeTag, "dead_lettered"));
            }
        }
    }

    private static IEnumerable<Measurement<double>> ObserveOldestAge() =>
        s_queues.Keys.Select(queue => new Measurement<double>(queue.Statistics.OldestReadyAge.TotalSeconds, QueueTag(queue.QueueName)));

    private static IEnumerable<Measurement<int>> ObserveAvailable() =>
        s_queues.Keys.Select(queue => new Measurement<int>(queue.Statistics.IsAvailable ? 1 : 0, QueueTag(queue.QueueName)));

    private static IEnumerable<Measurement<int>> ObservePaused() =>
        s_queues.Keys.Select(queue => new Measurement<int>(queue.Statistics.Pause is null ? 0 : 1, QueueTag(queue.QueueName)));

    private static IEnumerable<Measurement<long>> ObserveClusterWaiting() =>
        s_queues.Keys.OfType<IClusterPermitSource>().Select(queue => new Measurement<long>(queue.ClusterPermitWaiting, QueueTag(queue.QueueName)));

    private static IEnumerable<Measurement<double>> ObserveClusterOldestWait() =>
        s_queues.Keys.OfType<IClusterPermitSource>().Select(queue => new Measurement<double>(queue.OldestClusterPermitWait.TotalSeconds, QueueTag(queue.QueueName)));
}
