using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text;

namespace BoundedWork.Cli.Tests;

/// <summary>Generous limits that only a hung run reaches; never a pass condition.</summary>
public static class Limits
{
    public static readonly TimeSpan Safety = TimeSpan.FromSeconds(90);
}

/// <summary>What a run of the tool printed and returned.</summary>
public sealed record BwResult(int ExitCode, string Out, string Error, TimeSpan Took)
{
    public override string ToString() => $"exit {ExitCode} after {Took.TotalMilliseconds:0} ms{Environment.NewLine}--- stdout:{Environment.NewLine}{Out}{Environment.NewLine}--- stderr:{Environment.NewLine}{Error}";
}

/// <summary>Runs <c>bw</c> as a user does: its own process (output redirected), from this test's output folder.</summary>
public static class Bw
{
    public static BwResult Run(params string[] args) => RunAsync(args).GetAwaiter().GetResult();

    public static async Task<BwResult> RunAsync(params string[] args)
    {
        var start = new ProcessStartInfo(DotnetHost())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
            UseShellExecute = false,
        };
        start.Environment["COLUMNS"] = "250"; // wide enough that no line the tests read is wrapped
        start.Environment["TERM"] = "xterm-256color"; // as from a colour terminal's pipe: the output must still be plain text
        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "bw.dll"));
        foreach (var arg in args)
        {
            start.ArgumentList.Add(arg);
        }

        var watch = Stopwatch.StartNew();
        using var process = Process.Start(start)!;
        try
        {
            var stdout = process.StandardOutput.ReadToEndAsync();
            var stderr = process.StandardError.ReadToEndAsync();
            await process.WaitForExitAsync().WaitAsync(Limits.Safety);
            return new BwResult(process.ExitCode, await stdout, await stderr, watch.Elapsed);
        }
        finally
        {
            if (!process.HasExited)
            {
                process.Kill(entireProcessTree: true);
            }
        }
    }

    /// <summary>Runs a read command every half second until <paramref name="done"/> holds for its JSON, within the safety limit.</summary>
    public static async Task UntilAsync(string what, Func<System.Text.Json.JsonElement, bool> done, params string[] args)
    {
        var deadline = DateTime.UtcNow + Limits.Safety;
        while (true)
        {
            var run = await RunAsync([.. args, "--json"]);
            if (run.ExitCode == 0 && done(System.Text.Json.JsonDocument.Parse(run.Out).RootElement))
            {
                return;
            }

            Assert.True(DateTime.UtcNow < deadline, $"{what} never happened: {run}");
            await Task.Delay(500); // the poll's interval (a run starts a process): the wait is for the condition
        }
    }

    public static string DotnetHost()
    {
        var current = Environment.ProcessPath;
        if (current is not null && Path.GetFileNameWithoutExtension(current).Equals("dotnet", StringComparison.OrdinalIgnoreCase))
        {
            return current;
        }

        return Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } host ? host : "dotnet";
    }
}

/// <summary>
/// The payment-callback sample as a child process on 127.0.0.1 and a free port, with its diagnostics socket on. It stops
/// by itself when its stdin closes (so it cannot outlive the test host); <see cref="DisposeAsync"/> stops the load and
/// kills it if it still runs.
/// </summary>
public sealed class SampleApp : IAsyncDisposable
{
    private readonly Process _process;
    private readonly ConcurrentQueue<string> _output = new();
    private readonly TaskCompletionSource<Uri> _listening = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _load = new();
    private readonly List<Task> _loaders = [];
    private HttpClient? _loadClient;

    /// <summary>
    /// A side effect that does not return while the app runs (<see cref="Thread.Sleep(int)"/>'s longest wait). With a
    /// capped pool, a blocking load then holds every pool thread until the test disposes the app: the starvation is a
    /// gate that only the test opens, after its checks, not a delay the checks must beat.
    /// </summary>
    public const int BlocksUntilStopped = int.MaxValue;

    private SampleApp(Process process) => _process = process;

    public int ProcessId => _process.Id;

    public Uri BaseUrl { get; private set; } = null!;

    public string Output => string.Join(Environment.NewLine, _output);

    /// <summary>
    /// Starts the sample whose blocking side effect takes <paramref name="sideEffectMs"/> per callback. With
    /// <paramref name="maxPoolThreads"/>, its ThreadPool may not grow past that many threads (the runtime's
    /// <c>System.Threading.ThreadPool.MaxThreads</c> setting), so a blocking load keeps it starved for as long as it
    /// lasts instead of until the pool has grown enough: what the tests' claims about starvation rest on.
    /// </summary>
    public static async Task<SampleApp> StartAsync(int sideEffectMs = 1000, int? maxPoolThreads = null, params string[] extraArguments)
    {
        var start = new ProcessStartInfo(Bw.DotnetHost())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        var dll = Path.Combine(AppContext.BaseDirectory, "PaymentCallbacks.dll");
        if (maxPoolThreads is { } max)
        {
            start.ArgumentList.Add("exec");
            start.ArgumentList.Add("--runtimeconfig");
            start.ArgumentList.Add(CappedRuntimeConfig(max));
        }

        foreach (var argument in (string[])[
            dll, "serve", "--port", "0", "--environment", "Development",
            "--stop-on-stdin-eof", "true", "--ShutdownTimeoutSeconds", "1",
            $"--SideEffect:MinDelayMs={sideEffectMs}", $"--SideEffect:MaxDelayMs={sideEffectMs}", "--SideEffect:CpuIterations=0"])
        {
            start.ArgumentList.Add(argument);
        }

        foreach (var argument in extraArguments)
        {
            start.ArgumentList.Add(argument);
        }

        var app = new SampleApp(new Process { StartInfo = start, EnableRaisingEvents = true });
        app._process.OutputDataReceived += (_, e) => app.OnOutput(e.Data);
        app._process.ErrorDataReceived += (_, e) => app.OnOutput(e.Data);
        app._process.Exited += (_, _) => app._listening.TrySetException(new InvalidOperationException("The sample exited before it listened:" + Environment.NewLine + app.Output));
        app._process.Start();
        app._process.BeginOutputReadLine();
        app._process.BeginErrorReadLine();
        try
        {
            app.BaseUrl = await app._listening.Task.WaitAsync(Limits.Safety);
            return app;
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }
    }

    /// <summary>
    /// Keeps <paramref name="concurrency"/> callbacks in flight on <paramref name="endpoint"/> (naive-sync or bounded):
    /// each sender posts again as soon as its last answer (or failure) arrives, until the app is disposed.
    /// </summary>
    public void StartLoad(string endpoint, int concurrency)
    {
        _loadClient ??= new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = concurrency + 8 }) { BaseAddress = BaseUrl, Timeout = Limits.Safety };
        for (var i = 0; i < concurrency; i++)
        {
            var order = i * 1_000_000L;
            _loaders.Add(Task.Run(async () =>
            {
                while (!_load.IsCancellationRequested)
                {
                    try
                    {
                        using var body = new StringContent($$"""{"orderId":{{order++}},"amount":10}""", Encoding.UTF8, "application/json");
                        using var response = await _loadClient.PostAsync("callbacks/" + endpoint, body, _load.Token);
                    }
                    catch (Exception e) when (e is HttpRequestException or OperationCanceledException)
                    {
                        // Refused, timed out or stopping: the next one goes out as the loop allows.
                    }
                }
            }));
        }
    }

    /// <summary>Starts a request to the HTTP admin console, not awaited: whether it has answered is read later.</summary>
    public Task<HttpResponseMessage> StartHttpConsoleRequest()
    {
        var client = new HttpClient { BaseAddress = BaseUrl, Timeout = Limits.Safety };
        return client.GetAsync("bounded-work/executors");
    }

    public async ValueTask DisposeAsync()
    {
        await _load.CancelAsync();
        try
        {
            // Gracefully first, so the app deletes its socket; killed if it has not stopped in time (a starved app
            // may not), and then its stale socket is removed here.
            _process.StandardInput.Close();
            await _process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(5));
        }
        catch (Exception e) when (e is TimeoutException or InvalidOperationException or IOException)
        {
            // Killed below.
        }

        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
                await _process.WaitForExitAsync().WaitAsync(Limits.Safety);
            }
        }
        catch (InvalidOperationException)
        {
            // Never started or already gone.
        }

        foreach (var folder in Directory.GetDirectories(Path.GetTempPath(), "boundedwork-*"))
        {
            File.Delete(Path.Combine(folder, $"{_process.Id}.sock"));
        }

        await Task.WhenAll(_loaders).WaitAsync(Limits.Safety);
        _loadClient?.Dispose();
        _process.Dispose();
        _load.Dispose();
    }

    private static string CappedRuntimeConfig(int maxPoolThreads)
    {
        var config = System.Text.Json.Nodes.JsonNode.Parse(File.ReadAllText(Path.Combine(AppContext.BaseDirectory, "PaymentCallbacks.runtimeconfig.json")))!;
        var options = config["runtimeOptions"]!.AsObject();
        if (options["configProperties"] is not System.Text.Json.Nodes.JsonObject properties)
        {
            options["configProperties"] = properties = [];
        }

        properties["System.Threading.ThreadPool.MaxThreads"] = maxPoolThreads;
        var path = Path.Combine(AppContext.BaseDirectory, $"PaymentCallbacks.max{maxPoolThreads}.runtimeconfig.json");
        File.WriteAllText(path, config.ToJsonString());
        return path;
    }

    private void OnOutput(string? line)
    {
        if (line is null)
        {
            return;
        }

        if (line.StartsWith("LISTENING ", StringComparison.Ordinal))
        {
            var address = line["LISTENING ".Length..].Trim();
            _listening.TrySetResult(new Uri(address.EndsWith('/') ? address : address + "/"));
            return;
        }

        _output.Enqueue(line);
        while (_output.Count > 60)
        {
            _output.TryDequeue(out _);
        }
    }
}
