using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests;

public sealed class BoundedExecutorStatisticsTests
{
    [Fact]
    public async Task CountsWhileItemsAreGated_AreExact()
    {
        await using var executor = TestKit.Create(workers: 2, capacity: 5, name: "stats");
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        executor.Execute(gate.Blocker);
        gate.WaitEntered(2);
        for (var i = 0; i < 5; i++)
        {
            executor.Execute(() => { });
        }

        Assert.False(executor.TryExecute(() => { }));

        var statistics = executor.GetStatistics();
        Assert.Equal("stats", statistics.Name);
        Assert.Equal(2, statistics.TargetWorkerCount);
        Assert.Equal(2, statistics.LiveWorkerCount);
        Assert.Equal(2, statistics.BusyWorkerCount);
        Assert.Equal(5, statistics.QueueLength);
        Assert.Equal(5, executor.QueueLength);
        Assert.Equal(5, statistics.QueueCapacity);
        Assert.Equal(8, statistics.Submitted);
        Assert.Equal(0, statistics.Completed);
        Assert.Equal(1, statistics.Rejected);
        Assert.False(statistics.IsShutdown);

        gate.Open();
        await executor.ShutdownAsync();
        var final = executor.GetStatistics();
        Assert.Equal(7, final.Completed);
        Assert.Equal(0, final.QueueLength);
        Assert.Equal(0, final.BusyWorkerCount);
        Assert.Equal(0, final.LiveWorkerCount);
        Assert.True(final.IsShutdown);
        TestKit.AssertConserved(final);
    }

    [Fact]
    public async Task Snapshot_TakenUnderLoad_NeverShowsMoreOutcomesThanSubmissions()
    {
        await using var executor = TestKit.Create(workers: 2, capacity: 16, policy: RejectionPolicy.Discard);
        using var stop = new CancellationTokenSource();
        var producer = new Thread(() =>
        {
            for (var i = 0; i < 20_000; i++)
            {
                executor.Execute(() => { });
            }
        });
        producer.Start();

        while (producer.IsAlive)
        {
            var s = executor.GetStatistics();
            Assert.True(s.Completed + s.Failed + s.Cancelled + s.Rejected + s.Discarded + s.Abandoned <= s.Submitted, s.ToString());
            Assert.InRange(s.QueueLength, 0, 16);
        }

        await executor.ShutdownAsync();
        TestKit.AssertConserved(executor.GetStatistics());
    }
}

public sealed class OldestQueuedItemAgeTests
{
    [Fact]
    public async Task OldestQueuedItemAge_MeasuresTheHeadOfTheQueueAndIsZeroWhenEmpty()
    {
        var clock = new FakeTimeProvider();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, configure: o => o.TimeProvider = clock);
        Assert.Equal(TimeSpan.Zero, executor.GetStatistics().OldestQueuedItemAge);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();

        executor.Execute(() => { });
        clock.Advance(TimeSpan.FromSeconds(3));
        executor.Execute(() => { });
        clock.Advance(TimeSpan.FromSeconds(2));

        Assert.Equal(TimeSpan.FromSeconds(5), executor.GetStatistics().OldestQueuedItemAge);
        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.QueueLength == 0);
        Assert.Equal(TimeSpan.Zero, executor.GetStatistics().OldestQueuedItemAge);
    }

    [Fact]
    public async Task OldestQueuedItemAge_StaysExactWhenTheCapacityGrows_AndPastTheOldRingsLength()
    {
        var clock = new FakeTimeProvider();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, configure: o => o.TimeProvider = clock);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        clock.Advance(TimeSpan.FromSeconds(7));

        executor.Reconfigure(executor.Settings with { QueueCapacity = 200 });
        for (var i = 0; i < 150; i++)
        {
            executor.Execute(() => { });
            clock.Advance(TimeSpan.FromMilliseconds(10));
        }

        Assert.Equal(151, executor.GetStatistics().QueueLength);
        Assert.Equal(TimeSpan.FromSeconds(8.5), executor.GetStatistics().OldestQueuedItemAge);
        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.QueueLength == 0);
        Assert.Equal(TimeSpan.Zero, executor.GetStatistics().OldestQueuedItemAge);
    }
}

/// <summary>Reading statistics must not change what the queue keeps alive.</summary>
public sealed class StatisticsRetentionTests
{
    [Fact]
    public async Task ReadingStatisticsWhileItemsAreQueued_KeepsNoItemAliveAfterItRan()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 64);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var state = QueueLargeItems(executor, count: 4);
        Assert.Equal(4, executor.GetStatistics().QueueLength); // a read of the queue's head while items are queued

        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.Starting == 0 && s.Running == 0);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety), "The worker never went idle.");
        for (var i = 0; i < 3 && state.Any(s => s.IsAlive); i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        Assert.All(state, s => Assert.False(s.IsAlive, "An item that ran is still reachable after a statistics read."));
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static WeakReference[] QueueLargeItems(BoundedExecutor executor, int count)
    {
        var references = new WeakReference[count];
        for (var i = 0; i < count; i++)
        {
            var payload = new byte[256 * 1024];
            executor.Execute(static p => GC.KeepAlive(p), payload);
            references[i] = new WeakReference(payload);
        }

        return references;
    }
}
