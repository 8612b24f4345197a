namespace BoundedWork;

/// <summary>An item running on a worker thread now, as seen by <see cref="BoundedExecutor.GetRunningItems"/>.</summary>
public sealed record RunningWorkItem
{
    /// <summary>Gets the item.</summary>
    public required WorkItem Item { get; init; }

    /// <summary>Gets the name of the worker thread running it (<c>payments#3</c>).</summary>
    public required string WorkerName { get; init; }

    /// <summary>Gets how long it has been running.</summary>
    public required TimeSpan Elapsed { get; init; }
}
