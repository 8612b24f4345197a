namespace BoundedWork;

/// <summary>
/// Arguments of <see cref="BoundedExecutorOptions.OnRejected"/>: an item was rejected, discarded or evicted
/// and will not run.
/// </summary>
public readonly struct WorkItemRejectedArguments
{
    internal WorkItemRejectedArguments(string executorName, WorkItem item, RejectionReason reason)
    {
        ExecutorName = executorName;
        Item = item;
        Reason = reason;
    }

    /// <summary>Gets the name of the executor that did not run the item.</summary>
    public string ExecutorName { get; }

    /// <summary>Gets the item that will not run.</summary>
    public WorkItem Item { get; }

    /// <summary>Gets why the item will not run.</summary>
    public RejectionReason Reason { get; }
}
