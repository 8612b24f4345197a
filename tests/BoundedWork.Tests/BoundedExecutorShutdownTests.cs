namespace BoundedWork.Tests;

public sealed class BoundedExecutorShutdownTests
{
    [Fact]
    public async Task Shutdown_StopsAcceptingAtOnce_DrainsTheQueue_AndCompletesWhenWorkersExit()
    {
        var executor = TestKit.Create(workers: 1, capacity: 8);
        using var gate = new Gate();
        var log = new RunLog();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        for (var i = 1; i <= 3; i++)
        {
            executor.Execute(log.Item(i));
        }

        var shutdown = executor.ShutdownAsync();

        Assert.True(executor.IsShutdown);
        Assert.False(executor.TryExecute(log.Item(99)));
        Assert.False(shutdown.IsCompleted);
        gate.Open();
        var result = await shutdown.WaitAsync(TestKit.Safety);
        Assert.True(result.Drained);
        Assert.Equal("Drained: every accepted item ran", result.ToString());
        Assert.Empty(result.AbandonedItems);
        Assert.True(executor.Completion.IsCompletedSuccessfully);
        Assert.Equal([1, 2, 3], log.Ran);
        Assert.Equal(0, executor.GetStatistics().LiveWorkerCount);
    }

    [Fact]
    public async Task ShutdownDeadline_HandsBackEveryQueuedItemOldestFirst_AndCancelsAwaitedOnes()
    {
        var executor = TestKit.Create(workers: 1, capacity: 8);
        using var gate = new Gate();
        var log = new RunLog();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var queued = Enumerable.Range(1, 3).Select(log.Item).ToArray();
        foreach (var item in queued)
        {
            executor.Execute(item);
        }

        Func<int> awaitedWork = () => 4;
        var awaited = executor.RunAsync(awaitedWork);
        using var deadline = new CancellationTokenSource();

        var shutdown = executor.ShutdownAsync(deadline.Token);
        await deadline.CancelAsync();
        var result = await shutdown.WaitAsync(TestKit.Safety);

        Assert.Equal([queued[0], queued[1], queued[2], awaitedWork], result.AbandonedItems.Select(i => i.Callback));
        Assert.Equal([false, false, false, true], result.AbandonedItems.Select(i => i.IsAwaited));
        Assert.False(result.WorkersExited); // the gated item is still running: never interrupted
        Assert.False(result.Drained);
        Assert.Equal("4 items abandoned; workers still running items past the deadline (they finish on their own)", result.ToString());
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => awaited);
        Assert.True(awaited.IsCanceled);

        gate.Open();
        await executor.Completion.WaitAsync(TestKit.Safety);
        Assert.Empty(log.Ran); // nothing that was handed back ran
        var statistics = executor.GetStatistics();
        Assert.Equal(4, statistics.Abandoned);
        Assert.Equal(1, statistics.Completed);
        TestKit.AssertConserved(statistics);

        foreach (var item in result.AbandonedItems.Where(i => !i.IsAwaited))
        {
            item.Invoke(); // the caller can run them elsewhere
        }

        Assert.Equal([1, 2, 3], log.Ran);
    }

    [Fact]
    public async Task ShutdownWithZeroTimeout_AbandonsTheQueueImmediately()
    {
        var executor = TestKit.Create(workers: 1, capacity: 8);
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        executor.Execute(() => { });

        var result = await executor.ShutdownAsync(TimeSpan.Zero);

        Assert.Equal(2, result.AbandonedItems.Count);
        gate.Open();
        await executor.Completion.WaitAsync(TestKit.Safety);
        TestKit.AssertConserved(executor.GetStatistics());
    }

    [Fact]
    public async Task Shutdown_WakesProducersWaitingForRoom_AndRejectsThem()
    {
        var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait);
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        var waiting = executor.ExecuteAsync(() => { }).AsTask();
        Assert.False(waiting.IsCompleted);

        var shutdown = executor.ShutdownAsync();

        var ex = await Assert.ThrowsAsync<RejectedExecutionException>(() => waiting.WaitAsync(TestKit.Safety));
        Assert.Equal(RejectionReason.ShutDown, ex.Reason);
        gate.Open();
        Assert.True((await shutdown).Drained);
        TestKit.AssertConserved(executor.GetStatistics());
    }

    [Fact]
    public async Task Shutdown_CalledTwice_BothComplete()
    {
        var executor = TestKit.Create(workers: 2);
        executor.Execute(() => { });

        var first = executor.ShutdownAsync();
        var second = executor.ShutdownAsync();

        Assert.True((await first).Drained);
        Assert.True((await second).Drained);
    }

    [Fact]
    public async Task DisposeAsync_DrainsGracefully()
    {
        var executor = TestKit.Create(workers: 1, capacity: 100);
        var ran = 0;
        for (var i = 0; i < 100; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref ran));
        }

        await executor.DisposeAsync();

        Assert.Equal(100, ran);
        Assert.True(executor.Completion.IsCompleted);
    }

    [Fact]
    public async Task Shutdown_RetiredAndLiveWorkers_AllExit()
    {
        var executor = TestKit.Create(workers: 4);
        executor.Resize(2);
        executor.Resize(3);

        await executor.ShutdownAsync().WaitAsync(TestKit.Safety);

        var statistics = executor.GetStatistics();
        Assert.Equal(0, statistics.LiveWorkerCount);
        Assert.True(executor.Completion.IsCompletedSuccessfully);
    }

    [Fact]
    public async Task DisposeAsync_AfterADeadlinePassed_ReturnsWithoutWaitingForRunningItems()
    {
        var executor = TestKit.Create(workers: 1);
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        await executor.ShutdownAsync(TimeSpan.Zero);

        await executor.DisposeAsync().AsTask().WaitAsync(TestKit.Safety);

        Assert.False(executor.Completion.IsCompleted); // the item is still running, never interrupted
        gate.Open();
        await executor.Completion.WaitAsync(TestKit.Safety);
    }

    [Fact]
    public void AnItemBlockingOnShutdownAsyncOfItsOwnExecutor_DoesNotDeadlock()
    {
        var executor = TestKit.Create(workers: 2);
        var done = new TaskCompletionSource<ShutdownResult>(TaskCreationOptions.RunContinuationsAsynchronously);

        executor.Execute(() => done.SetResult(executor.ShutdownAsync().GetAwaiter().GetResult()));

        Assert.True(done.Task.Wait(TestKit.Safety), "An item blocking on its own executor's shutdown deadlocked.");
        Assert.False(done.Task.Result.WorkersExited);
        Assert.True(executor.Completion.Wait(TestKit.Safety));
    }
}
