using System.Collections.Concurrent;

namespace BoundedWork.Tests.Internal.Watchdog;

/// <summary>Shutdown deadlines hold without the ThreadPool; synchronous shutdown and dispose; no self-deadlock.</summary>
[Collection(StarvationCollection.Name)]
public sealed class ShutdownDeadlineTests
{
    [Fact]
    public void ShutdownAsyncWithTimeout_WhileThePoolIsStarved_HandsQueuedItemsBackAtTheDeadline()
    {
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1, capacity: 16);
        var ran = 0;
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        for (var i = 0; i < 5; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref ran));
        }

        Task<ShutdownResult> shutdown;
        using (var starvation = ThreadPoolStarvation.Begin())
        {
            Task<ShutdownResult>? started = null;
            var caller = new Thread(() => started = executor.ShutdownAsync(TimeSpan.FromMilliseconds(50)));
            caller.Start();
            caller.Join();
            shutdown = started!;

            // The deadline is enforced by the executor's own thread: the abandon happens with the pool starved.
            TestKit.WaitForStatistics(executor, s => s.Abandoned == 5);
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not starved, so this proved nothing.");
            gate.Open();
            Assert.True(executor.Completion.Wait(TestKit.Safety));
        }

        var result = shutdown.WaitAsync(TestKit.Safety).GetAwaiter().GetResult();
        Assert.Equal(5, result.AbandonedItems.Count);
        Assert.Equal(0, Volatile.Read(ref ran));
        TestKit.AssertConserved(executor.GetStatistics());
    }

    [Fact]
    public void Shutdown_Synchronous_WhileThePoolIsStarved_ReturnsAtTheDeadline()
    {
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1, capacity: 16);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            var result = executor.Shutdown(TimeSpan.FromMilliseconds(20));

            Assert.Single(result.AbandonedItems);
            Assert.False(result.WorkersExited);
            Assert.True(starvation.IsStarved);
            gate.Open();
            Assert.True(executor.Completion.Wait(TestKit.Safety));
        }
    }

    [Fact]
    public void Shutdown_CalledFromItsOwnWorker_ReturnsInsteadOfDeadlocking()
    {
        var executor = TestKit.Create(workers: 1, capacity: 16);
        var log = new RunLog();
        var fromWorker = new TaskCompletionSource<ShutdownResult>(TaskCreationOptions.RunContinuationsAsynchronously);
        using var queued = new ManualResetEventSlim();
        executor.Execute(() =>
        {
            queued.WaitOrFail("the second item to be queued");
            fromWorker.SetResult(executor.Shutdown(Timeout.InfiniteTimeSpan));
        });
        executor.Execute(log.Item(1));
        queued.Set();

        var result = fromWorker.Task.WaitAsync(TestKit.Safety).GetAwaiter().GetResult();

        Assert.False(result.WorkersExited);
        Assert.True(executor.Completion.Wait(TestKit.Safety));
        Assert.Equal([1], log.Ran); // shutdown drains what was accepted
    }

    [Fact]
    public void DisposeAsyncBlockedOn_FromItsOwnWorker_DoesNotDeadlock()
    {
        var executor = TestKit.Create(workers: 1, capacity: 16);
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        executor.Execute(() =>
        {
            executor.DisposeAsync().AsTask().GetAwaiter().GetResult();
            done.SetResult();
        });

        Assert.True(done.Task.Wait(TestKit.Safety), "An item that waits synchronously on its executor's disposal deadlocked.");
        Assert.True(executor.Completion.Wait(TestKit.Safety));
    }

    [Fact]
    public void Dispose_Synchronous_DrainsWithinDisposeTimeoutAndReportsWhatItAbandons()
    {
        var rejected = new ConcurrentQueue<WorkItemRejectedArguments>();
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1, capacity: 16, configure: o =>
        {
            o.DisposeTimeout = TimeSpan.FromMilliseconds(20);
            o.OnRejected = rejected.Enqueue;
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        Action queued = () => { };
        executor.Execute(queued);

        executor.Dispose();

        var report = Assert.Single(rejected);
        Assert.Equal(RejectionReason.Abandoned, report.Reason);
        Assert.Same(queued, report.Item.Callback);
        Assert.Equal(1, executor.GetStatistics().Abandoned);
        gate.Open();
        Assert.True(executor.Completion.Wait(TestKit.Safety));
        TestKit.AssertConserved(executor.GetStatistics());
    }

    [Fact]
    public void Dispose_UsingStatement_DrainsEverything()
    {
        var log = new RunLog();
        using (var executor = TestKit.Create(workers: 2, capacity: 64))
        {
            for (var i = 0; i < 20; i++)
            {
                executor.Execute(log.Item(i));
            }
        }

        Assert.Equal(20, log.Ran.Count);
    }
}
