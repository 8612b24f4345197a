namespace BoundedWork.Hosting;

/// <summary>
/// The durable storage behind a typed work queue, as monitoring sees it (health check, admin console, metrics).
/// Registered by storage packages (for example BoundedWork.PostgreSql); resolve all of them with
/// <c>IEnumerable&lt;IWorkQueueStorage&gt;</c>.
/// </summary>
public interface IWorkQueueStorage
{
    /// <summary>Gets the name of the queue (and of its executor).</summary>
    string QueueName { get; }

    /// <summary>Gets the kind of storage, for example <c>PostgreSql</c>.</summary>
    string StorageKind { get; }

    /// <summary>Gets the latest statistics read from the storage (refreshed in the background; never blocks).</summary>
    WorkQueueStorageStatistics Statistics { get; }
}

/// <summary>A snapshot of a work queue's durable storage, read in one query.</summary>
public sealed record WorkQueueStorageStatistics
{
    /// <summary>Gets the number of stored items ready to run now, across every node.</summary>
    public long Ready { get; init; }

    /// <summary>Gets the number of stored items waiting for a later time (a delayed enqueue, or a stored retry's backoff).</summary>
    public long Scheduled { get; init; }

    /// <summary>Gets the number of stored items claimed by some node and not yet finished.</summary>
    public long Running { get; init; }

    /// <summary>Gets the number of dead letters kept in the storage.</summary>
    public long DeadLettered { get; init; }

    /// <summary>Gets the number of finished items kept until their retention ends.</summary>
    public long Completed { get; init; }

    /// <summary>Gets the number of cancelled items kept until their retention ends (cancelled before they ran, or stopped by their handler after a cancellation).</summary>
    public long Cancelled { get; init; }

    /// <summary>Gets how long the longest-waiting ready item has waited to run since it became due (enqueued, or its delay or retry backoff ended); zero when none is ready.</summary>
    public TimeSpan OldestReadyAge { get; init; }

    /// <summary>Gets a value indicating whether the storage answered the latest read and every loop of this node is connected.</summary>
    public bool IsAvailable { get; init; }

    /// <summary>Gets the latest connection or query error, while <see cref="IsAvailable"/> is <see langword="false"/>.</summary>
    public string? LastError { get; init; }

    /// <summary>
    /// Gets a condition of the storage that degrades the queue's health while the storage is available (for example
    /// items waiting for a cluster permit longer than the storage's threshold), in words; <see langword="null"/> when there is none.
    /// </summary>
    public string? Warning { get; init; }

    /// <summary>
    /// Gets the queue's fleet-wide pause as this node last read it (<see cref="IWorkQueuePauseControl"/>), or
    /// <see langword="null"/> when the queue is not paused: no node claims its items, and the health check reports Degraded with the reason.
    /// </summary>
    public WorkQueuePause? Pause { get; init; }

    /// <summary>Gets when the statistics were read; <see cref="DateTimeOffset.MinValue"/> before the first read.</summary>
    public DateTimeOffset ReadAt { get; init; }

    /// <summary>
    /// Gets the busiest tenants of the queue (<see cref="EnqueueOptions.Tenant"/>) by stored items ready and running,
    /// busiest first, read with the rest of the statistics: at most the storage's tenant series limit, then the other
    /// tenants counted together as <see cref="BoundedWork.TenantStatistics.OtherTenants"/>. Items without a tenant are
    /// not counted here.
    /// </summary>
    /// <value>Empty when no ready or running item has a tenant, or when the storage does not count tenants.</value>
    public IReadOnlyList<WorkQueueTenantStatistics> Tenants { get; init; } = [];
}
