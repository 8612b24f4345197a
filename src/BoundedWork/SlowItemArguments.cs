namespace BoundedWork;

/// <summary>
/// Arguments of <see cref="BoundedExecutorOptions.OnSlowItem"/>: an item ran, or waited in the queue, for longer than
/// its threshold.
/// </summary>
public readonly struct SlowItemArguments
{
    internal SlowItemArguments(string executorName, WorkItem item, string workerName, TimeSpan elapsed, TimeSpan threshold, SlowItemKind kind)
    {
        ExecutorName = executorName;
        Item = item;
        WorkerName = workerName;
        Elapsed = elapsed;
        Threshold = threshold;
        Kind = kind;
    }

    /// <summary>Gets the name of the executor.</summary>
    public string ExecutorName { get; }

    /// <summary>Gets the slow item.</summary>
    public WorkItem Item { get; }

    /// <summary>Gets the name of the worker thread running the item, or the one that took it from the queue (<c>payments#3</c>).</summary>
    public string WorkerName { get; }

    /// <summary>Gets how long the item had been running, or had waited in the queue, when it was reported.</summary>
    public TimeSpan Elapsed { get; }

    /// <summary>Gets the threshold it passed.</summary>
    public TimeSpan Threshold { get; }

    /// <summary>Gets which threshold it passed.</summary>
    public SlowItemKind Kind { get; }
}
