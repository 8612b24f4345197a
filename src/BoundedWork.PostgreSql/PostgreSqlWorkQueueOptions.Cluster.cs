namespace BoundedWork.PostgreSql;

/// <content>The node's membership of the queue's cluster: its name and heartbeat.</content>
public sealed partial class PostgreSqlWorkQueueOptions<T>
{
    /// <summary>The longest <see cref="NodeName"/>, in characters.</summary>
    private const int MaxNodeNameLength = 200;

    /// <summary>
    /// Gets or sets the node's name in the queue's cluster view (<c>IWorkQueueCluster.GetClusterAsync</c>), unique
    /// among the nodes consuming the queue. Set it to give nodes stable names (a pod's name).
    /// </summary>
    /// <value>
    /// Defaults to <see langword="null"/>: <c>{host}:{process id}:{8 random hex digits}</c>, the node's lease owner,
    /// new at every start (host and process id alone repeat between containers on one host network). 1 to 200
    /// characters, without control characters.
    /// </value>
    public string? NodeName { get; set; }

    /// <summary>
    /// Gets or sets how often a consuming node writes its row in the cluster view (its worker count, items in
    /// flight, counters) and re-reads the queue's fleet-wide settings. A node whose row was not written for three
    /// intervals (killed, cut off) drops out of the view, and cleanup deletes its row.
    /// </summary>
    /// <value>Defaults to 1 second. Between 100 milliseconds and 1 minute.</value>
    public TimeSpan NodeHeartbeatInterval { get; set; } = TimeSpan.FromSeconds(1);

    private void AddClusterValidationErrors(List<string> errors)
    {
        if (NodeName is { } name && (name.Length is < 1 or > MaxNodeNameLength || string.IsNullOrWhiteSpace(name) || name.Any(char.IsControl)))
        {
            errors.Add($"NodeName must be 1 to {MaxNodeNameLength} characters, not only white space, without control characters (was {name.Length} characters).");
        }

        Check(errors, nameof(NodeHeartbeatInterval), NodeHeartbeatInterval, TimeSpan.FromMilliseconds(100), TimeSpan.FromMinutes(1));
    }
}
