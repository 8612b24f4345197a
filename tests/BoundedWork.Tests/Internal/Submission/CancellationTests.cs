namespace BoundedWork.Tests.Internal.Submission;

public sealed class CancellationTests
{
    [Fact]
    public async Task RunAsync_CancelledBeforeStart_NeverRunsAndTheTaskIsCancelled()
    {
        await using var executor = TestKit.Create(workers: 1);
        using var gate = new Gate();
        using var cts = new CancellationTokenSource();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var ran = false;

        var task = executor.RunAsync(() => ran = true, cts.Token);
        await cts.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => task);
        Assert.True(task.IsCanceled);
        gate.Open();
        await executor.ShutdownAsync();
        Assert.False(ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Cancelled);
        Assert.Equal(1, statistics.Completed);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task RunAsync_AlreadyCancelledToken_ReturnsACancelledTaskAndCountsIt()
    {
        await using var executor = TestKit.Create();

        var task = executor.RunAsync(() => 1, new CancellationToken(canceled: true));

        Assert.True(task.IsCanceled);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Submitted);
        Assert.Equal(1, statistics.Cancelled);
    }

    [Fact]
    public async Task RunAsync_CancelledAfterStart_RunsToCompletion()
    {
        await using var executor = TestKit.Create();
        using var gate = new Gate();
        using var cts = new CancellationTokenSource();

        var task = executor.RunAsync(() =>
        {
            gate.Blocker();
            return 5;
        }, cts.Token);
        gate.WaitEntered();
        await cts.CancelAsync();
        gate.Open();

        Assert.Equal(5, await task);
        Assert.Equal(0, executor.GetStatistics().Cancelled);
    }

    [Fact]
    public async Task CancelledItems_AreSkippedInOrder_AndTheOthersRun()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 32);
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var sources = Enumerable.Range(0, 10).Select(_ => new CancellationTokenSource()).ToArray();
        var tasks = sources.Select((s, i) => executor.RunAsync(() => i, s.Token)).ToArray();

        for (var i = 0; i < 10; i += 2)
        {
            await sources[i].CancelAsync();
        }

        gate.Open();
        for (var i = 0; i < 10; i++)
        {
            if (i % 2 == 0)
            {
                await Assert.ThrowsAnyAsync<OperationCanceledException>(() => tasks[i]);
            }
            else
            {
                Assert.Equal(i, await tasks[i]);
            }
        }

        foreach (var source in sources)
        {
            source.Dispose();
        }

        await executor.ShutdownAsync();
        var statistics = executor.GetStatistics();
        Assert.Equal(5, statistics.Cancelled);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task ARunAsyncItemCancelledWhileQueued_KeepsItsSlotUntilAWorkerPassesIt_ThenCountsAsCancelled()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        using var cts = new CancellationTokenSource();
        var ran = false;
        var task = executor.RunAsync(() => ran = true, cts.Token);

        await cts.CancelAsync();

        Assert.True(task.IsCanceled);
        var whileQueued = executor.GetStatistics();
        Assert.Equal(1, whileQueued.QueueLength);
        Assert.Equal(0, whileQueued.Cancelled);
        Assert.False(executor.TryExecute(() => { })); // the slot is still held
        gate.Open();
        await executor.ShutdownAsync();
        Assert.False(ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Cancelled);
        Assert.Equal(1, statistics.Rejected);
        TestKit.AssertConserved(statistics);
    }
}
