using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Reflection;
using System.Text.Json;
using BoundedWork.OpenTelemetry.TestConsumer;

namespace BoundedWork.OpenTelemetry.Tests;

/// <summary>
/// The traced consumer node (tests/BoundedWork.OpenTelemetry.TestConsumer) in a child process: its READY and HANDLED
/// lines complete tasks; <see cref="StopAsync"/> sends SIGTERM and returns the spans it printed. Killed when disposed.
/// </summary>
public sealed class TracedConsumerProcess : IAsyncDisposable
{
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    private readonly Process _process;
    private readonly ConcurrentQueue<string> _output = new();
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource<long> _handled = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _done = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private TracedConsumerProcess(Process process) => _process = process;

    /// <summary>Gets the id of the first item the node handled.</summary>
    public Task<long> Handled => _handled.Task;

    public string Output => string.Join(Environment.NewLine, _output);

    private static string ConsumerPath =>
        typeof(TracedConsumerProcess).Assembly.GetCustomAttributes<AssemblyMetadataAttribute>().Single(a => a.Key == "TestConsumerPath").Value!;

    public static async Task<TracedConsumerProcess> StartAsync(string connectionString, string schema, string queue)
    {
        var start = new ProcessStartInfo(Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") ?? "dotnet")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var argument in new[] { ConsumerPath, connectionString, schema, queue })
        {
            start.ArgumentList.Add(argument);
        }

        var consumer = new TracedConsumerProcess(new Process { StartInfo = start });
        consumer._process.OutputDataReceived += (_, e) => consumer.OnLine(e.Data);
        consumer._process.ErrorDataReceived += (_, e) => consumer.OnLine(e.Data is { } line ? "stderr: " + line : null);
        try
        {
            consumer._process.Start();
            consumer._process.BeginOutputReadLine();
            consumer._process.BeginErrorReadLine();
            await Task.WhenAny(consumer._ready.Task, consumer._process.WaitForExitAsync()).WaitAsync(Patience);
            Assert.True(consumer._ready.Task.IsCompleted, "The consumer did not start: " + consumer.Output);
        }
        catch
        {
            await consumer.DisposeAsync();
            throw;
        }

        return consumer;
    }

    /// <summary>SIGTERM: the node stops as a service manager stops it (its executor drains), then prints its spans.</summary>
    public async Task<List<ExportedSpan>> StopAsync()
    {
        using (var kill = Process.Start("/bin/kill", ["-TERM", _process.Id.ToString(CultureInfo.InvariantCulture)]))
        {
            await kill.WaitForExitAsync().WaitAsync(Patience);
        }

        await _process.WaitForExitAsync().WaitAsync(Patience);
        _process.WaitForExit(); // drains the redirected output
        Assert.True(_done.Task.IsCompleted, "The consumer did not report its spans: " + Output);
        return [.. _output
            .Where(line => line.StartsWith(ExportedSpan.LinePrefix, StringComparison.Ordinal))
            .Select(line => JsonSerializer.Deserialize<ExportedSpan>(line[ExportedSpan.LinePrefix.Length..])!)];
    }

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill();
                await _process.WaitForExitAsync().WaitAsync(Patience);
            }
        }
        catch (InvalidOperationException)
        {
            // Never started.
        }

        _process.Dispose();
    }

    private void OnLine(string? line)
    {
        if (line is null)
        {
            return;
        }

        _output.Enqueue(line);
        if (line == "READY")
        {
            _ready.TrySetResult();
        }
        else if (line == "DONE")
        {
            _done.TrySetResult();
        }
        else if (line.StartsWith("HANDLED ", StringComparison.Ordinal))
        {
            _handled.TrySetResult(long.Parse(line["HANDLED ".Length..], CultureInfo.InvariantCulture));
        }
    }
}
