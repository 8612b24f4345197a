using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Text.Json;

namespace BoundedWork.Diagnostics.Tests;

/// <summary>Generous limits that only a hung run reaches; never a pass condition.</summary>
public static class Limits
{
    public static readonly TimeSpan Safety = TimeSpan.FromSeconds(90);
}

/// <summary>One line of the app's JSON console log.</summary>
public sealed record LogLine(int EventId, string Level, string Category, string Message);

/// <summary>
/// The MVC test app (BoundedWork.Diagnostics.TestApp, built in Release) as a child process bound to 127.0.0.1 on a
/// port of its own choosing; its JSON log read line by line. Disposing kills it, also when the test failed.
/// </summary>
public sealed class SentinelApp : IAsyncDisposable
{
    private readonly Process _process;
    private readonly ConcurrentQueue<string> _lines = new();
    private readonly SemaphoreSlim _newLine = new(0);
    private readonly TaskCompletionSource<Uri> _address = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private SentinelApp(Process process)
    {
        _process = process;
    }

    public Uri Address => _address.Task.Result;

    public IEnumerable<string> RawLines => _lines;

    public IReadOnlyList<LogLine> Log => [.. _lines.Select(Parse).OfType<LogLine>()];

    public int ProcessId => _process.Id;

    public static async Task<SentinelApp> StartAsync(IDictionary<string, string>? environment = null, params string[] arguments)
    {
        var start = new ProcessStartInfo(DotnetHost())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true, // the app stops when it closes: it cannot outlive the test host
            UseShellExecute = false,
        };
        start.ArgumentList.Add(AppPath());
        start.ArgumentList.Add("--urls");
        start.ArgumentList.Add("http://127.0.0.1:0");
        start.ArgumentList.Add("--StopOnStdinClose");
        start.ArgumentList.Add("true");
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        start.Environment["ASPNETCORE_ENVIRONMENT"] = "Production";
        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[name] = value;
        }

        var process = Process.Start(start)!;
        var app = new SentinelApp(process);
        process.OutputDataReceived += (_, e) => app.OnLine(e.Data);
        process.ErrorDataReceived += (_, e) => app.OnLine(e.Data);
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        try
        {
            await app._address.Task.WaitAsync(Limits.Safety);
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        return app;
    }

    /// <summary>Waits for the first log event with <paramref name="eventId"/> from the sentinel, within the safety limit.</summary>
    public async Task<LogLine> WaitForSentinelEventAsync(int eventId)
    {
        var deadline = DateTime.UtcNow + Limits.Safety;
        while (true)
        {
            if (SentinelEvents(eventId).FirstOrDefault() is { } line)
            {
                return line;
            }

            var left = deadline - DateTime.UtcNow;
            Assert.True(left > TimeSpan.Zero && !_process.HasExited, $"The app logged no sentinel event {eventId}. Its log:{Environment.NewLine}{string.Join(Environment.NewLine, _lines)}");
            await _newLine.WaitAsync(left < TimeSpan.FromSeconds(1) ? left : TimeSpan.FromSeconds(1));
        }
    }

    /// <summary>Waits for the first output line that <paramref name="match"/> accepts, within the safety limit.</summary>
    public async Task<string> WaitForLineAsync(string what, Func<string, bool> match)
    {
        var deadline = DateTime.UtcNow + Limits.Safety;
        while (true)
        {
            if (_lines.FirstOrDefault(match) is { } line)
            {
                return line;
            }

            var left = deadline - DateTime.UtcNow;
            Assert.True(left > TimeSpan.Zero && !_process.HasExited, $"The app printed no {what}. Its output:{Environment.NewLine}{string.Join(Environment.NewLine, _lines)}");
            await _newLine.WaitAsync(left < TimeSpan.FromSeconds(1) ? left : TimeSpan.FromSeconds(1));
        }
    }

    public IEnumerable<LogLine> SentinelEvents(int eventId) =>
        Log.Where(l => l.EventId == eventId && l.Category == "BoundedWork.Diagnostics.StarvationSentinel");

    public string Dump() => string.Join(Environment.NewLine, _lines);

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
            }

            await _process.WaitForExitAsync().WaitAsync(Limits.Safety);
        }
        finally
        {
            _process.Dispose();
            _newLine.Dispose();
        }
    }

    private void OnLine(string? line)
    {
        if (line is null)
        {
            return;
        }

        if (line.StartsWith("LISTENING ", StringComparison.Ordinal))
        {
            _address.TrySetResult(new Uri(line["LISTENING ".Length..].Trim()));
        }

        _lines.Enqueue(line);
        _newLine.Release();
    }

    private static LogLine? Parse(string line)
    {
        if (!line.StartsWith('{'))
        {
            return null;
        }

        try
        {
            var root = JsonDocument.Parse(line).RootElement;
            return new LogLine(root.GetProperty("EventId").GetInt32(), root.GetProperty("LogLevel").GetString()!, root.GetProperty("Category").GetString()!, root.GetProperty("Message").GetString()!);
        }
        catch (JsonException)
        {
            return null;
        }
    }

    private static string AppPath()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            var candidate = Path.Combine(directory.FullName, "tests", "BoundedWork.Diagnostics.TestApp", "bin", "Release", "net10.0", "BoundedWork.Diagnostics.TestApp.dll");
            if (File.Exists(candidate))
            {
                return candidate;
            }
        }

        throw new FileNotFoundException("The test app is not built in Release (the test project's build builds it).");
    }

    public static string DotnetHost()
    {
        var current = Environment.ProcessPath;
        return current is not null && Path.GetFileNameWithoutExtension(current).Equals("dotnet", StringComparison.OrdinalIgnoreCase) ? current
            : Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } host ? host : "dotnet";
    }
}

/// <summary>
/// A load driver: <c>clients</c> concurrent clients, each sending GET requests one after the other, up to
/// <c>requestsPerClient</c> each (or until disposed). Failed and timed-out requests are counted, not thrown.
/// </summary>
public sealed class Load : IAsyncDisposable
{
    private readonly HttpClient _client;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task[] _clients;
    private int _ok;
    private int _failed;

    public Load(Uri url, int clients, int? requestsPerClient = null)
    {
        _client = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = clients, PooledConnectionLifetime = Timeout.InfiniteTimeSpan })
        {
            Timeout = TimeSpan.FromSeconds(60),
            DefaultRequestVersion = HttpVersion.Version11,
        };
        _clients = [.. Enumerable.Range(0, clients).Select(_ => Task.Run(() => RunClientAsync(url, requestsPerClient)))];
    }

    public int Succeeded => Volatile.Read(ref _ok);

    public int Failed => Volatile.Read(ref _failed);

    /// <summary>Completes when every client has sent its requests.</summary>
    public Task Completion => Task.WhenAll(_clients);

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync();
        await Task.WhenAll(_clients).WaitAsync(Limits.Safety);
        _client.Dispose();
        _stop.Dispose();
    }

    private async Task RunClientAsync(Uri url, int? requests)
    {
        for (var i = 0; (requests is null || i < requests) && !_stop.IsCancellationRequested; i++)
        {
            try
            {
                using var response = await _client.GetAsync(url, _stop.Token);
                Interlocked.Increment(ref (response.IsSuccessStatusCode ? ref _ok : ref _failed));
            }
            catch (OperationCanceledException) when (_stop.IsCancellationRequested)
            {
                return;
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
            {
                Interlocked.Increment(ref _failed);
            }
        }
    }
}
