using System.Diagnostics.Tracing;
using Microsoft.Diagnostics.NETCore.Client;

namespace BoundedWork.Diagnostics.Internal;

/// <summary>
/// Samples the stacks of this process's own threads through its diagnostics port, synchronously: the caller is the
/// sentinel's dedicated thread, and a second dedicated thread copies the trace, so no step needs the (starved) pool.
/// </summary>
internal static class SelfSampler
{
    private static readonly TimeSpan s_rundownLimit = TimeSpan.FromSeconds(60);

    /// <summary>
    /// Samples for <paramref name="duration"/> (less if <paramref name="stop"/> is set) and returns the samples and,
    /// when <paramref name="actions"/> tracks them, the work each OS thread was running at the end of the window.
    /// </summary>
    /// <exception cref="ServerNotAvailableException">The diagnostics port is off or unreachable.</exception>
    /// <exception cref="TimeoutException">The runtime did not finish sending its method names in time.</exception>
    public static (IReadOnlyList<ThreadSample> Samples, IReadOnlyDictionary<int, string>? Work) Sample(TimeSpan duration, ActionTracker? actions, ManualResetEventSlim stop)
    {
        var trace = Path.Combine(Path.GetTempPath(), $"boundedwork-sentinel-{Environment.ProcessId}-{Guid.NewGuid():N}.nettrace");
        IReadOnlyDictionary<int, string>? work;
        try
        {
            var client = new DiagnosticsClient(Environment.ProcessId);
            using (var session = client.StartEventPipeSession(new EventPipeProvider(StackTraceReader.Provider, EventLevel.Informational), requestRundown: true, circularBufferMB: 64))
            using (var file = File.Create(trace))
            {
                Exception? copyFailure = null;
                var copy = new Thread(() =>
                {
                    try
                    {
                        session.EventStream.CopyTo(file);
                    }
#pragma warning disable CA1031 // reported on the sentinel's thread below
                    catch (Exception e)
#pragma warning restore CA1031
                    {
                        copyFailure = e;
                    }
                })
                {
                    IsBackground = true,
                    Name = "BoundedWork starvation sentinel trace",
                };
                copy.UnsafeStart();
                try
                {
                    stop.Wait(duration);
                    work = actions?.Snapshot();
                }
                finally
                {
                    session.Stop();
                }

                // The rundown (every compiled method's name) follows the stop; a large app takes a moment.
                if (!copy.Join(s_rundownLimit))
                {
                    session.Dispose(); // ends the copy
                    throw new TimeoutException($"The runtime did not finish sending its method names within {s_rundownLimit.TotalSeconds:0} s.");
                }

                if (copyFailure is not null)
                {
                    throw new IOException("Reading the trace of the app's own stacks failed: " + copyFailure.Message, copyFailure);
                }
            }

            return (StackTraceReader.Read(trace), work);
        }
        finally
        {
            StackTraceReader.TryDelete(trace);
        }
    }
}
