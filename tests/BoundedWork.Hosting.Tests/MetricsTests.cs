using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Tests;

public sealed class MetricsTests
{
    /// <summary>
    /// Listens to the BoundedWork meter of one host's meter factory only (kept: it reads every instrument of the meter
    /// in one collection, and a <c>MetricCollector&lt;T&gt;</c> follows one instrument).
    /// </summary>
    private sealed class BoundedWorkListener : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly ConcurrentDictionary<(string Instrument, string? Outcome), double> _latest = new();
        private readonly ConcurrentQueue<(string Instrument, double Value, string? Executor)> _histograms = new();

        public BoundedWorkListener(IMeterFactory scope)
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName && ReferenceEquals(instrument.Meter.Scope, scope))
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<int>((i, value, tags, _) => Record(i, value, tags));
            _listener.SetMeasurementEventCallback<long>((i, value, tags, _) => Record(i, value, tags));
            _listener.SetMeasurementEventCallback<double>((i, value, tags, _) => Record(i, value, tags));
            _listener.Start();
        }

        public IReadOnlyList<(string Instrument, double Value, string? Executor)> Histograms => [.. _histograms];

        public double Observe(string instrument, string? outcome = null)
        {
            _listener.RecordObservableInstruments();
            Assert.True(_latest.TryGetValue((instrument, outcome), out var value), $"No measurement of {instrument} {outcome}.");
            return value;
        }

        public void Dispose() => _listener.Dispose();

        private void Record(Instrument instrument, double value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            string? executor = null, outcome = null;
            foreach (var tag in tags)
            {
                if (tag.Key == BoundedWorkDiagnostics.ExecutorTag)
                {
                    executor = (string?)tag.Value;
                }
                else if (tag.Key == BoundedWorkDiagnostics.OutcomeTag)
                {
                    outcome = (string?)tag.Value;
                }
            }

            Assert.Equal("payments", executor);
            if (instrument is Histogram<double>)
            {
                _histograms.Enqueue((instrument.Name, value, executor));
            }
            else
            {
                _latest[(instrument.Name, outcome)] = value;
            }
        }
    }

    [Fact]
    public async Task Instruments_ThroughTheHostMeterFactory_MatchTheExecutorStatistics()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("payments", o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 2;
        });
        using var host = builder.Build();
        using var listener = new BoundedWorkListener(host.Services.GetRequiredService<IMeterFactory>());
        await host.StartAsync();
        var executor = host.Services.GetRequiredKeyedService<BoundedExecutor>("payments");

        for (var i = 0; i < 3; i++)
        {
            await executor.RunAsync(() => { });
        }

        executor.Execute(() => throw new InvalidOperationException());
        using var gate = new Gate();
        executor.Execute(gate.Item);
        gate.WaitStarted(); // the failed item ran before the gate started: one worker, first in first out
        executor.Execute(() => { });
        executor.Execute(() => { });
        Assert.False(executor.TryExecute(() => { }));

        var stats = executor.GetStatistics();
        Assert.Equal(stats.QueueLength, listener.Observe("boundedwork.queue.length"));
        Assert.Equal(2, listener.Observe("boundedwork.queue.length"));
        Assert.Equal(stats.QueueCapacity, listener.Observe("boundedwork.queue.capacity"));
        Assert.Equal(stats.LiveWorkerCount, listener.Observe("boundedwork.workers"));
        Assert.Equal(stats.TargetWorkerCount, listener.Observe("boundedwork.workers.target"));
        Assert.Equal(1, listener.Observe("boundedwork.workers.busy"));
        Assert.Equal(stats.Submitted, listener.Observe("boundedwork.items.submitted"));
        Assert.Equal(stats.Completed, listener.Observe("boundedwork.items", "completed"));
        Assert.Equal(3, listener.Observe("boundedwork.items", "completed"));
        Assert.Equal(stats.Failed, listener.Observe("boundedwork.items", "failed"));
        Assert.Equal(1, listener.Observe("boundedwork.items", "failed"));
        Assert.Equal(stats.Rejected, listener.Observe("boundedwork.items", "rejected"));
        Assert.Equal(1, listener.Observe("boundedwork.items", "rejected"));
        Assert.Equal(0, listener.Observe("boundedwork.items", "discarded"));
        Assert.Equal(0, listener.Observe("boundedwork.items", "abandoned"));

        executor.Resize(3);
        Assert.Equal(3, listener.Observe("boundedwork.workers.target"));

        gate.Open();
        await host.StopAsync();

        stats = executor.GetStatistics();
        var ran = stats.Completed + stats.Failed;
        Assert.Equal(7, ran);
        Assert.Equal(ran, listener.Histograms.Count(h => h.Instrument == "boundedwork.item.run.duration"));
        Assert.All(listener.Histograms, h => Assert.True(h.Value >= 0));
        Assert.Equal(stats.Completed, listener.Observe("boundedwork.items", "completed"));
    }
}
