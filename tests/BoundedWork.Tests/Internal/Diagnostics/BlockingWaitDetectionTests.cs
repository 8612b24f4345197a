using System.Collections.Concurrent;

namespace BoundedWork.Tests.Internal.Diagnostics;

/// <summary>A ThreadPool thread that blocks waiting for room is counted and reported; a dedicated thread is not.</summary>
public sealed class BlockingWaitDetectionTests
{
    [Fact]
    public async Task WaitForRoom_OnThreadPoolThread_IsCountedAndReportedBeforeBlocking()
    {
        var reports = new ConcurrentQueue<ThreadPoolBlockingWaitArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o =>
        {
            o.WaitTimeout = Timeout.InfiniteTimeSpan;
            o.OnThreadPoolBlockingWait = reports.Enqueue;
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });

        var producer = Task.Run(() => executor.Execute(() => { }));
        TestKit.WaitForStatistics(executor, s => s.ThreadPoolBlockingWaits == 1);
        Assert.True(SpinWait.SpinUntil(() => !reports.IsEmpty, TestKit.Safety), "The callback never ran."); // it runs just after the count

        var report = Assert.Single(reports);
        Assert.Equal(BlockingWaitKind.WaitForRoom, report.Kind);
        Assert.Equal("test", report.ExecutorName);
        Assert.Equal(1, report.Total);
        gate.Open();
        await producer.WaitAsync(TestKit.Safety);
    }

    [Fact]
    public async Task WaitForRoom_OnDedicatedThread_IsNotCounted()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o => o.WaitTimeout = Timeout.InfiniteTimeSpan);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        var producer = new Thread(() => executor.Execute(() => { }));
        producer.Start();
        TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 1);

        gate.Open();
        producer.Join();

        Assert.Equal(0, executor.GetStatistics().ThreadPoolBlockingWaits);
    }

    [Fact]
    public async Task ThrowingBlockingWaitCallback_IsCountedAndTheItemStillQueues()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o =>
        {
            o.WaitTimeout = Timeout.InfiniteTimeSpan;
            o.OnThreadPoolBlockingWait = _ => throw new InvalidOperationException("callback bug");
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });

        var producer = Task.Run(() => executor.Execute(() => { }));
        TestKit.WaitForStatistics(executor, s => s.CallbackFailures == 1);
        gate.Open();
        await producer.WaitAsync(TestKit.Safety);
        await executor.ShutdownAsync();

        var statistics = executor.GetStatistics();
        Assert.Equal(3, statistics.Completed);
        TestKit.AssertConserved(statistics);
    }
}
