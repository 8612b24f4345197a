namespace BoundedWork.Diagnostics.Internal;

/// <summary>One reading of the counters, once per interval.</summary>
internal sealed record CounterSample(DateTime At, string Name, string? Executor, double Value);

/// <summary>One frame of a managed stack: the method (namespace, type and name) and its module.</summary>
internal sealed record Frame(string Method, string Module);

/// <summary>One stack sample of one thread (its OS thread id), innermost frame first.</summary>
internal sealed record ThreadSample(int ThreadId, IReadOnlyList<Frame> Frames);

/// <summary>The runtime's ThreadPool counters the diagnosis reads (the names of the <c>System.Runtime</c> EventCounters).</summary>
internal static class CounterNames
{
    public const string PoolThreads = "threadpool-thread-count";
    public const string PoolQueue = "threadpool-queue-length";
    public const string PoolCompleted = "threadpool-completed-items-count";
    public const string Cpu = "cpu-usage";
}
