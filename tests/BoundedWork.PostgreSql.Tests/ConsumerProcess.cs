using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Reflection;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>A consumer node in a child process (tests/BoundedWork.PostgreSql.TestConsumer); killed when disposed.</summary>
public sealed class ConsumerProcess : IAsyncDisposable
{
    private readonly Process _process;
    private readonly ConcurrentQueue<string> _output = new();

    private ConsumerProcess(Process process) => _process = process;

    public int Id => _process.Id;

    public string Output => string.Join(Environment.NewLine, _output);

    /// <summary>Gets the application name the consumer with the given process id gives each of its connections.</summary>
    public static string ApplicationName(int processId) => "bw-consumer-" + processId.ToString(CultureInfo.InvariantCulture);

    private static string ConsumerPath =>
        typeof(ConsumerProcess).Assembly.GetCustomAttributes<AssemblyMetadataAttribute>().Single(a => a.Key == "TestConsumerPath").Value!;

    /// <param name="limits">Items ordered by key, and every handler's start and end recorded in <c>runs</c> (see <see cref="ClusterLimitSql"/>).</param>
    /// <param name="mode">Another mode of the consumer instead of "limits" ("schedule").</param>
    /// <param name="environment">Extra variables of the process (the consumer's cluster membership: see the consumer's ClusterMember).</param>
    public static async Task<ConsumerProcess> StartAsync(string connectionString, string schema, int workers, TimeSpan handlerTime, TimeSpan lease, bool limits = false, IReadOnlyDictionary<string, string>? environment = null, string? mode = null)
    {
        var start = new ProcessStartInfo(Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") ?? "dotnet")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var (variable, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[variable] = value;
        }

        foreach (var argument in new[]
        {
            ConsumerPath, connectionString, schema, "notices", workers.ToString(CultureInfo.InvariantCulture),
            ((int)handlerTime.TotalMilliseconds).ToString(CultureInfo.InvariantCulture), ((int)lease.TotalMilliseconds).ToString(CultureInfo.InvariantCulture),
        })
        {
            start.ArgumentList.Add(argument);
        }

        if (limits)
        {
            start.ArgumentList.Add("limits");
        }
        else if (mode is not null)
        {
            start.ArgumentList.Add(mode); // "schedule": the durable schedule node (the consumer's ScheduleConsumer)
        }

        var process = new Process { StartInfo = start };
        var consumer = new ConsumerProcess(process);
        var ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        process.OutputDataReceived += (_, e) =>
        {
            if (e.Data is { } line)
            {
                consumer._output.Enqueue(line);
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
                consumer._output.Enqueue("stderr: " + line);
            }
        };
        process.Start();
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        try
        {
            await Task.WhenAny(ready.Task, process.WaitForExitAsync()).WaitAsync(QueueNode.Patience);
            Assert.True(ready.Task.IsCompleted, "The consumer did not start: " + consumer.Output);
        }
        catch
        {
            await consumer.DisposeAsync();
            throw;
        }

        return consumer;
    }

    /// <summary>SIGKILL: the process dies at once, in the middle of whatever it was doing.</summary>
    public async Task KillAsync()
    {
        _process.Kill(entireProcessTree: false);
        await _process.WaitForExitAsync().WaitAsync(QueueNode.Patience);
    }

    /// <summary>SIGTERM, as a service manager or Ctrl-C stops a node: waits for the process to exit and returns its exit code.</summary>
    public async Task<int> TerminateAsync()
    {
        using (var kill = Process.Start("/bin/kill", ["-TERM", Id.ToString(CultureInfo.InvariantCulture)]))
        {
            await kill.WaitForExitAsync().WaitAsync(QueueNode.Patience);
        }

        await _process.WaitForExitAsync().WaitAsync(QueueNode.Patience);
        _process.WaitForExit(); // drains the redirected output
        return _process.ExitCode;
    }

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill();
                await _process.WaitForExitAsync().WaitAsync(QueueNode.Patience);
            }
        }
        catch (InvalidOperationException)
        {
            // Never started.
        }

        _process.Dispose();
    }
}
