using BoundedWork.Benchmarks.Contenders;

namespace BoundedWork.Benchmarks.Trickle;

/// <summary>What the trickle benchmark runs items on. Each is built in its own child process.</summary>
internal sealed class TrickleContender : IDisposable
{
    private readonly Action? _dispose;
    private readonly Action<int>? _verify;

    private TrickleContender(string name, Action<TrickleItem> submit, Func<string> describe, Action? dispose = null, Action<int>? verify = null)
    {
        Name = name;
        Submit = submit;
        Describe = describe;
        _dispose = dispose;
        _verify = verify;
    }

    /// <summary>Gets the contender names the command line accepts, in table order (the idle baseline first).</summary>
    public static IReadOnlyList<string> Names { get; } = ["idle", "executor-2", "executor-2-flow-off", "executor-1", "threadpool", "channel-2", "channel-1"];

    public string Name { get; }

    public Action<TrickleItem> Submit { get; }

    public Func<string> Describe { get; }

    public static string LabelOf(string name) => name switch
    {
        "idle" => "idle baseline (pacer only, items run inline)",
        "executor-2" => "BoundedExecutor, 2 workers",
        "executor-2-flow-off" => "BoundedExecutor, 2 workers, flow off",
        "executor-1" => "BoundedExecutor, 1 worker",
        "threadpool" => "ThreadPool.UnsafeQueueUserWorkItem",
        "channel-2" => "raw channel, 2 dedicated threads",
        "channel-1" => "raw channel, 1 dedicated thread",
        _ => throw new ArgumentException($"Unknown trickle contender '{name}'; expected one of: {string.Join(", ", Names)}."),
    };

    public static TrickleContender Create(string name)
    {
        _ = LabelOf(name); // throws for an unknown name
        switch (name)
        {
            case "idle":
                return new TrickleContender(name, static item => item.Run(), static () => "inline");
            case "executor-2":
            case "executor-2-flow-off":
            case "executor-1":
                // The default configuration (the pacer's ExecutionContext, a request's, flows to each item) unless the
                // name says flow off.
                var executor = new BoundedExecutor(new BoundedExecutorOptions
                {
                    Name = "trickle",
                    WorkerCount = name == "executor-1" ? 1 : 2,
                    QueueCapacity = 1024,
                    RejectionPolicy = RejectionPolicy.Wait,
                    FlowExecutionContext = name != "executor-2-flow-off",
                });
                return new TrickleContender(
                    name,
                    item => executor.Execute(item.Run),
                    () => executor.GetStatistics().ToString(),
                    () => executor.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult(),
                    total => VerifyLedger(executor, total));
            case "threadpool":
                return new TrickleContender(
                    name,
                    static item => ThreadPool.UnsafeQueueUserWorkItem(static i => i.Run(), item, preferLocal: false),
                    static () => $"ThreadPool: {ThreadPool.ThreadCount} threads, {ThreadPool.PendingWorkItemCount} pending.");
            default:
                var pool = new ChannelWorkerPool(name == "channel-2" ? 2 : 1, 1024);
                return new TrickleContender(name, item => pool.Submit(item.Run), () => $"Channel: {pool.Count} queued.", pool.Dispose);
        }
    }

    /// <summary>After the run: checks the contender's own accounting, where it has one (throws if it does not add up).</summary>
    public void Verify(int submitted) => _verify?.Invoke(submitted);

    public void Dispose() => _dispose?.Invoke();

    private static void VerifyLedger(BoundedExecutor executor, int submitted)
    {
        // An item is counted as completed just after it returns, so allow the last one a moment.
        var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        var statistics = executor.GetStatistics();
        while (statistics.Completed < submitted && DateTime.UtcNow < deadline)
        {
            Thread.Sleep(1);
            statistics = executor.GetStatistics();
        }

        if (statistics.Submitted != submitted || statistics.Completed != submitted || statistics.QueueLength != 0)
        {
            throw new InvalidOperationException($"The executor's statistics do not match the {submitted} items submitted: {statistics}");
        }
    }
}
