namespace BoundedWork.Hosting;

/// <summary>
/// One tenant's stored items of a durable queue, across every node (<see cref="WorkQueueStorageStatistics.Tenants"/>):
/// its items ready to run now and its items claimed and not finished, as the node last read them from the storage.
/// </summary>
public sealed record WorkQueueTenantStatistics
{
    /// <summary>Gets the tenant (<see cref="EnqueueOptions.Tenant"/>), or <see cref="BoundedWork.TenantStatistics.OtherTenants"/> for the tenants counted together.</summary>
    public required string Tenant { get; init; }

    /// <summary>Gets the tenant's stored items ready to run now, across every node.</summary>
    public long Ready { get; init; }

    /// <summary>Gets the tenant's stored items claimed by some node and not yet finished.</summary>
    public long Running { get; init; }

    /// <summary>Gets the tenant's deliveries that completed on this node since it started (for <see cref="BoundedWork.TenantStatistics.OtherTenants"/>: those of the tenants this node counts together).</summary>
    public long Completed { get; init; }

    /// <summary>Gets the tenant's deliveries that failed on this node and were stored to be retried.</summary>
    public long Failed { get; init; }

    /// <summary>Gets the tenant's items this node made dead letters.</summary>
    public long DeadLettered { get; init; }
}
