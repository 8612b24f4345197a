using System.Diagnostics.Tracing;
using BoundedWork.Diagnostics.Internal;
using Microsoft.Diagnostics.NETCore.Client;

namespace BoundedWork.Cli.Doctor;

/// <summary>
/// Samples every managed thread's stack with the runtime's sample profiler over EventPipe (as <c>dotnet-stack</c>
/// does), then resolves the frames with TraceEvent from the rundown of the methods the process has compiled. The
/// sampler suspends the runtime briefly for each sample, so it runs for a short window only.
/// </summary>
internal static class StackSampler
{
    public static async Task<IReadOnlyList<ThreadSample>> SampleAsync(int processId, TimeSpan duration, CancellationToken cancellationToken)
    {
        var trace = Path.Combine(Path.GetTempPath(), $"bw-doctor-{Environment.ProcessId}-{Guid.NewGuid():N}.nettrace");
        try
        {
            using (var session = await Attach.StartAsync(processId, [new EventPipeProvider(StackTraceReader.Provider, EventLevel.Informational)], requestRundown: true, cancellationToken))
            using (var file = File.Create(trace))
            {
                var copy = session.EventStream.CopyToAsync(file, CancellationToken.None);
                try
                {
                    await Task.Delay(duration, cancellationToken);
                }
                finally
                {
                    await Attach.StopAsync(session);
                }

                // The rundown (every compiled method's name) follows the stop; a large app takes a moment.
                if (await Task.WhenAny(copy, Task.Delay(TimeSpan.FromSeconds(60), CancellationToken.None)) != copy)
                {
                    throw ToolException.Unreachable($"Process {processId} did not finish sending its method names within 60 s.");
                }
            }

            return StackTraceReader.Read(trace);
        }
        finally
        {
            StackTraceReader.TryDelete(trace);
        }
    }
}
