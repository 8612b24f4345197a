namespace BoundedWork;

/// <summary>Which threshold an item passed.</summary>
public enum SlowItemKind
{
    /// <summary>The item has been running on a worker for longer than <see cref="BoundedExecutorOptions.SlowItemThreshold"/> (reported while it still runs).</summary>
    Running = 0,

    /// <summary>The item waited in the queue for longer than <see cref="BoundedExecutorOptions.QueueWaitThreshold"/> (reported when a worker takes it).</summary>
    Queued = 1,
}
