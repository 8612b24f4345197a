namespace BoundedWork;

/// <summary>
/// One tenant's share of an executor under fair share (<see cref="BoundedExecutor.GetTenantStatistics(int)"/>): what it
/// holds now and what became of its items. Counts are since the executor started.
/// </summary>
public sealed class TenantStatistics
{
    /// <summary>The name under which tenants past <see cref="FairShareSettings.TenantSeriesLimit"/> are counted together.</summary>
    public const string OtherTenants = "(other)";

    internal TenantStatistics(string tenant, int weight, int queued, int running, long completed, long failed, long refused, TimeSpan averageQueueWait)
    {
        Tenant = tenant;
        Weight = weight;
        Queued = queued;
        Running = running;
        Completed = completed;
        Failed = failed;
        Refused = refused;
        AverageQueueWait = averageQueueWait;
    }

    /// <summary>Gets the tenant, or <see cref="OtherTenants"/> for the tenants counted together.</summary>
    public string Tenant { get; }

    /// <summary>Gets the tenant's weight in force.</summary>
    public int Weight { get; }

    /// <summary>Gets the tenant's items queued now (waiting producers' items included).</summary>
    public int Queued { get; }

    /// <summary>Gets the tenant's items running on the workers now.</summary>
    public int Running { get; }

    /// <summary>Gets the tenant's items that ran to completion (on a worker or, under CallerRuns, on their submitter).</summary>
    public long Completed { get; }

    /// <summary>Gets the tenant's items that threw.</summary>
    public long Failed { get; }

    /// <summary>
    /// Gets the tenant's items that did not run because of a bound or a full queue: rejected, discarded, evicted, shed
    /// for a shorter backlog, timed out waiting for room or refused after shutdown.
    /// </summary>
    public long Refused { get; }

    /// <summary>Gets the average time the tenant's items waited in the queue before they started.</summary>
    public TimeSpan AverageQueueWait { get; }
}
