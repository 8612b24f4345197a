using System.Collections.Concurrent;

namespace BoundedWork.Tests;

public sealed class EdgeCaseTests
{
    [Theory]
    [InlineData(RejectionPolicy.CallerRuns)]
    [InlineData(RejectionPolicy.Wait)]
    public async Task AnItemThatKeepsSubmittingIntoItsOwnFullQueue_IsStoppedByTheDepthLimitNotAStackOverflow(RejectionPolicy policy)
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: policy);
        var depth = 0;
        var deepest = 0;
        var rejections = new ConcurrentQueue<RejectedExecutionException>();
        void Recurse()
        {
            var level = Interlocked.Increment(ref depth);
            deepest = Math.Max(deepest, level);
            try
            {
                if (level < 100_000)
                {
                    executor.Execute(Recurse);
                }
            }
            catch (RejectedExecutionException ex)
            {
                rejections.Enqueue(ex);
            }
            finally
            {
                Interlocked.Decrement(ref depth);
            }
        }

        using var gate = new Gate();
        if (policy == RejectionPolicy.CallerRuns)
        {
            executor.Execute(gate.Blocker);
            gate.WaitEntered();
            executor.Execute(() => { });
            Recurse(); // the test thread is the caller that runs items
        }
        else
        {
            await executor.RunAsync(() =>
            {
                executor.Execute(() => { }); // fills the queue: the worker itself is busy here
                Recurse();
            });
        }

        gate.Open();
        Assert.NotEmpty(rejections);
        Assert.All(rejections, ex => Assert.Equal(RejectionReason.CallerRunsTooDeep, ex.Reason));
        Assert.True(deepest < 100);
        await executor.ShutdownAsync();
        TestKit.AssertConserved(executor.GetStatistics());
    }

    [Fact]
    public async Task ThreadInterrupt_OnAParkedWorker_NeitherKillsItNorLosesAWakeUp()
    {
        await using var executor = TestKit.Create(workers: 1);
        var thread = await executor.RunAsync(() => Thread.CurrentThread);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety));

        thread.Interrupt();
        var ranOn = await executor.RunAsync(() => Thread.CurrentThread);

        Assert.Same(thread, ranOn);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety));
        for (var i = 0; i < 100; i++)
        {
            Assert.Same(thread, await executor.RunAsync(() => Thread.CurrentThread));
        }

        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.LiveWorkerCount);
        Assert.Equal(0, statistics.WorkersReplaced);
        Assert.Equal(0, statistics.Failed);
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

    [Theory]
    [InlineData(1)]
    [InlineData(64)]
    [InlineData(65)]
    [InlineData(96)]
    [InlineData(256)]
    public void DefaultWorkerCounts_AreValidOnAnyProcessorCount(int processorCount)
    {
        var options = new BoundedExecutorOptions
        {
            WorkerCount = BoundedExecutorOptions.DefaultWorkerCount(processorCount),
            MaxWorkerCount = BoundedExecutorOptions.DefaultMaxWorkerCount(processorCount),
        };

        Assert.Empty(options.GetValidationErrors());
        Assert.Equal(processorCount, options.WorkerCount);
        Assert.True(options.MaxWorkerCount >= 64);
    }

    [Fact]
    public void DefaultOptions_AreValidOnThisMachine() => Assert.Empty(new BoundedExecutorOptions().GetValidationErrors());

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
