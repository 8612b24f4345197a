using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace BoundedWork.Tests.Internal.Diagnostics;

/// <summary>
/// A throwing ActivityListener or MeterListener never decides an item's fate: the item runs, is counted once, the
/// worker survives and shutdown drains. Each listener only throws for its own executor's threads or tags, so tests
/// running in parallel are not disturbed.
/// </summary>
public sealed class ListenerFailureTests
{
    [Theory]
    [InlineData(true, false)]
    [InlineData(false, true)]
    [InlineData(true, true)]
    public async Task ThrowingActivityListener_ItemsStillRunAndAreCountedOnce(bool throwOnStart, bool throwOnStop)
    {
        var name = $"throwing-activity-{Guid.NewGuid():N}";
        using var listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name == BoundedWorkDiagnostics.ActivitySourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllData,
            ActivityStarted = _ => ThrowOnOwnWorker(name, throwOnStart),
            ActivityStopped = _ => ThrowOnOwnWorker(name, throwOnStop),
        };
        ActivitySource.AddActivityListener(listener);
        var errors = new ConcurrentQueue<WorkItemFailedArguments>();
        var executor = TestKit.Create(workers: 1, capacity: 16, name: name, configure: o => o.OnError = errors.Enqueue);
        using var ran = new CountdownEvent(3);

        executor.Execute(() => ran.Signal());
        var result = executor.RunAsync(() =>
        {
            ran.Signal();
            return 42;
        });
        executor.Execute(() => ran.Signal());

        Assert.Equal(42, await result.WaitAsync(TestKit.Safety));
        Assert.True(ran.Wait(TestKit.Safety), "An item did not run because a listener threw.");
        var shutdown = await executor.ShutdownAsync(TestKit.Safety);
        Assert.True(shutdown.Drained);
        var statistics = executor.GetStatistics();
        Assert.Equal(3, statistics.Completed);
        Assert.Equal(0, statistics.Failed);
        Assert.Equal(0, statistics.WorkersReplaced);
        Assert.True(statistics.CallbackFailures >= 3, statistics.ToString());
        Assert.Empty(errors);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task ThrowingMeterListener_OnTheHistograms_ItemsStillRunAndAreCountedOnce()
    {
        var name = $"throwing-meter-{Guid.NewGuid():N}";

        // A MeterListener of its own, not MetricCollector<T>: the listener under test is one whose callback throws.
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName && instrument.Name.EndsWith(".duration", StringComparison.Ordinal))
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<double>((_, _, tags, _) =>
        {
            foreach (var tag in tags)
            {
                if (tag.Key == BoundedWorkDiagnostics.ExecutorTag && (string?)tag.Value == name)
                {
                    throw new InvalidOperationException("listener bug");
                }
            }
        });
        listener.Start();
        var executor = TestKit.Create(workers: 1, capacity: 16, name: name);
        using var ran = new CountdownEvent(2);

        executor.Execute(() => ran.Signal());
        var result = executor.RunAsync(() =>
        {
            ran.Signal();
            return "ok";
        });

        Assert.Equal("ok", await result.WaitAsync(TestKit.Safety));
        Assert.True(ran.Wait(TestKit.Safety));
        Assert.True((await executor.ShutdownAsync(TestKit.Safety)).Drained);
        var statistics = executor.GetStatistics();
        Assert.Equal(2, statistics.Completed);
        Assert.Equal(0, statistics.Failed);
        Assert.True(statistics.CallbackFailures >= 4, statistics.ToString()); // wait and run time, per item
        TestKit.AssertConserved(statistics);
    }

    private static void ThrowOnOwnWorker(string executorName, bool shouldThrow)
    {
        if (shouldThrow && Thread.CurrentThread.Name?.StartsWith(executorName, StringComparison.Ordinal) == true)
        {
            throw new InvalidOperationException("listener bug");
        }
    }
}
