namespace BoundedWork;

/// <summary>
/// Arguments of <see cref="BoundedExecutorOptions.OnThreadPoolBlockingWait"/>: a ThreadPool thread is about to
/// block waiting for an executor, the pattern that starves the shared pool. The callback runs on that thread, just
/// before it blocks, so it can capture the caller's stack.
/// </summary>
public readonly struct ThreadPoolBlockingWaitArguments
{
    internal ThreadPoolBlockingWaitArguments(string executorName, BlockingWaitKind kind, long total)
    {
        ExecutorName = executorName;
        Kind = kind;
        Total = total;
    }

    /// <summary>Gets the name of the executor the thread waits for.</summary>
    public string ExecutorName { get; }

    /// <summary>Gets what the thread blocks on.</summary>
    public BlockingWaitKind Kind { get; }

    /// <summary>Gets how many such waits this executor has seen, this one included.</summary>
    public long Total { get; }
}
