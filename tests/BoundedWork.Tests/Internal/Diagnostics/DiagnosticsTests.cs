using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace BoundedWork.Tests.Internal.Diagnostics;

public sealed class DiagnosticsTests
{
    [Fact]
    public async Task Metrics_ObservedInstruments_MatchTheStatistics()
    {
        var name = $"metrics-{Guid.NewGuid():N}";
        var executor = TestKit.Create(workers: 1, capacity: 4, name: name);
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        executor.Execute(() => throw new InvalidOperationException());
        Assert.True(executor.TryExecute(() => { }));
        Assert.True(executor.TryExecute(() => { }));
        Assert.False(executor.TryExecute(() => { }));

        var whileGated = Collect(name);
        var statistics = executor.GetStatistics();
        Assert.Equal(4, statistics.QueueLength);
        Assert.Equal(4, whileGated[("boundedwork.queue.length", null)]);
        Assert.Equal(4, whileGated[("boundedwork.queue.capacity", null)]);
        Assert.Equal(1, whileGated[("boundedwork.workers", null)]);
        Assert.Equal(1, whileGated[("boundedwork.workers.target", null)]);
        Assert.Equal(1, whileGated[("boundedwork.workers.busy", null)]);
        Assert.Equal(1, whileGated[("boundedwork.items", "rejected")]);
        Assert.Equal(statistics.Submitted, whileGated[("boundedwork.items.submitted", null)]);

        gate.Open();
        var final = TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.BusyWorkerCount == 0 && s.Completed + s.Failed == s.Submitted - s.Rejected);
        var after = Collect(name);
        Assert.Equal(final.Submitted, after[("boundedwork.items.submitted", null)]);
        Assert.Equal(final.Completed, after[("boundedwork.items", "completed")]);
        Assert.Equal(final.Failed, after[("boundedwork.items", "failed")]);
        Assert.Equal(1, after[("boundedwork.items", "failed")]);
        Assert.Equal(final.Rejected, after[("boundedwork.items", "rejected")]);
        Assert.Equal(0, after[("boundedwork.items", "abandoned")]);
        await executor.ShutdownAsync();
    }

    [Fact]
    public async Task Metrics_Histograms_RecordWaitAndRunTimePerItem()
    {
        var name = $"histograms-{Guid.NewGuid():N}";
        var recorded = new ConcurrentQueue<(string Instrument, double Value)>();

        // A MeterListener, not MetricCollector<T>: each executor has its own meter of the same name, and a collector follows one instrument.
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName && instrument.Name.EndsWith(".duration", StringComparison.Ordinal))
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<double>((instrument, value, tags, _) =>
        {
            if (HasExecutorTag(tags, name))
            {
                recorded.Enqueue((instrument.Name, value));
            }
        });
        listener.Start();
        await using var executor = TestKit.Create(name: name);

        for (var i = 0; i < 5; i++)
        {
            await executor.RunAsync(() => i);
        }

        Assert.True(SpinWait.SpinUntil(() => recorded.Count(r => r.Instrument == "boundedwork.item.run.duration") == 5, TestKit.Safety));
        Assert.Equal(5, recorded.Count(r => r.Instrument == "boundedwork.item.wait.duration"));
        Assert.All(recorded, r => Assert.True(r.Value >= 0));
    }

    [Fact]
    public async Task Tracing_TheRunActivity_IsAChildOfTheSubmittingActivity()
    {
        var name = $"traced-{Guid.NewGuid():N}";
        var runs = new ConcurrentQueue<Activity>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name is BoundedWorkDiagnostics.ActivitySourceName or "test-submitter",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = activity =>
            {
                if (activity.OperationName == BoundedWorkDiagnostics.RunActivityName && Equals(activity.GetTagItem(BoundedWorkDiagnostics.ExecutorTag), name))
                {
                    runs.Enqueue(activity);
                }
            },
        };
        ActivitySource.AddActivityListener(listener);
        using var submitterSource = new ActivitySource("test-submitter");
        await using var executor = TestKit.Create(name: name);

        using (var submit = submitterSource.StartActivity("submit"))
        {
            Assert.NotNull(submit);
            await executor.RunAsync(() => { });
            using var ran = new ManualResetEventSlim();
            executor.Execute(ran.Set);
            ran.WaitOrFail("the fire-and-forget item");

            Assert.True(SpinWait.SpinUntil(() => runs.Count == 2, TestKit.Safety));
            Assert.All(runs, run =>
            {
                Assert.Equal(submit.TraceId, run.TraceId);
                Assert.Equal(submit.SpanId, run.ParentSpanId);
            });
        }
    }

    // A MeterListener, not MetricCollector<T>: one snapshot of every instrument of the meter, and a collector watches one.
    [Fact]
    public async Task PausedGauge_IsOneWhilePaused_AndZeroOtherwise()
    {
        var name = $"paused-{Guid.NewGuid():N}";
        await using var executor = TestKit.Create(name: name);
        Assert.Equal(0, Collect(name)[("boundedwork.paused", null)]);
        executor.Pause("incident");
        Assert.Equal(1, Collect(name)[("boundedwork.paused", null)]);
        executor.Resume();
        Assert.Equal(0, Collect(name)[("boundedwork.paused", null)]);
    }

    private static Dictionary<(string Instrument, string? Outcome), long> Collect(string executorName)
    {
        var values = new Dictionary<(string, string?), long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName)
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        void Record(Instrument instrument, long value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            if (!HasExecutorTag(tags, executorName))
            {
                return;
            }

            string? outcome = null;
            foreach (var tag in tags)
            {
                if (tag.Key == BoundedWorkDiagnostics.OutcomeTag)
                {
                    outcome = (string?)tag.Value;
                }
            }

            values[(instrument.Name, outcome)] = value;
        }

        listener.SetMeasurementEventCallback<int>((instrument, value, tags, _) => Record(instrument, value, tags));
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) => Record(instrument, value, tags));
        listener.Start();
        listener.RecordObservableInstruments();
        return values;
    }

    private static bool HasExecutorTag(ReadOnlySpan<KeyValuePair<string, object?>> tags, string name)
    {
        foreach (var tag in tags)
        {
            if (tag.Key == BoundedWorkDiagnostics.ExecutorTag && Equals(tag.Value, name))
            {
                return true;
            }
        }

        return false;
    }
}
