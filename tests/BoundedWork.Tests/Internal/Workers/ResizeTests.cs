using System.Collections.Concurrent;

namespace BoundedWork.Tests.Internal.Workers;

public sealed class ResizeTests
{
    [Fact]
    public async Task Grow_StartsWorkersAtOnce()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 8);
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();

        executor.Resize(3);
        executor.Execute(gate.Blocker);
        executor.Execute(gate.Blocker);

        gate.WaitEntered(2); // both run while the first worker is still held
        var statistics = executor.GetStatistics();
        Assert.Equal(3, statistics.BusyWorkerCount);
        Assert.Equal(3, statistics.LiveWorkerCount);
        Assert.Equal(3, statistics.PeakWorkerCount);
        gate.Open();
    }

    [Fact]
    public async Task Shrink_NeverInterruptsARunningItem_AndRetiredThreadsExit()
    {
        await using var executor = TestKit.Create(workers: 3, capacity: 8);
        using var gate = new Gate();
        var threads = new ConcurrentBag<Thread>();
        var finished = 0;
        for (var i = 0; i < 3; i++)
        {
            executor.Execute(() =>
            {
                threads.Add(Thread.CurrentThread);
                gate.Blocker();
                Interlocked.Increment(ref finished);
            });
        }

        gate.WaitEntered(3);

        executor.Resize(1);

        var whileBusy = executor.GetStatistics();
        Assert.Equal(1, whileBusy.TargetWorkerCount);
        Assert.Equal(3, whileBusy.LiveWorkerCount); // nobody was interrupted
        gate.Open();
        var settled = TestKit.WaitForStatistics(executor, s => s.LiveWorkerCount == 1 && s.Completed == 3);
        Assert.Equal(3, Volatile.Read(ref finished));
        Assert.Equal(3, settled.Completed);
        var survivor = await executor.RunAsync(() => Thread.CurrentThread);
        var retired = threads.Where(t => t != survivor).ToArray();
        Assert.Equal(2, retired.Length);
        Assert.All(retired, t => Assert.True(t.Join(TestKit.Safety), $"{t.Name} never exited."));
    }

    [Fact]
    public async Task ShrinkThenGrow_KeepsBusyWorkersInsteadOfStartingNewOnes()
    {
        await using var executor = TestKit.Create(workers: 4, capacity: 8);
        using var gate = new Gate();
        for (var i = 0; i < 4; i++)
        {
            executor.Execute(gate.Blocker);
        }

        gate.WaitEntered(4);

        executor.Resize(1);
        executor.Resize(3);
        gate.Open();

        var statistics = TestKit.WaitForStatistics(executor, s => s.LiveWorkerCount == 3 && s.BusyWorkerCount == 0);
        Assert.Equal(3, statistics.TargetWorkerCount);
        Assert.Equal(4, statistics.PeakWorkerCount); // no fifth thread was ever started
    }

    [Fact]
    public async Task Shrink_IdleWorkersRetireWithoutNewWork()
    {
        await using var executor = TestKit.Create(workers: 4);

        executor.Resize(2);

        Assert.Equal(2, TestKit.WaitForStatistics(executor, s => s.LiveWorkerCount == 2).TargetWorkerCount);
        Assert.Equal(1, await executor.RunAsync(() => 1));
    }

    [Fact]
    public async Task Resize_UnderConcurrentSubmits_LosesNothing()
    {
        const int Producers = 3;
        const int PerProducer = 3000;
        await using var executor = TestKit.Create(workers: 2, capacity: 64, policy: RejectionPolicy.Wait, configure: o => o.MaxWorkerCount = 6);
        var runs = new int[Producers * PerProducer];
        using var start = new Barrier(Producers + 1);
        var producers = Enumerable.Range(0, Producers).Select(p => new Thread(() =>
        {
            start.SignalAndWait();
            for (var i = 0; i < PerProducer; i++)
            {
                var id = (p * PerProducer) + i;
                executor.Execute(() => Interlocked.Increment(ref runs[id]));
            }
        })).ToArray();
        foreach (var producer in producers)
        {
            producer.Start();
        }

        start.SignalAndWait();
        var sizes = new[] { 6, 1, 4, 2, 5, 1, 3 };
        var round = 0;
        while (producers.Any(p => p.IsAlive))
        {
            executor.Resize(sizes[round++ % sizes.Length]);
            Thread.Yield();
        }

        var result = await executor.ShutdownAsync();

        Assert.True(result.Drained);
        Assert.All(runs, r => Assert.Equal(1, r));
        var statistics = executor.GetStatistics();
        Assert.Equal(Producers * PerProducer, statistics.Completed);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task Resize_AfterShutdown_Throws()
    {
        var executor = TestKit.Create(name: "closed");
        await executor.ShutdownAsync();

        var ex = Assert.Throws<InvalidOperationException>(() => executor.Resize(2));

        Assert.Contains("closed", ex.Message, StringComparison.Ordinal);
    }
}
