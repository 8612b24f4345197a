using System.Diagnostics;
using System.Globalization;
using System.Net.Http.Json;
using System.Text;

namespace PaymentCallbacks.Shared;

/// <summary>
/// Replays the incident: an open-loop load on <c>/callbacks/bounded</c> while the executor has too few workers, a
/// resize through the admin API (<c>PUT /bounded-work/executors/payments/workers</c>) at a set time, and the backlog
/// and goodput sampled every <c>sampleInterval</c> from <c>/stats</c>.
/// </summary>
internal static class IncidentReplay
{
    /// <summary>The executor's registration name in the sample.</summary>
    public const string ExecutorName = "payments";

    /// <summary>Runs the replay against a server that is already up.</summary>
    /// <param name="baseUrl">The server's base address.</param>
    /// <param name="rate">Callback requests per second.</param>
    /// <param name="duration">How long the load runs.</param>
    /// <param name="resizeAt">When to request the resize, from the start of the load.</param>
    /// <param name="workersAfter">The worker count to ask for.</param>
    /// <param name="sampleInterval">How often to read <c>/stats</c>.</param>
    /// <param name="onSample">Told about each sample as it is taken (for live output), or <see langword="null"/>.</param>
    /// <param name="cancellationToken">Stops the replay.</param>
    /// <returns>The report and every sample.</returns>
    public static async Task<(ReplayReport Report, IReadOnlyList<ReplaySample> Samples)> RunAsync(
        Uri baseUrl,
        double rate,
        TimeSpan duration,
        TimeSpan resizeAt,
        int workersAfter,
        TimeSpan sampleInterval,
        Action<ReplaySample>? onSample,
        CancellationToken cancellationToken)
    {
        using var loadClient = OpenLoopLoad.CreateClient(256);
        using var probeClient = OpenLoopLoad.CreateClient(4);
        var initial = await ReadStatsAsync(probeClient, baseUrl, cancellationToken).ConfigureAwait(false);
        var workersBefore = initial.Bounded.Workers;
        var load = new OpenLoopLoad(loadClient, new Uri(baseUrl, "/callbacks/bounded"), HttpMethod.Post, rate, duration);
        var started = Stopwatch.GetTimestamp();
        var loadTask = load.RunAsync(TimeSpan.FromSeconds(10), cancellationToken);

        var samples = new List<ReplaySample>();
        double resizeAtSeconds = double.NaN, resizeAnsweredMs = double.NaN, busyAfterMs = double.NaN, drainedAfterMs = double.NaN;
        var resizeStatus = 0;
        long peakBacklog = 0, rejectedAtResize = 0, rejectedAtDrain = 0;
        double goodputBefore = 0, goodputAfter = 0;
        var previous = (Seconds: 0.0, initial.Bounded.Completed);
        var nextSample = sampleInterval;
        while (!loadTask.IsCompleted && !cancellationToken.IsCancellationRequested)
        {
            var wait = nextSample - Stopwatch.GetElapsedTime(started);
            if (wait > TimeSpan.Zero)
            {
                await Task.Delay(wait, cancellationToken).ConfigureAwait(false);
            }

            nextSample += sampleInterval;
            if (double.IsNaN(resizeAtSeconds) && Stopwatch.GetElapsedTime(started) >= resizeAt)
            {
                resizeAtSeconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
                rejectedAtResize = samples.Count > 0 ? samples[^1].Rejected503 : 0;
                goodputBefore = AverageGoodput(samples, resizeAtSeconds - 2, resizeAtSeconds);
                var sentAt = Stopwatch.GetTimestamp();
                resizeStatus = await ResizeAsync(probeClient, baseUrl, workersAfter, cancellationToken).ConfigureAwait(false);
                resizeAnsweredMs = Stopwatch.GetElapsedTime(sentAt).TotalMilliseconds;
            }

            ServerStats stats;
            try
            {
                stats = await ReadStatsAsync(probeClient, baseUrl, cancellationToken).ConfigureAwait(false);
            }
            catch (HttpRequestException)
            {
                continue;
            }

            var now = Stopwatch.GetElapsedTime(started).TotalSeconds;
            var goodput = (stats.Bounded.Completed - previous.Completed) / Math.Max(1e-3, now - previous.Seconds);
            previous = (now, stats.Bounded.Completed);
            var sample = new ReplaySample(now, stats.Bounded.Queued, stats.Bounded.Completed, stats.Bounded.Rejected503, stats.Bounded.Workers, stats.Bounded.BusyWorkers, goodput);
            samples.Add(sample);
            onSample?.Invoke(sample);
            peakBacklog = Math.Max(peakBacklog, sample.Queued);
            if (!double.IsNaN(resizeAtSeconds))
            {
                var sinceResizeMs = (now - resizeAtSeconds) * 1000;
                if (double.IsNaN(busyAfterMs) && sample.BusyWorkers > workersBefore)
                {
                    busyAfterMs = sinceResizeMs;
                }

                if (double.IsNaN(drainedAfterMs) && sample.Queued <= stats.Bounded.QueueCapacity / 10)
                {
                    drainedAfterMs = sinceResizeMs;
                    rejectedAtDrain = sample.Rejected503;
                }
            }
        }

        var report = await loadTask.ConfigureAwait(false);
        var end = Stopwatch.GetElapsedTime(started).TotalSeconds;
        if (!double.IsNaN(drainedAfterMs))
        {
            goodputAfter = AverageGoodput(samples, resizeAtSeconds + (drainedAfterMs / 1000), end);
        }

        var final = await ReadStatsAsync(probeClient, baseUrl, cancellationToken).ConfigureAwait(false);
        return (new ReplayReport(
            workersBefore, workersAfter, final.Bounded.QueueCapacity, resizeAtSeconds, resizeStatus, resizeAnsweredMs,
            busyAfterMs, drainedAfterMs, peakBacklog, goodputBefore, goodputAfter, rejectedAtResize,
            double.IsNaN(drainedAfterMs) ? -1 : final.Bounded.Rejected503 - rejectedAtDrain,
            final.Bounded.LedgerBalanced, report), samples);
    }

    /// <summary>Asks the admin console for a new worker count.</summary>
    /// <param name="client">The client.</param>
    /// <param name="baseUrl">The server's base address.</param>
    /// <param name="workers">The worker count.</param>
    /// <param name="cancellationToken">Cancels the request.</param>
    /// <returns>The HTTP status code of the answer.</returns>
    public static async Task<int> ResizeAsync(HttpClient client, Uri baseUrl, int workers, CancellationToken cancellationToken)
    {
        using var request = new HttpRequestMessage(HttpMethod.Put, new Uri(baseUrl, $"/bounded-work/executors/{ExecutorName}/workers"))
        {
            Content = new StringContent(
                string.Create(CultureInfo.InvariantCulture, $$"""{"workers":{{workers}}}"""), Encoding.UTF8, "application/json"),
        };
        request.Headers.Add("X-BoundedWork-Admin", "1");
        using var response = await client.SendAsync(request, cancellationToken).ConfigureAwait(false);
        return (int)response.StatusCode;
    }

    /// <summary>Reads <c>GET /stats</c>.</summary>
    /// <param name="client">The client.</param>
    /// <param name="baseUrl">The server's base address.</param>
    /// <param name="cancellationToken">Cancels the request.</param>
    /// <returns>The stats.</returns>
    public static Task<ServerStats> ReadStatsAsync(HttpClient client, Uri baseUrl, CancellationToken cancellationToken) =>
        ReadStatsAsync(client, baseUrl, collect: false, cancellationToken);

    /// <summary>Reads <c>GET /stats</c>, after a full blocking garbage collection in the server if asked.</summary>
    /// <param name="client">The client.</param>
    /// <param name="baseUrl">The server's base address.</param>
    /// <param name="collect">Whether the server collects garbage first (for memory figures).</param>
    /// <param name="cancellationToken">Cancels the request.</param>
    /// <returns>The stats.</returns>
    public static async Task<ServerStats> ReadStatsAsync(HttpClient client, Uri baseUrl, bool collect, CancellationToken cancellationToken) =>
        await client.GetFromJsonAsync(new Uri(baseUrl, collect ? "/stats?collect=true" : "/stats"), StatsJson.Default.ServerStats, cancellationToken).ConfigureAwait(false)
        ?? throw new InvalidOperationException("GET /stats returned nothing.");

    /// <summary>Writes the samples as CSV.</summary>
    /// <param name="writer">The destination.</param>
    /// <param name="samples">The samples.</param>
    public static void WriteCsv(TextWriter writer, IReadOnlyList<ReplaySample> samples)
    {
        writer.WriteLine("seconds,queued,completed,rejected_503,workers,busy_workers,goodput_per_s");
        foreach (var s in samples)
        {
            writer.WriteLine(string.Create(
                CultureInfo.InvariantCulture,
                $"{s.Seconds:F3},{s.Queued},{s.Completed},{s.Rejected503},{s.Workers},{s.BusyWorkers},{s.Goodput:F1}"));
        }
    }

    private static double AverageGoodput(List<ReplaySample> samples, double from, double to)
    {
        var window = samples.Where(s => s.Seconds > from && s.Seconds <= to).ToList();
        if (window.Count < 2)
        {
            return window.Count == 1 ? window[0].Goodput : 0;
        }

        return (window[^1].Completed - window[0].Completed) / Math.Max(1e-3, window[^1].Seconds - window[0].Seconds);
    }
}
