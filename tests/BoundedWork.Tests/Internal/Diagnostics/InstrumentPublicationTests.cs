using System.Diagnostics.Metrics;

namespace BoundedWork.Tests.Internal.Diagnostics;

/// <summary>When the executor's observable instruments become visible to a listener that is already subscribed.</summary>
public sealed class InstrumentPublicationTests
{
    [Fact]
    public void ListenerObservingAtPublication_SeesAWholeExecutor()
    {
        // A listener subscribed before the executor exists hears of each instrument while the constructor creates it,
        // and may collect at once, on any thread. Here it collects synchronously, on the constructing thread, the
        // moment each instrument of this executor is published: an executor that published its instruments before it
        // was whole answered with a NullReferenceException from GetStatistics.
        var constructingThread = Environment.CurrentManagedThreadId;
        var failures = new List<Exception>();
        var observed = 0;
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, meterListener) =>
            {
                if (instrument.Meter.Name != BoundedWorkDiagnostics.MeterName || Environment.CurrentManagedThreadId != constructingThread)
                {
                    return;
                }

                meterListener.EnableMeasurementEvents(instrument);
                try
                {
                    meterListener.RecordObservableInstruments();
                }
                catch (Exception ex)
                {
                    failures.Add(ex);
                }
            },
        };
        listener.SetMeasurementEventCallback<int>((_, _, _, _) => Interlocked.Increment(ref observed));
        listener.SetMeasurementEventCallback<long>((_, _, _, _) => Interlocked.Increment(ref observed));
        listener.Start();

        using var executor = TestKit.Create(workers: 2);

        Assert.Empty(failures);
        Assert.True(observed > 0, "No observable instrument was observed at publication.");
    }
}
