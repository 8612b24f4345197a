using System.Collections.Concurrent;
using System.Diagnostics;
using System.Reflection;

namespace BoundedWork.Hosting.Tests;

/// <summary>
/// Host shutdown in a real process, stopped by a real SIGTERM: docs/hosting.md's producer and outbox examples together
/// (tests/BoundedWork.Hosting.TestHost/Snippets), an item stuck past the host's ShutdownTimeout, five queued behind it.
/// </summary>
public sealed class ProcessShutdownTests
{
    private static string TestHostPath =>
        typeof(ProcessShutdownTests).Assembly.GetCustomAttributes<AssemblyMetadataAttribute>().Single(a => a.Key == "TestHostPath").Value!;

    [Fact]
    public async Task Sigterm_ItemStuckPastTheShutdownTimeout_IsReportedInterruptedAndTheQueuedCallbacksReachTheOutbox()
    {
        var outbox = Path.Combine(Path.GetTempPath(), $"boundedwork-outbox-{Guid.NewGuid():N}.txt");
        var lines = new ConcurrentQueue<string>();
        var ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var process = new Process
        {
            StartInfo = new ProcessStartInfo(Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") ?? "dotnet")
            {
                ArgumentList = { TestHostPath, outbox, "1" },
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            },
        };
        process.OutputDataReceived += (_, e) =>
        {
            if (e.Data is { } line)
            {
                lines.Enqueue(line);
                if (line == "READY")
                {
                    ready.TrySetResult();
                }
            }
        };
        process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is { } line)
            {
                lines.Enqueue("stderr: " + line);
            }
        };

        try
        {
            Assert.True(process.Start());
            process.BeginOutputReadLine();
            process.BeginErrorReadLine();
            await ready.Task.WaitAsync(TestHost.Patience);

            using (var kill = Process.Start("/bin/kill", ["-TERM", process.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)]))
            {
                await kill.WaitForExitAsync().WaitAsync(TestHost.Patience);
                Assert.Equal(0, kill.ExitCode);
            }

            await process.WaitForExitAsync().WaitAsync(TestHost.Patience);
            process.WaitForExit(); // drains the redirected output

            var output = string.Join(Environment.NewLine, lines);
            Assert.True(process.ExitCode == 0, output);
            Assert.Contains("Application is shutting down", output, StringComparison.Ordinal);
            Assert.Contains("[11] Executor 'payments' reached the shutdown deadline with 1 items still running", output, StringComparison.Ordinal);
            var interrupted = Assert.Single(lines, l => l.Contains("[18]", StringComparison.Ordinal));
            Assert.StartsWith("fail:", interrupted, StringComparison.Ordinal);
            Assert.Contains("LegacyPayments.Process with state PaymentCallback { OrderId = stuck-order, Amount = 10 }", interrupted, StringComparison.Ordinal);
            Assert.Contains("payments#1", interrupted, StringComparison.Ordinal);
            Assert.Contains("[10] Executor 'payments' reached the shutdown deadline with 5 queued items that never ran; handing them to 1 abandoned-work handlers.", output, StringComparison.Ordinal);
            Assert.DoesNotContain(lines, l => l.StartsWith("PROCESSED", StringComparison.Ordinal)); // none of them ran
            Assert.DoesNotContain(lines, l => l.Contains("[16]", StringComparison.Ordinal)); // a handler took them
            Assert.Equal(["order-1;1", "order-2;2", "order-3;3", "order-4;4", "order-5;5"], await File.ReadAllLinesAsync(outbox));
        }
        finally
        {
            if (!process.HasExited)
            {
                process.Kill(entireProcessTree: true);
            }

            File.Delete(outbox);
        }
    }
}
