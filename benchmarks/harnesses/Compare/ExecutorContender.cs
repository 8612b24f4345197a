namespace BoundedWork.Benchmarks.Compare;

/// <summary>
/// <see cref="BoundedExecutor.Execute(Action, CancellationToken)"/> with W workers, capacity 1024 and the Wait policy
/// with no timeout (a producer blocks until there is room, as Java's <c>queue.put</c> does). <c>executor</c> is the
/// default configuration, <c>FlowExecutionContext = true</c>: each item captures its producer's ExecutionContext (a
/// request's, see <see cref="Infrastructure.RequestContext"/>) and runs in it, which is what users get.
/// <c>executor-flow-off</c> sets <c>FlowExecutionContext = false</c>, as Java's pool, which carries no context.
/// </summary>
internal sealed class ExecutorContender : ICompareContender
{
    private static readonly TimeSpan s_settleTimeout = TimeSpan.FromSeconds(10);

    private readonly BoundedExecutor _executor;
    private readonly FencedRounds _rounds;
    private readonly CompareItem _item;
    private readonly int _items;

    public ExecutorContender(int producers, int workers, int items, bool flowExecutionContext, string item)
    {
        _items = items;
        _item = new CompareItem(item);
        Name = flowExecutionContext ? "executor" : "executor-flow-off";
        _executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "compare",
            WorkerCount = workers,
            MaxWorkerCount = Math.Max(workers, 1),
            QueueCapacity = CompareHarness.Capacity,
            RejectionPolicy = RejectionPolicy.Wait,
            WaitTimeout = Timeout.InfiniteTimeSpan,
            FlowExecutionContext = flowExecutionContext,
        });
        var executor = _executor;
        var work = _item.Work;
        _rounds = new FencedRounds(
            producers,
            workers,
            items,
            (_, count) =>
            {
                for (var i = 0; i < count; i++)
                {
                    executor.Execute(work);
                }
            },
            fence => executor.Execute(fence),
            () => executor.GetStatistics().ToString());
    }

    public string Name { get; }

    public RoundResult RunRound()
    {
        var before = _executor.GetStatistics().Completed;
        var countBefore = _item.Count;
        var result = _rounds.Run();
        _item.CheckRound(countBefore, _items, Name);

        // Outside the clock. At the fence every worker is running a fence item, so the queue is empty and every item
        // of the round has completed (this also proves the fence is sound: no item was still queued behind it).
        var atFence = _executor.GetStatistics();
        if (atFence.QueueLength != 0 || atFence.Completed < before + _items || atFence.Completed > before + _items + _rounds.Workers)
        {
            throw new InvalidOperationException(
                $"At the fence the executor should have an empty queue and {before + _items} to {before + _items + _rounds.Workers} completed items: {atFence}");
        }

        // Then every fence item completes too, and nothing else happened.
        var expected = before + _items + _rounds.Workers;
        var deadline = DateTime.UtcNow + s_settleTimeout;
        var statistics = _executor.GetStatistics();
        while (statistics.Completed < expected && DateTime.UtcNow < deadline)
        {
            Thread.Sleep(1);
            statistics = _executor.GetStatistics();
        }

        if (statistics.Completed != expected || statistics.QueueLength != 0 || statistics.Failed != 0 || statistics.Rejected != 0)
        {
            throw new InvalidOperationException($"The executor's round does not add up: expected {expected} completed and an empty queue. {statistics}");
        }

        return result;
    }

    public void Dispose()
    {
        _rounds.Dispose();
        var result = _executor.ShutdownAsync(s_settleTimeout).GetAwaiter().GetResult();
        if (!result.Drained)
        {
            Console.Error.WriteLine($"Executor shutdown: {result.AbandonedItems.Count} abandoned, workers exited: {result.WorkersExited}.");
        }
    }
}
