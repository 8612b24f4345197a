using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Internal.Watchdog;

/// <summary>Slow and stuck items are reported by a dedicated watchdog, on the executor's clock.</summary>
public sealed class SlowItemTests
{
    [Fact]
    public async Task RunningPastThreshold_IsReportedOnceWithItemWorkerAndElapsed()
    {
        var clock = new FakeTimeProvider();
        var reports = new BlockingCollection<SlowItemArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, name: "payments", configure: o =>
        {
            o.TimeProvider = clock;
            o.SlowItemThreshold = TimeSpan.FromMilliseconds(40);
            o.OnSlowItem = reports.Add;
        });
        var blocker = gate.Blocker;
        executor.Execute(blocker);
        gate.WaitEntered();
        Assert.Equal(0, executor.GetStatistics().SlowWorkerCount);

        clock.Advance(TimeSpan.FromMilliseconds(41));

        Assert.True(reports.TryTake(out var report, TestKit.Safety), "The slow item was never reported.");
        Assert.Equal(SlowItemKind.Running, report.Kind);
        Assert.Same(blocker, report.Item.Callback);
        Assert.Equal("payments#1", report.WorkerName);
        Assert.True(report.Elapsed > TimeSpan.FromMilliseconds(40));
        Assert.Equal(TimeSpan.FromMilliseconds(40), report.Threshold);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.SlowWorkerCount);
        Assert.Equal(1, statistics.SlowItemsReported);

        clock.Advance(TimeSpan.FromSeconds(1));
        var running = Assert.Single(executor.GetRunningItems());
        Assert.Same(blocker, running.Item.Callback);
        Assert.Equal("payments#1", running.WorkerName);

        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.BusyWorkerCount == 0);
        Assert.Equal(0, executor.GetStatistics().SlowWorkerCount);
        Assert.Empty(executor.GetRunningItems());
        Assert.Equal(1, executor.GetStatistics().SlowItemsReported); // once per item, however long it ran
        Assert.Empty(reports);
    }

    [Fact]
    public async Task QueueWaitPastThreshold_IsReportedWhenAWorkerTakesTheItem()
    {
        var clock = new FakeTimeProvider();
        var reports = new ConcurrentQueue<SlowItemArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, configure: o =>
        {
            o.TimeProvider = clock;
            o.QueueWaitThreshold = TimeSpan.FromSeconds(2);
            o.OnSlowItem = reports.Enqueue;
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        Action late = () => { };
        executor.Execute(late);
        clock.Advance(TimeSpan.FromSeconds(3));
        Action onTime = () => { };
        executor.Execute(onTime);

        gate.Open();
        await executor.ShutdownAsync();

        var report = Assert.Single(reports);
        Assert.Equal(SlowItemKind.Queued, report.Kind);
        Assert.Same(late, report.Item.Callback);
        Assert.Equal(TimeSpan.FromSeconds(3), report.Elapsed);
        Assert.Equal(1, executor.GetStatistics().LongQueueWaitsReported);
    }

    [Fact]
    public async Task SlowItemThreshold_TurnedOnAtRuntime_ReportsAnItemAlreadyRunning()
    {
        var clock = new FakeTimeProvider();
        var reports = new BlockingCollection<SlowItemArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, configure: o =>
        {
            o.TimeProvider = clock;
            o.SlowItemThreshold = Timeout.InfiniteTimeSpan;
            o.OnSlowItem = reports.Add;
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        clock.Advance(TimeSpan.FromMinutes(5));
        Assert.Equal(0, executor.GetStatistics().SlowWorkerCount);

        executor.Reconfigure(executor.Settings with { SlowItemThreshold = TimeSpan.FromMinutes(1) });

        Assert.True(reports.TryTake(out var report, TestKit.Safety), "The running item was never reported.");
        Assert.Equal(TimeSpan.FromMinutes(5), report.Elapsed);
        gate.Open();
    }

    [Fact]
    public async Task ThrowingSlowItemCallback_IsCountedAndTheItemStillCompletes()
    {
        var clock = new FakeTimeProvider();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, configure: o =>
        {
            o.TimeProvider = clock;
            o.SlowItemThreshold = TimeSpan.FromMilliseconds(10);
            o.QueueWaitThreshold = TimeSpan.FromMilliseconds(10);
            o.OnSlowItem = _ => throw new InvalidOperationException("callback bug");
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        clock.Advance(TimeSpan.FromSeconds(1));
        TestKit.WaitForStatistics(executor, s => s.CallbackFailures == 1);

        gate.Open();
        await executor.ShutdownAsync();

        var statistics = executor.GetStatistics();
        Assert.Equal(2, statistics.CallbackFailures);
        Assert.Equal(2, statistics.Completed);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task SlowItems_AreCountedOnTheMeterByKind()
    {
        var clock = new FakeTimeProvider();
        var measured = new ConcurrentQueue<string>();

        // A MeterListener, not MetricCollector<T>: each executor has its own meter of the same name, and a collector follows one instrument.
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName && instrument.Name == "boundedwork.items.slow")
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, _, tags, _) =>
        {
            foreach (var tag in tags)
            {
                if (tag.Key == "boundedwork.slow.kind")
                {
                    measured.Enqueue((string)tag.Value!);
                }
            }
        });
        listener.Start();
        var reported = new BlockingCollection<SlowItemArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, name: "slow-metric", configure: o =>
        {
            o.TimeProvider = clock;
            o.SlowItemThreshold = TimeSpan.FromMilliseconds(10);
            o.OnSlowItem = reported.Add;
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        clock.Advance(TimeSpan.FromSeconds(1));
        Assert.True(reported.TryTake(out _, TestKit.Safety));
        gate.Open();

        Assert.Contains("running", measured);
    }
}
