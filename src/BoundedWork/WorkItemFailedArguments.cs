namespace BoundedWork;

/// <summary>Arguments of <see cref="BoundedExecutorOptions.OnError"/>: a fire-and-forget item threw.</summary>
public readonly struct WorkItemFailedArguments
{
    internal WorkItemFailedArguments(string executorName, WorkItem item, Exception exception)
    {
        ExecutorName = executorName;
        Item = item;
        Exception = exception;
    }

    /// <summary>Gets the name of the executor that ran the item.</summary>
    public string ExecutorName { get; }

    /// <summary>Gets the item that threw.</summary>
    public WorkItem Item { get; }

    /// <summary>Gets the exception the item threw.</summary>
    public Exception Exception { get; }
}
