namespace BoundedWork.Hosting;

/// <summary>A durable queue's cluster as read from the storage at one moment (<see cref="IWorkQueueCluster.GetClusterAsync"/>).</summary>
public sealed record WorkQueueCluster
{
    /// <summary>Gets the name of the queue.</summary>
    public required string QueueName { get; init; }

    /// <summary>Gets the queue's fleet-wide settings.</summary>
    public required WorkQueueClusterSettings Settings { get; init; }

    /// <summary>Gets the live nodes consuming the queue (nodes whose heartbeat expired are left out), ordered by name.</summary>
    public required IReadOnlyList<WorkQueueClusterNode> Nodes { get; init; }

    /// <summary>Gets the stored items by state, across every node.</summary>
    public required WorkQueueStorageStatistics Storage { get; init; }

    /// <summary>Gets how much of each cluster limit is in use.</summary>
    public required WorkQueueClusterLimitUse LimitUse { get; init; }

    /// <summary>Gets the fleet-wide pauses in force: the queue's and its paused ordering keys (<see cref="IWorkQueuePauseControl"/>).</summary>
    public WorkQueuePauses Pauses { get; init; } = new();

    /// <summary>Gets when the cluster was read.</summary>
    public DateTimeOffset ReadAt { get; init; }
}

/// <summary>How much of a queue's cluster limits is in use, across every node.</summary>
public sealed record WorkQueueClusterLimitUse
{
    /// <summary>
    /// Gets the stored items of the queue in state running across all nodes (the permits of
    /// <see cref="WorkQueueClusterSettings.MaxRunning"/> in use): the handlers running (<see cref="HandlersRunning"/>) and
    /// the items reserved or settling (held in a node's reserve, or whose outcome is being written).
    /// </summary>
    public long Running { get; init; }

    /// <summary>
    /// Gets the queue's handlers running now across the live nodes (started and not ended), as their latest heartbeats
    /// reported: what <see cref="WorkQueueClusterSettings.MaxRunning"/> bounds (handlers started before the limit was
    /// lowered run on and still count). <see cref="Running"/> less this is the items reserved or settling (floored at
    /// zero: the two are read at different moments).
    /// </summary>
    public long HandlersRunning { get; init; }

    /// <summary>Gets the ready items held back because a cluster limit (global, per key or rate) is reached, as the nodes last reported.</summary>
    public long WaitingForPermit { get; init; }

    /// <summary>Gets the item starts across all nodes during the last second.</summary>
    public double StartsLastSecond { get; init; }

    /// <summary>Gets how long the longest-waiting item held back by a cluster limit has waited; zero when none is held back.</summary>
    public TimeSpan OldestPermitWait { get; init; }

    /// <summary>
    /// Gets the running permits of <see cref="WorkQueueClusterSettings.MaxRunning"/> granted to the live nodes, as their
    /// latest grants recorded them; zero without a running limit (or from storage that does not lease permits).
    /// </summary>
    public long PermitsGranted { get; init; }

    /// <summary>
    /// Gets the running permits the live nodes had in use (items claimed whose handler has not ended) at their latest
    /// grants; zero without a running limit.
    /// </summary>
    public long PermitsInUse { get; init; }
}

/// <summary>One node consuming a durable queue, as its latest heartbeat described it.</summary>
public sealed record WorkQueueClusterNode
{
    /// <summary>Gets the node's name, unique among the live nodes (host and process id unless configured).</summary>
    public required string Name { get; init; }

    /// <summary>Gets the host the node runs on.</summary>
    public required string Host { get; init; }

    /// <summary>Gets the node's process id.</summary>
    public int ProcessId { get; init; }

    /// <summary>Gets the version of BoundedWork the node runs.</summary>
    public required string Version { get; init; }

    /// <summary>Gets when the node started consuming the queue.</summary>
    public DateTimeOffset StartedAt { get; init; }

    /// <summary>Gets when the node's heartbeat was last written.</summary>
    public DateTimeOffset LastSeen { get; init; }

    /// <summary>Gets the node's executor's worker count.</summary>
    public int WorkerCount { get; init; }

    /// <summary>Gets the items the node holds (claimed, running or queued in its executor, until their outcome is written).</summary>
    public long InFlight { get; init; }

    /// <summary>Gets the queue's handlers running on the node (started and not ended), as its latest heartbeat reported.</summary>
    public int HandlersRunning { get; init; }

    /// <summary>Gets the items the node completed since it started.</summary>
    public long Completed { get; init; }

    /// <summary>Gets the items whose delivery failed on the node since it started.</summary>
    public long Failed { get; init; }

    /// <summary>Gets the version of the fleet-wide settings the node last applied.</summary>
    public long SettingsVersion { get; init; }

    /// <summary>Gets a value indicating whether an operator pinned the node's worker count locally, so it does not follow <see cref="WorkQueueClusterSettings.WorkersPerNode"/>.</summary>
    public bool PinnedLocally { get; init; }
}
