namespace BoundedWork.Hosting;

/// <summary>
/// A durable queue's fleet-wide settings, kept in the storage and applied by every node that consumes the queue. A
/// <see langword="null"/> limit means none.
/// </summary>
public sealed record WorkQueueClusterSettings
{
    /// <summary>Gets the worker count every node's executor for the queue runs; <see langword="null"/> leaves each node's own setting.</summary>
    public int? WorkersPerNode { get; init; }

    /// <summary>Gets the most items of the queue running at once across all nodes (global concurrency); <see langword="null"/> for no limit.</summary>
    public int? MaxRunning { get; init; }

    /// <summary>
    /// Gets the most items with the same ordering key running at once across all nodes (1, the default, runs a key's
    /// items one at a time in enqueue order; above 1 they start in enqueue order, up to this many at once).
    /// </summary>
    public int MaxRunningPerKey { get; init; } = 1;

    /// <summary>Gets the most item starts per second across all nodes; <see langword="null"/> for no limit.</summary>
    public double? StartsPerSecond { get; init; }

    /// <summary>Gets how many starts may happen at once above <see cref="StartsPerSecond"/> after a quiet spell (the token bucket's size); <see langword="null"/> for the default, one second's worth.</summary>
    public int? StartBurst { get; init; }

    /// <summary>
    /// Gets fair share across tenants: while set, every node claims the queue's ready items from the tenants with ready
    /// items in weighted turn (<see cref="EnqueueOptions.Tenant"/>), and bounds each tenant's running items across the
    /// fleet. Not with <see cref="MaxRunningPerKey"/> above 1.
    /// </summary>
    /// <value><see langword="null"/>: off; items are claimed in one order (priority, due time, enqueue order).</value>
    public WorkQueueFairShare? FairShare { get; init; }

    /// <summary>Gets the version of the settings: it grows by one with each change; 0 before the first change.</summary>
    public long Version { get; init; }

    /// <summary>Gets when the settings were last changed, or <see langword="null"/> if never.</summary>
    public DateTimeOffset? UpdatedAt { get; init; }

    /// <summary>Gets who last changed the settings, or <see langword="null"/> if never.</summary>
    public string? UpdatedBy { get; init; }
}
