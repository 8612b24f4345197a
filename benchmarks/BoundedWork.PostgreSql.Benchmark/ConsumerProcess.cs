using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>The driver's view of one consumer node (this program's <c>consumer</c> verb in a child process).</summary>
internal sealed class ConsumerProcess : IAsyncDisposable
{
    private static readonly TimeSpan StartTimeout = TimeSpan.FromSeconds(60);
    private static readonly TimeSpan StopTimeout = TimeSpan.FromSeconds(30);

    private readonly Process _process;
    private readonly ConcurrentQueue<string> _log = new();
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _stopped = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private long _count;
    private long _lastEnded;
    private long _maxHeld = -1;
    private long _cpuTicks;

    private ConsumerProcess(Process process, int index)
    {
        _process = process;
        Index = index;
    }

    public int Index { get; }

    /// <summary>Gets how many items the node's handlers have run, as of its last report (every 100 ms).</summary>
    public long Count => Interlocked.Read(ref _count);

    /// <summary>Gets when the node's last handled item ended (a <see cref="Stopwatch"/> timestamp), as of its last report.</summary>
    public long LastEnded => Interlocked.Read(ref _lastEnded);

    /// <summary>Gets the item starts the node reported (<c>--record-starts</c>): item number and start timestamp.</summary>
    public ConcurrentQueue<(int Number, long Started)> Starts { get; } = new();

    /// <summary>Gets the handler runs the node reported (<c>--record-spans</c>): item number, start and end timestamps.</summary>
    public ConcurrentQueue<(int Number, long Started, long Ended)> Spans { get; } = new();

    /// <summary>Gets the node's process CPU time (user + kernel), as of its last report.</summary>
    public TimeSpan Cpu => TimeSpan.FromTicks(Interlocked.Read(ref _cpuTicks));

    /// <summary>
    /// Starts the nodes and waits until each has printed READY (at most a minute for all of them); <paramref name="verb"/>
    /// is <c>consumer</c> (the library's node) or <c>reference-consumer</c> (the hand-written reference).
    /// </summary>
    public static async Task<List<ConsumerProcess>> StartManyAsync(int count, IReadOnlyList<string> arguments, CancellationToken cancellationToken, string verb = "consumer")
    {
        var consumers = new List<ConsumerProcess>();
        try
        {
            for (var i = 0; i < count; i++)
            {
                consumers.Add(Start(i, verb, arguments));
            }

            using var deadline = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            deadline.CancelAfter(StartTimeout);
            foreach (var consumer in consumers)
            {
                try
                {
                    await Task.WhenAny(consumer._ready.Task, consumer._process.WaitForExitAsync(deadline.Token)).WaitAsync(deadline.Token);
                }
                catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
                {
                    throw new TimeoutException($"Consumer {consumer.Index} did not print READY within {StartTimeout.TotalSeconds:0} s. Its output:{Environment.NewLine}{consumer.Output}");
                }

                if (!consumer._ready.Task.IsCompleted)
                {
                    throw new InvalidOperationException($"Consumer {consumer.Index} exited with {consumer._process.ExitCode} before it was ready. Its output:{Environment.NewLine}{consumer.Output}");
                }
            }

            return consumers;
        }
        catch
        {
            await DisposeAllAsync(consumers);
            throw;
        }
    }

    /// <summary>Stops every node gracefully (STOP, then at most 30 s each before a kill).</summary>
    public static async Task StopAllAsync(IEnumerable<ConsumerProcess> consumers)
    {
        var list = consumers.ToList();
        foreach (var consumer in list)
        {
            consumer.SendStop();
        }

        foreach (var consumer in list)
        {
            await consumer.WaitStoppedAsync();
        }
    }

    public static async Task DisposeAllAsync(IEnumerable<ConsumerProcess> consumers)
    {
        foreach (var consumer in consumers)
        {
            await consumer.DisposeAsync();
        }
    }

    public string Output => string.Join(Environment.NewLine, _log.TakeLast(40));

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
                using var deadline = new CancellationTokenSource(StopTimeout);
                await _process.WaitForExitAsync(deadline.Token);
            }
        }
        catch (InvalidOperationException)
        {
            // Never started, or already gone.
        }
        catch (OperationCanceledException)
        {
            Console.Error.WriteLine($"consumer {Index} (pid {_process.Id}) did not exit within {StopTimeout.TotalSeconds:0} s of SIGKILL");
        }

        _process.Dispose();
    }

    private static ConsumerProcess Start(int index, string verb, IReadOnlyList<string> arguments)
    {
        var self = Environment.ProcessPath ?? throw new InvalidOperationException("The driver's executable path is unknown.");
        var start = new ProcessStartInfo(self)
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        if (string.Equals(Path.GetFileNameWithoutExtension(self), "dotnet", StringComparison.Ordinal))
        {
            start.ArgumentList.Add(typeof(ConsumerProcess).Assembly.Location);
        }

        start.ArgumentList.Add(verb);
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        var process = new Process { StartInfo = start };
        var consumer = new ConsumerProcess(process, index);
        process.OutputDataReceived += (_, e) => consumer.OnOutput(e.Data);
        process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is { } line)
            {
                consumer.Log("stderr: " + line);
                Console.Error.WriteLine($"  [consumer {index}] {line}");
            }
        };
        process.Start();
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        return consumer;
    }

    /// <summary>Gets the most items the consumer held at once (claimed, outcome not yet written), as a reference consumer reports it; -1: not reported.</summary>
    public long MaxHeld => Interlocked.Read(ref _maxHeld);

    private void OnOutput(string? line)
    {
        if (line is null)
        {
            return;
        }

        var parts = line.Split(' ');
        switch (parts[0])
        {
            case "COUNT" when parts.Length == 4:
                Interlocked.Exchange(ref _cpuTicks, long.Parse(parts[3], CultureInfo.InvariantCulture));
                Interlocked.Exchange(ref _lastEnded, long.Parse(parts[2], CultureInfo.InvariantCulture));
                Interlocked.Exchange(ref _count, long.Parse(parts[1], CultureInfo.InvariantCulture));
                break;
            case "HELD" when parts.Length == 2:
                Interlocked.Exchange(ref _maxHeld, long.Parse(parts[1], CultureInfo.InvariantCulture));
                break;
            case "S" when parts.Length == 3:
                Starts.Enqueue((int.Parse(parts[1], CultureInfo.InvariantCulture), long.Parse(parts[2], CultureInfo.InvariantCulture)));
                break;
            case "E" when parts.Length == 4:
                Spans.Enqueue((int.Parse(parts[1], CultureInfo.InvariantCulture), long.Parse(parts[2], CultureInfo.InvariantCulture), long.Parse(parts[3], CultureInfo.InvariantCulture)));
                break;
            case "READY":
                _ready.TrySetResult();
                Log(line);
                break;
            case "STOPPED":
                _stopped.TrySetResult();
                Log(line);
                break;
            default:
                Log(line);
                break;
        }
    }

    private void Log(string line)
    {
        _log.Enqueue(line);
        while (_log.Count > 200 && _log.TryDequeue(out _))
        {
        }
    }

    private void SendStop()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.StandardInput.WriteLine("STOP");
                _process.StandardInput.Flush();
            }
        }
        catch (IOException)
        {
            // It exited meanwhile.
        }
    }

    private async Task WaitStoppedAsync()
    {
        using var deadline = new CancellationTokenSource(StopTimeout);
        try
        {
            await _process.WaitForExitAsync(deadline.Token);
        }
        catch (OperationCanceledException)
        {
            Console.Error.WriteLine($"consumer {Index} did not stop within {StopTimeout.TotalSeconds:0} s of STOP; killing it. Its output:{Environment.NewLine}{Output}");
            await DisposeAsync();
            return;
        }
        catch (InvalidOperationException)
        {
        }

        if (_process.ExitCode != 0 || !_stopped.Task.IsCompleted)
        {
            throw new InvalidOperationException($"Consumer {Index} exited with {_process.ExitCode} (STOPPED printed: {_stopped.Task.IsCompleted}). Its output:{Environment.NewLine}{Output}");
        }
    }
}
