using System.Text.Json;
using System.Text.Json.Serialization;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.LoadDriver;

/// <summary>The driver's commands; each writes JSON (and CSV where asked) for <see cref="Report"/>.</summary>
internal static class Commands
{
    /// <summary>An open-loop run, optionally reading the server's stats right before and right after sending.</summary>
    /// <param name="options">The options.</param>
    /// <param name="cancellationToken">Stops the run.</param>
    /// <returns>The exit code.</returns>
    public static async Task<int> OpenAsync(Arguments options, CancellationToken cancellationToken)
    {
        var url = new Uri(options.Required("url"));
        var method = options.Optional("method")?.ToUpperInvariant() == "POST" ? HttpMethod.Post : HttpMethod.Get;
        var rate = options.Number("rate", 0);
        var duration = TimeSpan.FromSeconds(options.Number("duration", 0));
        if (rate <= 0 || duration <= TimeSpan.Zero)
        {
            throw new ArgumentException("--rate and --duration must be positive.");
        }

        using var client = OpenLoopLoad.CreateClient((int)options.Number("connections", 256));
        using var statsClient = OpenLoopLoad.CreateClient(2);
        var statsBase = options.Optional("stats-base") is { } b ? new Uri(b) : null;
        if (statsBase is not null && options.Optional("stats-before") is { } beforePath)
        {
            await WriteJsonAsync(beforePath, await IncidentReplay.ReadStatsAsync(statsClient, statsBase, cancellationToken).ConfigureAwait(false), DriverJson.Default.ServerStats).ConfigureAwait(false);
        }

        var merchants = (int)options.Number("merchants", OpenLoopLoad.DefaultMerchants);
        if (merchants < 1)
        {
            throw new ArgumentException("--merchants must be at least 1.");
        }

        var load = new OpenLoopLoad(client, url, method, rate, duration, merchants);
        var run = load.RunAsync(TimeSpan.FromSeconds(options.Number("drain", 10)), cancellationToken);
        if (statsBase is not null && options.Optional("stats-after") is { } afterPath)
        {
            await Task.Delay(duration, cancellationToken).ConfigureAwait(false);
            await WriteJsonAsync(afterPath, await IncidentReplay.ReadStatsAsync(statsClient, statsBase, cancellationToken).ConfigureAwait(false), DriverJson.Default.ServerStats).ConfigureAwait(false);
        }

        var report = await run.ConfigureAwait(false);
        if (options.Optional("json") is { } json)
        {
            await WriteJsonAsync(json, report, DriverJson.Default.LoadReport).ConfigureAwait(false);
        }

        if (options.Optional("csv") is { } csv)
        {
            await using var writer = new StreamWriter(csv);
            load.WriteCsv(writer);
        }

        Console.WriteLine(JsonSerializer.Serialize(report, DriverJson.Default.LoadReport));
        return 0;
    }

    /// <summary>The incident replay.</summary>
    /// <param name="options">The options.</param>
    /// <param name="cancellationToken">Stops the run.</param>
    /// <returns>The exit code.</returns>
    public static async Task<int> ReplayAsync(Arguments options, CancellationToken cancellationToken)
    {
        var (report, samples) = await IncidentReplay.RunAsync(
            new Uri(options.Required("base")),
            options.Number("rate", 1000),
            TimeSpan.FromSeconds(options.Number("duration", 20)),
            TimeSpan.FromSeconds(options.Number("resize-at", 6)),
            (int)options.Number("workers", 16),
            TimeSpan.FromMilliseconds(options.Number("sample-ms", 250)),
            null,
            cancellationToken).ConfigureAwait(false);
        if (options.Optional("json") is { } json)
        {
            await WriteJsonAsync(json, report, DriverJson.Default.ReplayReport).ConfigureAwait(false);
        }

        if (options.Optional("csv") is { } csv)
        {
            await using var writer = new StreamWriter(csv);
            IncidentReplay.WriteCsv(writer, samples);
        }

        Console.WriteLine(JsonSerializer.Serialize(report, DriverJson.Default.ReplayReport));
        return report.ResizeStatusCode == 200 ? 0 : 1;
    }

    /// <summary>Reads <c>/stats</c> (after a full GC if <c>--collect</c>), after resetting the peaks if asked.</summary>
    /// <param name="options">The options.</param>
    /// <param name="cancellationToken">Cancels the request.</param>
    /// <returns>The exit code.</returns>
    public static async Task<int> StatsAsync(Arguments options, CancellationToken cancellationToken)
    {
        var baseUrl = new Uri(options.Required("base"));
        using var client = OpenLoopLoad.CreateClient(2);
        if (options.Flag("reset-peaks"))
        {
            using var reset = await client.PostAsync(new Uri(baseUrl, "/stats/reset-peaks"), null, cancellationToken).ConfigureAwait(false);
            reset.EnsureSuccessStatusCode();
        }

        var stats = await ReadAsync(client, baseUrl, options.Flag("collect"), cancellationToken).ConfigureAwait(false);
        if (options.Optional("out") is { } path)
        {
            await WriteJsonAsync(path, stats, DriverJson.Default.ServerStats).ConfigureAwait(false);
        }
        else
        {
            Console.WriteLine(JsonSerializer.Serialize(stats, DriverJson.Default.ServerStats));
        }

        return 0;
    }

    /// <summary>
    /// Memory per queued item: the server's one worker is blocked by the first item (the script starts it with a
    /// minute-long side effect), so every later callback stays queued; the GC heap after a full collection before
    /// and after, divided by the items queued.
    /// </summary>
    /// <param name="options">The options.</param>
    /// <param name="cancellationToken">Stops the run.</param>
    /// <returns>The exit code.</returns>
    public static async Task<int> MemoryQueuedAsync(Arguments options, CancellationToken cancellationToken)
    {
        var baseUrl = new Uri(options.Required("base"));
        var items = (int)options.Number("items", 10_000);
        using var client = OpenLoopLoad.CreateClient(64);
        var before = await ReadAsync(client, baseUrl, collect: true, cancellationToken).ConfigureAwait(false);
        var load = new OpenLoopLoad(client, new Uri(baseUrl, "/callbacks/bounded"), HttpMethod.Post, options.Number("rate", 2000), TimeSpan.FromSeconds(items / options.Number("rate", 2000)));
        var sent = await load.RunAsync(TimeSpan.FromSeconds(10), cancellationToken).ConfigureAwait(false);
        var after = await ReadAsync(client, baseUrl, collect: true, cancellationToken).ConfigureAwait(false);
        var queued = after.Bounded.Queued - before.Bounded.Queued;
        var report = new MemoryQueuedReport(
            after.Bounded.FlowExecutionContext, sent.Sent, queued, after.Bounded.Rejected503,
            before.Process.GcHeapBytes, after.Process.GcHeapBytes,
            queued > 0 ? (after.Process.GcHeapBytes - before.Process.GcHeapBytes) / (double)queued : 0);
        await WriteJsonAsync(options.Required("out"), report, DriverJson.Default.MemoryQueuedReport).ConfigureAwait(false);
        Console.WriteLine(JsonSerializer.Serialize(report, DriverJson.Default.MemoryQueuedReport));
        return 0;
    }

    /// <summary>Memory of idle workers: resize through the admin API, compare the process before and after.</summary>
    /// <param name="options">The options.</param>
    /// <param name="cancellationToken">Stops the run.</param>
    /// <returns>The exit code.</returns>
    public static async Task<int> MemoryWorkersAsync(Arguments options, CancellationToken cancellationToken)
    {
        var baseUrl = new Uri(options.Required("base"));
        var add = (int)options.Number("add", 256);
        using var client = OpenLoopLoad.CreateClient(2);
        var before = await ReadAsync(client, baseUrl, collect: true, cancellationToken).ConfigureAwait(false);
        var status = await IncidentReplay.ResizeAsync(client, baseUrl, before.Bounded.Workers + add, cancellationToken).ConfigureAwait(false);
        if (status != 200)
        {
            throw new HttpRequestException($"The admin API answered {status} to the resize.");
        }

        ServerStats after;
        var deadline = DateTime.UtcNow.AddSeconds(10);
        do
        {
            await Task.Delay(500, cancellationToken).ConfigureAwait(false);
            after = await ReadAsync(client, baseUrl, collect: true, cancellationToken).ConfigureAwait(false);
        }
        while (after.Process.ThreadCount < before.Process.ThreadCount + add && DateTime.UtcNow < deadline);

        var threads = after.Process.ThreadCount - before.Process.ThreadCount;
        var report = new MemoryWorkersReport(
            before.Bounded.Workers, after.Bounded.Workers, threads,
            before.Process.WorkingSetBytes, after.Process.WorkingSetBytes,
            before.Process.PrivateBytes, after.Process.PrivateBytes,
            threads > 0 ? (after.Process.WorkingSetBytes - before.Process.WorkingSetBytes) / (double)threads : 0,
            threads > 0 ? (after.Process.PrivateBytes - before.Process.PrivateBytes) / (double)threads : 0);
        await WriteJsonAsync(options.Required("out"), report, DriverJson.Default.MemoryWorkersReport).ConfigureAwait(false);
        Console.WriteLine(JsonSerializer.Serialize(report, DriverJson.Default.MemoryWorkersReport));
        return 0;
    }

    private static Task<ServerStats> ReadAsync(HttpClient client, Uri baseUrl, bool collect, CancellationToken cancellationToken) =>
        IncidentReplay.ReadStatsAsync(client, baseUrl, collect, cancellationToken);

    private static async Task WriteJsonAsync<T>(string path, T value, System.Text.Json.Serialization.Metadata.JsonTypeInfo<T> type)
    {
        await using var stream = File.Create(path);
        await JsonSerializer.SerializeAsync(stream, value, type).ConfigureAwait(false);
    }
}

/// <summary>Memory per queued item.</summary>
internal sealed record MemoryQueuedReport(bool FlowExecutionContext, long Sent, long Queued, long Rejected503, long HeapBefore, long HeapAfter, double BytesPerQueuedItem);

/// <summary>Memory per idle worker thread.</summary>
internal sealed record MemoryWorkersReport(
    int WorkersBefore, int WorkersAfter, int ThreadsAdded, long WorkingSetBefore, long WorkingSetAfter,
    long PrivateBefore, long PrivateAfter, double WorkingSetPerThread, double PrivatePerThread);

/// <summary>The driver's JSON.</summary>
[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, WriteIndented = true)]
[JsonSerializable(typeof(ServerStats))]
[JsonSerializable(typeof(LoadReport))]
[JsonSerializable(typeof(ReplayReport))]
[JsonSerializable(typeof(MemoryQueuedReport))]
[JsonSerializable(typeof(MemoryWorkersReport))]
internal sealed partial class DriverJson : JsonSerializerContext;
