using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text.Json;
using PaymentCallbacks.Server;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Demo;

/// <summary>
/// The callback server running as a child process, so the load is driven from another process than the one whose
/// ThreadPool it starves. The child listens on 127.0.0.1 and a free port, and stops by itself when its stdin closes,
/// so it cannot outlive this process even if this one is killed; <see cref="DisposeAsync"/> kills it if it is still up.
/// </summary>
internal sealed class ChildServer : IAsyncDisposable
{
    private static readonly ConcurrentDictionary<int, Process> s_live = new();
    private readonly Process _process;
    private readonly ConcurrentQueue<string> _output = new();
    private readonly TaskCompletionSource<Uri> _listening = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private string? _ledger;
    private int _id;
    private int _disposed;

    private ChildServer(Process process) => _process = process;

    /// <summary>Gets the child's base address.</summary>
    public Uri BaseUrl { get; private set; } = null!;

    /// <summary>Kills every child still running (Ctrl-C and process exit handlers call this).</summary>
    public static void KillAll()
    {
        foreach (var process in s_live.Values)
        {
            try
            {
                process.Kill(entireProcessTree: true);
            }
            catch (InvalidOperationException)
            {
                // Already gone.
            }
        }
    }

    /// <summary>Starts a child server with extra configuration arguments and waits until it listens.</summary>
    /// <param name="settings">Configuration arguments, such as <c>--BoundedWork:Executors:payments:WorkerCount=2</c>.</param>
    /// <param name="cancellationToken">Stops waiting (the child is killed).</param>
    /// <returns>The running child.</returns>
    public static async Task<ChildServer> StartAsync(IEnumerable<string> settings, CancellationToken cancellationToken)
    {
        var assembly = typeof(ChildServer).Assembly.Location;
        var start = new ProcessStartInfo(DotnetHost())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var argument in (string[])[assembly, "serve", "--port", "0", "--environment", "Development", "--stop-on-stdin-eof", "true", .. settings])
        {
            start.ArgumentList.Add(argument);
        }

        var process = new Process { StartInfo = start, EnableRaisingEvents = true };
        var child = new ChildServer(process);
        process.OutputDataReceived += (_, e) => child.OnOutput(e.Data);
        process.ErrorDataReceived += (_, e) => child.OnOutput(e.Data);
        process.Exited += (_, _) => child._listening.TrySetException(
            new InvalidOperationException("The server exited before it listened:" + Environment.NewLine + string.Join(Environment.NewLine, child._output)));
        process.Start();
        child._id = process.Id;
        s_live[child._id] = process;
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        try
        {
            child.BaseUrl = await child._listening.Task.WaitAsync(TimeSpan.FromSeconds(60), cancellationToken).ConfigureAwait(false);
            return child;
        }
        catch
        {
            await child.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Stops the child gracefully (closes its stdin) and returns the ledger it printed after shutdown.</summary>
    /// <param name="timeout">How long to wait before killing it.</param>
    /// <returns>The final stats, or <see langword="null"/> if it had to be killed.</returns>
    public async Task<ServerStats?> StopAsync(TimeSpan timeout)
    {
        try
        {
            _process.StandardInput.Close();
            await _process.WaitForExitAsync().WaitAsync(timeout).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            return null;
        }
        finally
        {
            await DisposeAsync().ConfigureAwait(false);
        }

        return _ledger is null ? null : JsonSerializer.Deserialize(_ledger, StatsJson.Default.ServerStats);
    }

    /// <summary>Kills the child if it still runs.</summary>
    /// <returns>A task that completes when it is gone.</returns>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        s_live.TryRemove(_id, out _);
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
                await _process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(10)).ConfigureAwait(false);
            }
        }
        catch (InvalidOperationException)
        {
            // Never started or already reaped.
        }
        catch (TimeoutException)
        {
            // Reported by the caller's own checks; nothing more to do here.
        }

        _process.Dispose();
    }

    private static string DotnetHost()
    {
        var current = Environment.ProcessPath;
        if (current is not null && Path.GetFileNameWithoutExtension(current).Equals("dotnet", StringComparison.OrdinalIgnoreCase))
        {
            return current;
        }

        return Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } host ? host : "dotnet";
    }

    private void OnOutput(string? line)
    {
        if (line is null)
        {
            return;
        }

        if (line.StartsWith(CallbackServer.ListeningPrefix, StringComparison.Ordinal))
        {
            var address = line[CallbackServer.ListeningPrefix.Length..].Trim();
            _listening.TrySetResult(new Uri(address.EndsWith('/') ? address : address + "/"));
            return;
        }

        if (line.StartsWith(CallbackServer.LedgerPrefix, StringComparison.Ordinal))
        {
            _ledger = line[CallbackServer.LedgerPrefix.Length..];
            return;
        }

        _output.Enqueue(line);
        while (_output.Count > 40)
        {
            _output.TryDequeue(out _);
        }
    }
}
