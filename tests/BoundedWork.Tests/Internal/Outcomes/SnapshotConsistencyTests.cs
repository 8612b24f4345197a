using System.Diagnostics.Metrics;

namespace BoundedWork.Tests.Internal.Outcomes;

/// <summary>
/// Every snapshot puts each item in exactly one place, while items flow, workers resize and callers run items: a
/// snapshot never shows fewer submissions than calls that had returned before it began, nor more than calls that had
/// begun before it ended, and every counter only grows.
/// </summary>
public sealed class SnapshotConsistencyTests
{
    [Theory]
    [InlineData(RejectionPolicy.Abort)]
    [InlineData(RejectionPolicy.CallerRuns)]
    [InlineData(RejectionPolicy.DiscardOldest)]
    public async Task Snapshots_WhileItemsFlowAndWorkersResize_AccountForEveryItemExactlyOnce(RejectionPolicy policy)
    {
        const int Producers = 2;
        const int PerProducer = 20_000;
        await using var executor = TestKit.Create(workers: 2, capacity: 8, policy: policy, configure: o => o.MaxWorkerCount = 8);
        long begun = 0;
        long returned = 0;
        var stop = false;
        var violations = new List<string>();

        var reader = new Thread(() =>
        {
            var previous = executor.GetStatistics();
            while (!Volatile.Read(ref stop))
            {
                var returnedBefore = Interlocked.Read(ref returned);
                var s = executor.GetStatistics();
                var begunAfter = Interlocked.Read(ref begun);
                if (s.Submitted < returnedBefore || s.Submitted > begunAfter
                    || s.Running < 0 || s.LiveWorkerCount > s.MaxWorkerCount || s.PeakWorkerCount < s.LiveWorkerCount
                    || s.Completed < previous.Completed || s.Submitted < previous.Submitted || s.Discarded < previous.Discarded
                    || s.Rejected < previous.Rejected || s.Cancelled < previous.Cancelled)
                {
                    lock (violations)
                    {
                        violations.Add($"returned before {returnedBefore}, begun after {begunAfter}: {s}");
                    }
                }

                previous = s;
            }
        });
        var resizer = new Thread(() =>
        {
            var size = 1;
            while (!Volatile.Read(ref stop))
            {
                executor.Resize(size);
                size = size % 8 + 1;
            }
        });
        var producers = Enumerable.Range(0, Producers).Select(_ => new Thread(() =>
        {
            for (var i = 0; i < PerProducer; i++)
            {
                Interlocked.Increment(ref begun);
                try
                {
                    executor.Execute(() => { });
                }
                catch (RejectedExecutionException)
                {
                }

                Interlocked.Increment(ref returned);
            }
        })).ToList();

        reader.Start();
        resizer.Start();
        producers.ForEach(p => p.Start());
        producers.ForEach(p => p.Join());
        Volatile.Write(ref stop, true);
        reader.Join();
        resizer.Join();
        await executor.ShutdownAsync();

        Assert.Empty(violations);
        var final = executor.GetStatistics();
        Assert.Equal(Producers * PerProducer, final.Submitted);
        TestKit.AssertConserved(final);
    }

    [Fact]
    public async Task MetricsCollections_WhileItemsFlow_AreEachOneConsistentSnapshot()
    {
        var name = $"consistent-metrics-{Guid.NewGuid():N}";
        await using var executor = TestKit.Create(workers: 2, capacity: 16, name: name);
        var values = new Dictionary<string, long>();

        // A MeterListener, not MetricCollector<T>: every instrument of one collection is compared, a collector watches one.
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
            string? executorName = null;
            string? outcome = null;
            foreach (var tag in tags)
            {
                executorName = tag.Key == BoundedWorkDiagnostics.ExecutorTag ? (string?)tag.Value : executorName;
                outcome = tag.Key == BoundedWorkDiagnostics.OutcomeTag ? (string?)tag.Value : outcome;
            }

            if (executorName == name)
            {
                values[instrument.Name + (outcome is null ? string.Empty : "/" + outcome)] = value;
            }
        }

        listener.SetMeasurementEventCallback<long>((i, v, t, _) => Record(i, v, t));
        listener.SetMeasurementEventCallback<int>((i, v, t, _) => Record(i, v, t));
        listener.Start();
        var producer = new Thread(() =>
        {
            for (var i = 0; i < 50_000; i++)
            {
                executor.TryExecute(() => { });
            }
        });
        producer.Start();

        var collections = 0;
        while (producer.IsAlive || collections < 10)
        {
            values.Clear();
            listener.RecordObservableInstruments();
            collections++;
            var outcomes = values.Where(kv => kv.Key.StartsWith("boundedwork.items/", StringComparison.Ordinal)).Sum(kv => kv.Value);
            Assert.Equal(values["boundedwork.items.submitted"], values["boundedwork.queue.length"] + values["boundedwork.items.starting"] + values["boundedwork.items.running"] + outcomes);
            Assert.Equal(values["boundedwork.workers.busy"], values["boundedwork.items.running"]); // no caller runs under Abort
        }

        producer.Join();
    }
}
