using BoundedWork.Benchmarks.Contenders;

namespace BoundedWork.Benchmarks.Trickle;

/// <summary>What the trickle benchmark runs items on. Each is built in its own child process.</summary>
internal sealed class TrickleContender : IDisposable
{
    private readonly Action? _dispose;

    private TrickleContender(string name, string label, Action<TrickleItem> submit, Func<string> describe, Action? dispose = null)
    {
        Name = name;
        Label = label;
        Submit = submit;
        Describe = describe;
        _dispose = dispose;
    }

    /// <summary>Gets the contender names the command line accepts, in table order (the idle baseline first).</summary>
    public static IReadOnlyList<string> Names { get; } = ["idle", "executor-2", "executor-1", "threadpool", "channel-2", "channel-1"];

    public string Name { get; }

    public string Label { get; }

    public Action<TrickleItem> Submit { get; }

    public Func<string> Describe { get; }

    public static string LabelOf(string name) => name switch
    {
        "idle" => "idle baseline (pacer only, items run inline)",
        "executor-2" => "BoundedExecutor, 2 workers",
        "executor-1" => "BoundedExecutor, 1 worker",
        "threadpool" => "ThreadPool.UnsafeQueueUserWorkItem",
        "channel-2" => "raw channel, 2 dedicated threads",
        "channel-1" => "raw channel, 1 dedicated thread",
        _ => throw new ArgumentException($"Unknown trickle contender '{name}'; expected one of: {string.Join(", ", Names)}."),
    };

    public static TrickleContender Create(string name)
    {
        var label = LabelOf(name);
        switch (name)
        {
            case "idle":
                return new TrickleContender(name, label, static item => item.Run(), static () => "inline");
            case "executor-2":
            case "executor-1":
                var executor = new BoundedExecutor(new BoundedExecutorOptions
                {
                    Name = "trickle",
                    WorkerCount = name == "executor-2" ? 2 : 1,
                    QueueCapacity = 1024,
                    RejectionPolicy = RejectionPolicy.Wait,
                    FlowExecutionContext = false,
                });
                return new TrickleContender(
                    name,
                    label,
                    item => executor.Execute(item.Run),
                    () => executor.GetStatistics().ToString(),
                    () => executor.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult());
            case "threadpool":
                return new TrickleContender(
                    name,
                    label,
                    static item => ThreadPool.UnsafeQueueUserWorkItem(static i => i.Run(), item, preferLocal: false),
                    static () => $"ThreadPool: {ThreadPool.ThreadCount} threads, {ThreadPool.PendingWorkItemCount} pending.");
            default:
                var pool = new ChannelWorkerPool(name == "channel-2" ? 2 : 1, 1024);
                return new TrickleContender(name, label, item => pool.Submit(item.Run), () => $"Channel: {pool.Count} queued.", pool.Dispose);
        }
    }

    public void Dispose() => _dispose?.Invoke();
}
