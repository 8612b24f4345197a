using Microsoft.Diagnostics.Tracing.Etlx;

namespace BoundedWork.Diagnostics.Internal;

/// <summary>
/// Reads the stack samples of a trace written by the runtime's sample profiler over EventPipe (as <c>dotnet-stack</c>
/// collects them), resolving the frames with TraceEvent from the rundown of the methods the process has compiled.
/// </summary>
internal static class StackTraceReader
{
    /// <summary>The provider whose samples this reads; its session must request the rundown.</summary>
    public const string Provider = "Microsoft-DotNETCore-SampleProfiler";

    /// <summary>Reads the samples of the trace at <paramref name="nettrace"/>, and deletes the files it made.</summary>
    public static IReadOnlyList<ThreadSample> Read(string nettrace)
    {
        string? etlx = null;
        try
        {
            etlx = TraceLog.CreateFromEventPipeDataFile(nettrace);
            using var log = new TraceLog(etlx);
            var samples = new List<ThreadSample>();
            foreach (var e in log.Events)
            {
                if (e.ProviderName != Provider || !e.EventName.StartsWith("Thread/Sample", StringComparison.Ordinal))
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
            if (etlx is not null)
            {
                TryDelete(etlx);
            }
        }
    }

    public static void TryDelete(string path)
    {
        try
        {
            File.Delete(path);
        }
        catch (IOException)
        {
            // A temporary file left behind is harmless.
        }
        catch (UnauthorizedAccessException)
        {
            // The same.
        }
    }
}
