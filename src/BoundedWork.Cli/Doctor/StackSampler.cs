using System.Diagnostics.Tracing;
using Microsoft.Diagnostics.NETCore.Client;
using Microsoft.Diagnostics.Tracing.Etlx;

namespace BoundedWork.Cli.Doctor;

/// <summary>One frame of a managed stack: the method (namespace, type and name) and its module.</summary>
internal sealed record Frame(string Method, string Module);

/// <summary>One stack sample of one thread, innermost frame first.</summary>
internal sealed record ThreadSample(int ThreadId, IReadOnlyList<Frame> Frames);

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
        string? etlx = null;
        try
        {
            using (var session = await Attach.StartAsync(processId, [new EventPipeProvider("Microsoft-DotNETCore-SampleProfiler", EventLevel.Informational)], requestRundown: true, cancellationToken))
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

            etlx = TraceLog.CreateFromEventPipeDataFile(trace);
            using var log = new TraceLog(etlx);
            var samples = new List<ThreadSample>();
            foreach (var e in log.Events)
            {
                if (e.ProviderName != "Microsoft-DotNETCore-SampleProfiler" || !e.EventName.StartsWith("Thread/Sample", StringComparison.Ordinal))
                {
                    continue;
                }

                var frames = new List<Frame>();
                for (var frame = e.CallStack(); frame is not null && frames.Count < 200; frame = frame.Caller)
                {
                    var address = frame.CodeAddress;
                    frames.Add(new Frame(address.FullMethodName ?? "?", address.ModuleName ?? ""));
                }

                if (frames.Count > 0)
                {
                    samples.Add(new ThreadSample(e.ThreadID, frames));
                }
            }

            return samples;
        }
        finally
        {
            TryDelete(trace);
            if (etlx is not null)
            {
                TryDelete(etlx);
            }
        }
    }

    private static void TryDelete(string path)
    {
        try
        {
            File.Delete(path);
        }
        catch (IOException)
        {
            // A temporary file left behind is harmless.
        }
    }
}
