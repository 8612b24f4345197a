using System.Collections.Concurrent;

namespace BoundedWork.Tests.Internal.Items;

public sealed class FailureTests
{
    [Fact]
    public async Task ThrowingItem_DoesNotKillTheWorker_IsCountedAndReported()
    {
        var errors = new ConcurrentQueue<WorkItemFailedArguments>();
        await using var executor = TestKit.Create(workers: 1, name: "faulty", configure: o => o.OnError = errors.Enqueue);
        Action bad = () => throw new InvalidOperationException("item failed");
        var threadsBefore = await executor.RunAsync(() => Environment.CurrentManagedThreadId);

        for (var i = 0; i < 5; i++)
        {
            executor.Execute(bad);
        }

        var threadAfter = await executor.RunAsync(() => Environment.CurrentManagedThreadId);
        Assert.Equal(threadsBefore, threadAfter); // the same worker survived all five
        var statistics = TestKit.WaitForStatistics(executor, s => s.Failed == 5);
        Assert.Equal(1, statistics.LiveWorkerCount);
        Assert.Equal(5, errors.Count);
        Assert.All(errors, e =>
        {
            Assert.Equal("faulty", e.ExecutorName);
            Assert.Same(bad, e.Item.Callback);
            Assert.Equal("item failed", e.Exception.Message);
        });
    }

    [Fact]
    public async Task RunAsync_ThrowingItem_FaultsTheTaskWithTheItemsException()
    {
        var errors = new ConcurrentQueue<WorkItemFailedArguments>();
        await using var executor = TestKit.Create(configure: o => o.OnError = errors.Enqueue);

        var ex = await Assert.ThrowsAsync<FormatException>(() => executor.RunAsync<int>(() => throw new FormatException("bad")));

        Assert.Equal("bad", ex.Message);
        Assert.Empty(errors); // the awaiting caller gets it; OnError is for fire-and-forget items
        Assert.Equal(1, TestKit.WaitForStatistics(executor, s => s.Failed == 1).Failed);
    }

    [Fact]
    public async Task ThrowingCallbacks_BreakNothing_AndAreCounted()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 1, configure: o =>
        {
            o.OnError = _ => throw new InvalidOperationException("OnError is broken");
            o.OnRejected = _ => throw new InvalidOperationException("OnRejected is broken");
        });
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => throw new InvalidOperationException("item"));

        Assert.False(executor.TryExecute(() => { }));
        gate.Open();

        var statistics = TestKit.WaitForStatistics(executor, s => s.Failed == 1 && s.CallbackFailures == 2);
        Assert.Equal(7, await executor.RunAsync(() => 7));
        Assert.Equal(1, statistics.Rejected);
        Assert.Equal(1, statistics.LiveWorkerCount);
    }

    [Fact]
    public async Task OperationCanceledFromTheItemsOwnToken_CancelsTheTask()
    {
        await using var executor = TestKit.Create();
        using var cts = new CancellationTokenSource();

        var task = executor.RunAsync(() =>
        {
            cts.Cancel();
            cts.Token.ThrowIfCancellationRequested();
        }, cts.Token);

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => task);
        Assert.True(task.IsCanceled);
        TestKit.AssertConserved(TestKit.WaitForStatistics(executor, s => s.Cancelled == 1));
    }
}
