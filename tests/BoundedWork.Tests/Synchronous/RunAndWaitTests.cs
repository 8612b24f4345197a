using System.Collections.Concurrent;
using BoundedWork.Synchronous;

namespace BoundedWork.Tests.Synchronous;

/// <summary>Blocking submit-and-wait: runs on a worker, never deadlocks on its own or a nested executor, reports pool waits.</summary>
public sealed class RunAndWaitTests
{
    [Fact]
    public async Task RunAndWait_FromDedicatedThread_RunsOnAWorkerAndReturnsTheResult()
    {
        await using var executor = TestKit.Create(workers: 1);
        var ranOnWorker = false;
        var result = 0;
        var caller = new Thread(() => result = executor.RunAndWait(() =>
        {
            ranOnWorker = executor.IsWorkerThread;
            return 42;
        }));
        caller.Start();
        Assert.True(caller.Join(TestKit.Safety), "RunAndWait did not return.");

        Assert.Equal(42, result);
        Assert.True(ranOnWorker);
        TestKit.WaitForStatistics(executor, s => s.Completed == 1); // counted by the worker just after the caller is released
    }

    [Fact]
    public async Task RunAndWait_FromItsOwnOnlyWorker_RunsInlineInsteadOfDeadlocking()
    {
        await using var executor = TestKit.Create(workers: 1);
        var outer = executor.RunAsync(() =>
        {
            var worker = Environment.CurrentManagedThreadId;
            var inner = executor.RunAndWait(() => Environment.CurrentManagedThreadId);
            return (worker, inner);
        });

        var (worker, inner) = await outer.WaitAsync(TestKit.Safety);

        Assert.Equal(worker, inner);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Submitted); // the inline run is not a submission
        Assert.Equal(0, statistics.ThreadPoolBlockingWaits);
    }

    [Fact]
    public async Task RunAndWait_WorkerOfAWaitsOnBWhoseItemWaitsOnA_DoesNotDeadlock()
    {
        await using var a = TestKit.Create(workers: 1, name: "a");
        await using var b = TestKit.Create(workers: 1, name: "b");

        var result = await a.RunAsync(() => b.RunAndWait(() => a.RunAndWait(() => (OnB: b.IsWorkerThread, OnA: a.IsWorkerThread))))
            .WaitAsync(TestKit.Safety);

        // A's only worker is blocked waiting for B, so the innermost work runs inline on B's worker.
        Assert.True(result.OnB);
        Assert.False(result.OnA);
    }

    [Fact]
    public async Task RunAndWait_NestedCycleWithoutExecutionContextFlow_DoesNotDeadlock()
    {
        await using var a = TestKit.Create(workers: 1, name: "a", configure: o => o.FlowExecutionContext = false);
        await using var b = TestKit.Create(workers: 1, name: "b", configure: o => o.FlowExecutionContext = false);

        var onB = await a.RunAsync(() => b.RunAndWait(() => a.RunAndWait(() => b.IsWorkerThread))).WaitAsync(TestKit.Safety);

        Assert.True(onB);
    }

    [Fact]
    public async Task RunAndWait_ThreeExecutorsInACycle_DoesNotDeadlock()
    {
        await using var a = TestKit.Create(workers: 1, name: "a");
        await using var b = TestKit.Create(workers: 1, name: "b");
        await using var c = TestKit.Create(workers: 1, name: "c");

        var result = await a.RunAsync(() => b.RunAndWait(() => c.RunAndWait(() => a.RunAndWait(() => b.RunAndWait(() => c.IsWorkerThread)))))
            .WaitAsync(TestKit.Safety);

        Assert.True(result);
    }

    [Fact]
    public async Task RunAndWait_NestedIntoAnExecutorNobodyWaitsOn_RunsOnThatExecutorsWorker()
    {
        await using var a = TestKit.Create(workers: 1, name: "a");
        await using var b = TestKit.Create(workers: 1, name: "b");
        await using var c = TestKit.Create(workers: 1, name: "c");

        var onC = await a.RunAsync(() => b.RunAndWait(() => c.RunAndWait(() => c.IsWorkerThread))).WaitAsync(TestKit.Safety);

        Assert.True(onC);
    }

    [Fact]
    public async Task RunAndWait_ChainDoesNotLeakIntoLaterItems_TheyQueueNormally()
    {
        await using var a = TestKit.Create(workers: 1, name: "a");
        await using var b = TestKit.Create(workers: 1, name: "b");
        await a.RunAsync(() => b.RunAndWait(() => 0)).WaitAsync(TestKit.Safety);

        // A later item on B, submitted by a plain thread, runs on B's worker and not inline.
        var onB = await b.RunAsync(() => b.IsWorkerThread).WaitAsync(TestKit.Safety);
        var ranOnB = false;
        var caller = new Thread(() => ranOnB = a.RunAndWait(() => a.IsWorkerThread));
        caller.Start();
        Assert.True(caller.Join(TestKit.Safety));

        Assert.True(onB);
        Assert.True(ranOnB);
    }

    [Fact]
    public async Task RunAndWait_WorkThrows_RethrowsTheOriginalException()
    {
        await using var executor = TestKit.Create(workers: 1);
        var thrown = new InvalidOperationException("legacy failure");

        var caught = Assert.Throws<InvalidOperationException>(() => executor.RunAndWait(() => throw thrown));

        Assert.Same(thrown, caught);
    }

    [Fact]
    public async Task RunAndWait_ExecutorShutDown_ThrowsRejectedExecutionException()
    {
        var executor = TestKit.Create(workers: 1);
        await executor.ShutdownAsync();

        var rejected = Assert.Throws<RejectedExecutionException>(() => executor.RunAndWait(() => { }));

        Assert.Equal(RejectionReason.ShutDown, rejected.Reason);
        Assert.Equal(1, executor.GetStatistics().Rejected);
    }

    [Fact]
    public async Task RunAndWait_TokenCancelledBeforeStart_ThrowsAndNeverRuns()
    {
        await using var executor = TestKit.Create(workers: 1);
        using var cts = new CancellationTokenSource();
        cts.Cancel();
        var ran = false;

        Assert.ThrowsAny<OperationCanceledException>(() => executor.RunAndWait(() => ran = true, cts.Token));

        Assert.False(ran);
        Assert.Equal(1, executor.GetStatistics().Cancelled);
    }

    [Fact]
    public async Task RunAndWait_OnThreadPoolThread_IsCountedAndReportedBeforeBlocking()
    {
        var reports = new ConcurrentQueue<ThreadPoolBlockingWaitArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, configure: o => o.OnThreadPoolBlockingWait = reports.Enqueue);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();

        var caller = Task.Run(() => executor.RunAndWait(() => 1));

        // The count is taken before the callback runs: wait for the report itself.
        Assert.True(SpinWait.SpinUntil(() => !reports.IsEmpty, TestKit.Safety), "The blocking wait was never reported.");
        Assert.Equal(1, executor.GetStatistics().ThreadPoolBlockingWaits);
        var report = Assert.Single(reports);
        gate.Open();

        Assert.Equal(1, await caller.WaitAsync(TestKit.Safety));
        Assert.Equal(BlockingWaitKind.SubmitAndWait, report.Kind);
        Assert.Equal("test", report.ExecutorName);
    }

    [Fact]
    public async Task RunAndWait_OnDedicatedThread_IsNotCounted()
    {
        var reports = new ConcurrentQueue<ThreadPoolBlockingWaitArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, configure: o => o.OnThreadPoolBlockingWait = reports.Enqueue);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();

        var caller = new Thread(() => executor.RunAndWait(() => { }));
        caller.Start();
        TestKit.WaitForStatistics(executor, s => s.Submitted == 2);
        gate.Open();
        Assert.True(caller.Join(TestKit.Safety));

        Assert.Equal(0, executor.GetStatistics().ThreadPoolBlockingWaits);
        Assert.Empty(reports);
    }
}
