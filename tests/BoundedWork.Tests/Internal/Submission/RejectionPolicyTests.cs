using System.Collections.Concurrent;

namespace BoundedWork.Tests.Internal.Submission;

/// <summary>
/// Saturation under each policy: one worker held on a gate, a queue of two, then a third item. Exactly which
/// items run, which are rejected and which one is evicted.
/// </summary>
public sealed class RejectionPolicyTests
{
    private readonly ConcurrentQueue<WorkItemRejectedArguments> _rejections = new();
    private readonly RunLog _log = new();

    [Fact]
    public async Task Abort_FullQueue_ThrowsReportsAndCountsAndRunsTheOthers()
    {
        await using var saturation = Saturated(RejectionPolicy.Abort);
        var (executor, gate, third) = saturation;

        var ex = Assert.Throws<RejectedExecutionException>(() => executor.Execute(third));

        Assert.Equal(RejectionReason.QueueFull, ex.Reason);
        Assert.Equal("saturated", ex.ExecutorName);
        Assert.Contains("queue is full", ex.Message, StringComparison.Ordinal);
        var rejection = Assert.Single(_rejections);
        Assert.Same(third, rejection.Item.Callback);
        Assert.Equal(RejectionReason.QueueFull, rejection.Reason);
        await DrainAsync(executor, gate);
        Assert.Equal([1, 2], _log.Ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Rejected);
        Assert.Equal(3, statistics.Completed); // the blocker and items 1 and 2
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task TryExecute_FullQueue_ReturnsFalseWithoutBlockingOrRunningInline_WhateverThePolicy()
    {
        foreach (var policy in Enum.GetValues<RejectionPolicy>())
        {
            _rejections.Clear();
            await using var saturation = Saturated(policy);
            var (executor, gate, third) = saturation;

            Assert.False(executor.TryExecute(third));

            Assert.Equal(RejectionReason.QueueFull, Assert.Single(_rejections).Reason);
            await DrainAsync(executor, gate);
            Assert.DoesNotContain(3, _log.Ran);
            Assert.Equal(1, executor.GetStatistics().Rejected);
        }
    }

    [Fact]
    public async Task CallerRuns_FullQueue_RunsTheItemOnTheSubmittingThread()
    {
        await using var saturation = Saturated(RejectionPolicy.CallerRuns);
        var (executor, gate, _) = saturation;
        int? ranOn = null;

        executor.Execute(() => ranOn = Environment.CurrentManagedThreadId);

        Assert.Equal(Environment.CurrentManagedThreadId, ranOn);
        await DrainAsync(executor, gate);
        Assert.Equal([1, 2], _log.Ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.CallerRuns);
        Assert.Equal(4, statistics.Completed);
        Assert.Empty(_rejections);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task CallerRuns_ThrowingItem_IsCountedAndReportedNotThrownAtTheCaller()
    {
        var errors = new ConcurrentQueue<WorkItemFailedArguments>();
        await using var saturation = Saturated(RejectionPolicy.CallerRuns, o => o.OnError = errors.Enqueue);
        var (executor, gate, _) = saturation;

        executor.Execute(() => throw new InvalidOperationException("boom"));

        Assert.Equal("boom", Assert.Single(errors).Exception.Message);
        await DrainAsync(executor, gate);
        Assert.Equal(1, executor.GetStatistics().Failed);
    }

    [Fact]
    public async Task Discard_FullQueue_DropsTheNewItemAndReportsIt()
    {
        await using var saturation = Saturated(RejectionPolicy.Discard);
        var (executor, gate, third) = saturation;

        executor.Execute(third);

        var rejection = Assert.Single(_rejections);
        Assert.Same(third, rejection.Item.Callback);
        Assert.Equal(RejectionReason.Discarded, rejection.Reason);
        await DrainAsync(executor, gate);
        Assert.Equal([1, 2], _log.Ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Discarded);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task DiscardOldest_FullQueue_EvictsTheOldestQueuedItemAndQueuesTheNewOne()
    {
        await using var saturation = Saturated(RejectionPolicy.DiscardOldest);
        var (executor, gate, third) = saturation;
        var first = _queued[0];

        executor.Execute(third);

        var rejection = Assert.Single(_rejections);
        Assert.Same(first, rejection.Item.Callback);
        Assert.Equal(RejectionReason.Evicted, rejection.Reason);
        await DrainAsync(executor, gate);
        Assert.Equal([2, 3], _log.Ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Discarded);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task DiscardOldest_EvictedRunAsyncItem_FaultsItsTask()
    {
        await using var executor = TestKit.Create(capacity: 1, policy: RejectionPolicy.DiscardOldest);
        using var gate = new Gate(); // disposed (opened) before the executor, which waits for the gated worker
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var victim = executor.RunAsync(() => 1);

        var survivor = executor.RunAsync(() => 2);

        var ex = await Assert.ThrowsAsync<RejectedExecutionException>(() => victim);
        Assert.Equal(RejectionReason.Evicted, ex.Reason);
        gate.Open();
        Assert.Equal(2, await survivor);
    }

    [Fact]
    public async Task Wait_FullQueue_ExecuteAsyncWaitsForRoomThenQueues()
    {
        await using var saturation = Saturated(RejectionPolicy.Wait);
        var (executor, gate, third) = saturation;

        var submit = executor.ExecuteAsync(third).AsTask();

        Assert.False(submit.IsCompleted);
        gate.Open();
        await submit.WaitAsync(TestKit.Safety);
        await executor.ShutdownAsync();
        Assert.Equal([1, 2, 3], _log.Ran);
        Assert.Empty(_rejections);
    }

    [Fact]
    public async Task Wait_FullQueue_ExecuteBlocksUntilRoomThenQueues()
    {
        await using var saturation = Saturated(RejectionPolicy.Wait);
        var (executor, gate, third) = saturation;
        using var submitted = new ManualResetEventSlim();
        var submitter = new Thread(() =>
        {
            executor.Execute(third);
            submitted.Set();
        });
        submitter.Start();
        Assert.True(SpinWait.SpinUntil(() => (submitter.ThreadState & ThreadState.WaitSleepJoin) != 0, TestKit.Safety));
        Assert.False(submitted.IsSet);

        gate.Open();

        submitted.WaitOrFail("the blocked submitter");
        await executor.ShutdownAsync();
        Assert.Equal([1, 2, 3], _log.Ran);
    }

    [Fact]
    public async Task Wait_QueueStaysFull_RejectsAfterTheTimeout()
    {
        await using var saturation = Saturated(RejectionPolicy.Wait, o => o.WaitTimeout = TimeSpan.FromMilliseconds(20));
        var (executor, gate, third) = saturation;

        var ex = Assert.Throws<RejectedExecutionException>(() => executor.Execute(third));
        var asyncEx = await Assert.ThrowsAsync<RejectedExecutionException>(() => executor.ExecuteAsync(third).AsTask());
        var runEx = await Assert.ThrowsAsync<RejectedExecutionException>(() => executor.RunAsync(() => 3));

        Assert.Equal(RejectionReason.WaitTimedOut, ex.Reason);
        Assert.Equal(RejectionReason.WaitTimedOut, asyncEx.Reason);
        Assert.Equal(RejectionReason.WaitTimedOut, runEx.Reason);
        Assert.Equal(3, _rejections.Count);
        await DrainAsync(executor, gate);
        var statistics = executor.GetStatistics();
        Assert.Equal(3, statistics.Rejected);
        TestKit.AssertConserved(statistics);
    }

    /// <summary>
    /// Regression: a <c>RunAsync</c> item's task was faulted before <see cref="BoundedExecutorOptions.OnRejected"/> was
    /// told, so a caller awaiting the task could find the rejection not reported yet (what made
    /// <see cref="Wait_QueueStaysFull_RejectsAfterTheTimeout"/> count two rejections instead of three once under load,
    /// and then wait 30 s for its gated worker on dispose). The callback here looks at the task when it is told.
    /// </summary>
    [Fact]
    public async Task RunAsync_RejectedAfterWaitingForRoom_IsReportedBeforeItsTaskFaults()
    {
        var submitted = new TaskCompletionSource<Task<int>>(TaskCreationOptions.RunContinuationsAsynchronously);
        bool? faultedBeforeReported = null;
        await using var saturation = Saturated(RejectionPolicy.Wait, o =>
        {
            o.WaitTimeout = TimeSpan.FromMilliseconds(20);
            o.OnRejected = rejection =>
            {
                // On the watchdog thread, at the timeout: the task must not have faulted yet.
                Assert.True(submitted.Task.Wait(TestKit.Safety), "RunAsync never returned.");
                faultedBeforeReported = submitted.Task.Result.IsCompleted;
                _rejections.Enqueue(rejection);
            };
        });
        var (executor, gate, _) = saturation;

        var run = executor.RunAsync(() => 3);
        submitted.SetResult(run);

        var ex = await Assert.ThrowsAsync<RejectedExecutionException>(() => run);
        Assert.Equal(RejectionReason.WaitTimedOut, ex.Reason);
        Assert.Single(_rejections);
        Assert.False(faultedBeforeReported, "The task faulted before OnRejected was told.");
        await DrainAsync(executor, gate);
    }

    [Fact]
    public async Task Wait_CancelledWhileWaiting_ThrowsAndCountsCancelled()
    {
        await using var saturation = Saturated(RejectionPolicy.Wait);
        var (executor, gate, third) = saturation;
        using var cts = new CancellationTokenSource();

        var submit = executor.ExecuteAsync(third, cts.Token).AsTask();
        var run = executor.RunAsync(() => 3, cts.Token);
        Assert.False(submit.IsCompleted);
        await cts.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => submit);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => run);
        Assert.True(run.IsCanceled);
        await DrainAsync(executor, gate);
        var statistics = executor.GetStatistics();
        Assert.Equal(2, statistics.Cancelled);
        Assert.Empty(_rejections);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task Wait_CalledFromOwnWorkerOnAFullQueue_RunsInlineInsteadOfDeadlocking()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait);
        using var gate = new Gate();

        var outer = executor.RunAsync(() =>
        {
            executor.Execute(gate.Blocker); // fills the queue: the only worker is this one
            var ranInline = false;
            executor.Execute(() => ranInline = executor.IsWorkerThread);
            gate.Open();
            return ranInline;
        });

        Assert.True(await outer.WaitAsync(TestKit.Safety));
        Assert.Equal(1, executor.GetStatistics().CallerRuns);
    }

    [Fact]
    public async Task RunAsync_FullQueueUnderAbortAndDiscard_FaultsTheTaskWithTheReason()
    {
        foreach (var (policy, reason) in new[] { (RejectionPolicy.Abort, RejectionReason.QueueFull), (RejectionPolicy.Discard, RejectionReason.Discarded) })
        {
            await using var saturation = Saturated(policy);
            var (executor, gate, _) = saturation;

            var ex = await Assert.ThrowsAsync<RejectedExecutionException>(() => executor.RunAsync(() => 3));

            Assert.Equal(reason, ex.Reason);
            gate.Open();
        }
    }

    [Fact]
    public async Task AfterShutdown_EveryPolicyRejects_CallerRunsIncluded()
    {
        foreach (var policy in Enum.GetValues<RejectionPolicy>())
        {
            _rejections.Clear();
            var executor = TestKit.Create(policy: policy, configure: o => o.OnRejected = _rejections.Enqueue);
            await executor.ShutdownAsync();
            var ran = false;

            Assert.False(executor.TryExecute(() => ran = true));
            Assert.Equal(RejectionReason.ShutDown, Assert.Throws<RejectedExecutionException>(() => executor.Execute(() => ran = true)).Reason);
            Assert.Equal(RejectionReason.ShutDown, (await Assert.ThrowsAsync<RejectedExecutionException>(() => executor.ExecuteAsync(() => ran = true).AsTask())).Reason);
            Assert.Equal(RejectionReason.ShutDown, (await Assert.ThrowsAsync<RejectedExecutionException>(() => executor.RunAsync(() => ran = true))).Reason);

            Assert.False(ran);
            Assert.Equal(4, _rejections.Count);
            Assert.All(_rejections, r => Assert.Equal(RejectionReason.ShutDown, r.Reason));
            var statistics = executor.GetStatistics();
            Assert.Equal(4, statistics.Rejected);
            TestKit.AssertConserved(statistics);
        }
    }

    [Fact]
    public async Task StateOverload_RejectedItem_ReportsItsState()
    {
        await using var saturation = Saturated(RejectionPolicy.Discard);
        var (executor, gate, _) = saturation;
        var state = new List<int>();

        executor.Execute(static s => s.Add(1), state);

        Assert.Same(state, Assert.Single(_rejections).Item.State);
        await DrainAsync(executor, gate);
        Assert.Empty(state);
    }

    [Fact]
    public async Task RejectedFireAndForgetItem_CanBeInvokedByTheCallback_AwaitedOneCannot()
    {
        await using var saturation = Saturated(RejectionPolicy.Discard);
        var (executor, gate, _) = saturation;
        var state = new List<int>();

        executor.Execute(static s => s.Add(1), state);
        _ = executor.RunAsync(() => 2);

        var reported = _rejections.ToArray();
        reported[0].Item.Invoke();
        Assert.Equal([1], state);
        Assert.True(reported[1].Item.IsAwaited);
        Assert.Throws<InvalidOperationException>(() => reported[1].Item.Invoke());
        await DrainAsync(executor, gate);
    }

    private readonly List<Action> _queued = [];

    /// <summary>One worker blocked on a gate and items 1 and 2 filling a queue of two; item 3 is the caller's to submit.</summary>
    private Saturation Saturated(RejectionPolicy policy, Action<BoundedExecutorOptions>? configure = null)
    {
        var gate = new Gate();
        _queued.Clear();
        var executor = TestKit.Create(workers: 1, capacity: 2, policy: policy, name: "saturated", configure: o =>
        {
            o.OnRejected = _rejections.Enqueue;
            configure?.Invoke(o);
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        for (var id = 1; id <= 2; id++)
        {
            var item = _log.Item(id);
            _queued.Add(item);
            executor.Execute(item);
        }

        return new Saturation(executor, gate, _log.Item(3));
    }

    private static async Task DrainAsync(BoundedExecutor executor, Gate gate)
    {
        gate.Open();
        var result = await executor.ShutdownAsync().WaitAsync(TestKit.Safety);
        Assert.True(result.Drained);
    }

    /// <summary>
    /// A saturated executor, its gate and the third item. Disposing it opens the gate before it disposes the executor,
    /// so a test that fails before it drains fails at once, instead of waiting for its gated worker on dispose.
    /// </summary>
    private sealed class Saturation(BoundedExecutor executor, Gate gate, Action third) : IAsyncDisposable
    {
        public void Deconstruct(out BoundedExecutor saturatedExecutor, out Gate workerGate, out Action thirdItem) =>
            (saturatedExecutor, workerGate, thirdItem) = (executor, gate, third);

        public async ValueTask DisposeAsync()
        {
            try
            {
                gate.Open();
                await executor.DisposeAsync();
            }
            finally
            {
                gate.Dispose();
            }
        }
    }

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
}
