namespace BoundedWork.Hosting;

/// <summary>
/// A durable queue consumed by several nodes (processes), seen and operated as one: the nodes consuming it, its
/// fleet-wide settings (workers per node and the cluster limits), and how much of each limit is in use. Registered by
/// storage packages that share a queue between nodes (for example BoundedWork.PostgreSql); resolve all of them with
/// <c>IEnumerable&lt;IWorkQueueCluster&gt;</c>.
/// </summary>
/// <remarks>
/// The storage is the truth for the fleet-wide settings: a change is written there and every consuming node applies it
/// within a second or two, including nodes that were down when it was made (they read it when they start). A node whose
/// worker count an operator pinned locally keeps its pin and says so (<see cref="WorkQueueClusterNode.PinnedLocally"/>).
/// </remarks>
public interface IWorkQueueCluster
{
    /// <summary>Gets the name of the queue (and of its executor on each node).</summary>
    string QueueName { get; }

    /// <summary>Reads the cluster as it is now: its settings, its live nodes, the stored items by state and the limits' use.</summary>
    /// <param name="cancellationToken">Cancels the read.</param>
    /// <returns>The cluster, read from the storage.</returns>
    Task<WorkQueueCluster> GetClusterAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Changes the queue's fleet-wide settings atomically (read, change, write under the storage's lock, so concurrent
    /// changes from several nodes do not overwrite each other) and tells every consuming node.
    /// </summary>
    /// <param name="change">Makes the new settings from the current ones, for example <c>s =&gt; s with { MaxRunning = 20 }</c>.</param>
    /// <param name="changedBy">Who made the change, kept with the settings and in the audit log (an operator's name, a host, a tool).</param>
    /// <param name="cancellationToken">Cancels the change.</param>
    /// <returns>
    /// The settings now stored, with their new <see cref="WorkQueueClusterSettings.Version"/>; or, when the change leaves
    /// every setting as it was, the current settings, unchanged: nothing is written, the version stays, no node is told.
    /// </returns>
    /// <exception cref="ArgumentException">The new settings are not valid; the message names the setting.</exception>
    Task<WorkQueueClusterSettings> UpdateSettingsAsync(
        Func<WorkQueueClusterSettings, WorkQueueClusterSettings> change, string changedBy, CancellationToken cancellationToken = default);
}
