using System.Diagnostics;
using System.Globalization;
using System.Net.Http.Json;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.LoadDriver.Adaptive;

/// <summary>One sample of a scenario run's time series.</summary>
/// <param name="Seconds">Seconds since the load started.</param>
/// <param name="Workers">The executor's target worker count (the ThreadPool's threads for the ThreadPool contender).</param>
/// <param name="BusyWorkers">The executor's busy workers.</param>
/// <param name="Queued">Items waiting (the naive endpoint: received and not completed).</param>
/// <param name="QueueWaitMs">The oldest queued item's age (the bounded endpoint only).</param>
/// <param name="CompletedPerSecond">Side effects completed per second since the previous sample.</param>
/// <param name="RunTimeMs">The mean run time of the dependency's calls since the previous sample.</param>
/// <param name="RunTimeP99Ms">Their 99th percentile.</param>
/// <param name="RejectedPerSecond">503s per second since the previous sample.</param>
/// <param name="InFlight">Calls in the dependency (served or waiting for a connection).</param>
internal sealed record ScenarioSample(
    double Seconds, int Workers, int BusyWorkers, long Queued, double QueueWaitMs, double CompletedPerSecond,
    double RunTimeMs, double RunTimeP99Ms, double RejectedPerSecond, int InFlight);

/// <summary>What a contender achieved in a scenario, judged the same way for every contender.</summary>
/// <param name="Scenario">The scenario.</param>
/// <param name="Contender">The contender (fixed-min, fixed-max, fixed-N, threadpool, manual, adaptive).</param>
/// <param name="Endpoint">bounded or naive.</param>
/// <param name="Offered">Requests sent per second, on average.</param>
/// <param name="Goodput">Side effects completed per second over the judged window.</param>
/// <param name="RunTimeP99Ms">The dependency calls' 99th-percentile run time over the judged window.</param>
/// <param name="MeanWorkers">The mean worker count over the judged window.</param>
/// <param name="FinalWorkers">The worker count at the end.</param>
/// <param name="Changes">Worker count changes seen over the whole run.</param>
/// <param name="SteadyChangesPer30s">The most changes seen in 30 s of a steady window.</param>
/// <param name="DrainSeconds">From a backlog of 200 items to 10% of the queue, or -1 (none formed, or never drained).</param>
/// <param name="Rejected503">Requests refused with 503.</param>
/// <param name="PeakInFlight">The most calls in the dependency at once.</param>
internal sealed record ScenarioSummary(
    string Scenario, string Contender, string Endpoint, double Offered, double Goodput, double RunTimeP99Ms, double MeanWorkers,
    int FinalWorkers, int Changes, int SteadyChangesPer30s, double DrainSeconds, long Rejected503, int PeakInFlight);

/// <summary>
/// Runs one scenario's load against a started server, sampling <c>/stats/capacity</c> every
/// <c>sampleInterval</c>, optionally resizing through the admin API at a set time (the manual contender).
/// </summary>
internal static class ScenarioRunner
{
    /// <summary>Runs the scenario.</summary>
    /// <param name="baseUrl">The server.</param>
    /// <param name="plan">The scenario.</param>
    /// <param name="contender">The contender's name, for the summary.</param>
    /// <param name="endpoint">bounded or naive.</param>
    /// <param name="sampleInterval">How often to sample.</param>
    /// <param name="cancellationToken">Stops the run.</param>
    /// <returns>The summary and the time series.</returns>
    public static async Task<(ScenarioSummary Summary, IReadOnlyList<ScenarioSample> Samples)> RunAsync(
        Uri baseUrl, ScenarioPlan plan, string contender, string endpoint, TimeSpan sampleInterval, CancellationToken cancellationToken)
    {
        using var loadClient = OpenLoopLoad.CreateClient(256);
        using var probe = OpenLoopLoad.CreateClient(4);
        var naive = endpoint == "naive";
        var started = Stopwatch.GetTimestamp();
        var load = RunPhasesAsync(loadClient, new Uri(baseUrl, "/callbacks/" + endpoint), plan.Phases, cancellationToken);
        var resized = double.IsNaN(plan.ManualResizeAt) || contender != "manual";
        var first = await ReadAsync(probe, baseUrl, cancellationToken).ConfigureAwait(false);
        var previous = first;
        var previousSeconds = 0.0;
        var samples = new List<ScenarioSample>();
        var stats = new List<(double Seconds, CapacityStats Stats)> { (0, first) };
        var next = sampleInterval;
        while (!load.IsCompleted)
        {
            var wait = next - Stopwatch.GetElapsedTime(started);
            if (wait > TimeSpan.Zero)
            {
                await Task.WhenAny(load, Task.Delay(wait, cancellationToken)).ConfigureAwait(false);
            }

            next += sampleInterval;
            if (!resized && Stopwatch.GetElapsedTime(started).TotalSeconds >= plan.ManualResizeAt)
            {
                resized = true;
                await IncidentReplay.ResizeAsync(probe, baseUrl, plan.ManualWorkers, cancellationToken).ConfigureAwait(false);
            }

            CapacityStats now;
            try
            {
                now = await ReadAsync(probe, baseUrl, cancellationToken).ConfigureAwait(false);
            }
            catch (HttpRequestException)
            {
                continue;
            }

            var seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
            var span = Math.Max(1e-3, seconds - previousSeconds);
            var calls = Histogram(previous, now);
            samples.Add(new ScenarioSample(
                seconds,
                naive ? now.ThreadPoolThreads : now.Workers,
                naive ? 0 : now.BusyWorkers,
                naive ? now.NaiveReceived - now.NaiveCompleted : now.Queued,
                naive ? 0 : now.OldestQueuedMs,
                (Completed(now, naive) - Completed(previous, naive)) / span,
                RunTimeHistogram.MeanMs(calls),
                RunTimeHistogram.PercentileMs(calls, 0.99),
                (now.BoundedRejected503 - previous.BoundedRejected503) / span,
                now.Dependency?.InFlight ?? 0));
            stats.Add((seconds, now));
            previous = now;
            previousSeconds = seconds;
        }

        var sent = await load.ConfigureAwait(false);
        return (Summarize(plan, contender, endpoint, sent, samples, stats, naive), samples);
    }

    /// <summary>Writes the time series as CSV (the columns the gnuplot script plots).</summary>
    /// <param name="writer">The destination.</param>
    /// <param name="samples">The samples.</param>
    public static void WriteCsv(TextWriter writer, IReadOnlyList<ScenarioSample> samples)
    {
        writer.WriteLine("seconds,workers,busy_workers,queued,queue_wait_ms,completed_per_s,run_time_ms,run_time_p99_ms,rejected_per_s,in_flight");
        foreach (var s in samples)
        {
            writer.WriteLine(string.Create(
                CultureInfo.InvariantCulture,
                $"{s.Seconds:F3},{s.Workers},{s.BusyWorkers},{s.Queued},{s.QueueWaitMs:F1},{s.CompletedPerSecond:F1},{s.RunTimeMs:F2},{s.RunTimeP99Ms:F2},{s.RejectedPerSecond:F1},{s.InFlight}"));
        }
    }

    private static async Task<long> RunPhasesAsync(HttpClient client, Uri url, IReadOnlyList<LoadPhase> phases, CancellationToken cancellationToken)
    {
        long sent = 0;
        foreach (var phase in phases)
        {
            var report = await new OpenLoopLoad(client, url, HttpMethod.Post, phase.Rate, TimeSpan.FromSeconds(phase.Seconds))
                .RunAsync(TimeSpan.FromSeconds(2), cancellationToken).ConfigureAwait(false);
            sent += report.Sent;
        }

        return sent;
    }

    private static async Task<CapacityStats> ReadAsync(HttpClient client, Uri baseUrl, CancellationToken cancellationToken) =>
        await client.GetFromJsonAsync(new Uri(baseUrl, "/stats/capacity"), CapacityJson.Default.CapacityStats, cancellationToken).ConfigureAwait(false)
        ?? throw new InvalidOperationException("GET /stats/capacity returned nothing.");

    private static long Completed(CapacityStats s, bool naive) => naive ? s.NaiveCompleted : s.BoundedCompleted;

    private static long[] Histogram(CapacityStats earlier, CapacityStats later) =>
        later.Dependency is { } d
            ? RunTimeHistogram.Between(earlier.Dependency?.RunTimeBuckets, d.RunTimeBuckets)
            : new long[RunTimeHistogram.Buckets];

    private static ScenarioSummary Summarize(
        ScenarioPlan plan, string contender, string endpoint, long sent, List<ScenarioSample> samples,
        List<(double Seconds, CapacityStats Stats)> stats, bool naive)
    {
        var end = stats[^1];
        var from = stats.LastOrDefault(s => s.Seconds <= plan.MeasureFrom, stats[0]);
        var window = samples.Where(s => s.Seconds > plan.MeasureFrom).ToList();
        var changeTimes = samples.Zip(samples.Skip(1)).Where(p => p.First.Workers != p.Second.Workers).Select(p => p.Second.Seconds).ToList();
        var steady = plan.SteadyWindows
            .Select(w => changeTimes.Where(t => t > w.From && t <= w.To).Select(t => changeTimes.Count(u => u >= t && u < t + 30 && u <= w.To)).DefaultIfEmpty(0).Max())
            .DefaultIfEmpty(0).Max();
        var formed = samples.FirstOrDefault(s => s.Queued >= 200);
        var drained = formed is null ? null : samples.FirstOrDefault(s => s.Seconds > formed.Seconds && s.Queued <= ScenarioPlan.QueueCapacity / 10);
        return new ScenarioSummary(
            plan.Name,
            contender,
            endpoint,
            sent / Math.Max(1e-3, plan.Duration),
            (Completed(end.Stats, naive) - Completed(from.Stats, naive)) / Math.Max(1e-3, end.Seconds - from.Seconds),
            RunTimeHistogram.PercentileMs(Histogram(from.Stats, end.Stats), 0.99),
            window.Count > 0 ? window.Average(s => s.Workers) : 0,
            samples.Count > 0 ? samples[^1].Workers : 0,
            changeTimes.Count,
            steady,
            drained is null ? -1 : drained.Seconds - formed!.Seconds,
            end.Stats.BoundedRejected503 - stats[0].Stats.BoundedRejected503,
            end.Stats.Dependency?.PeakInFlight ?? 0);
    }
}
