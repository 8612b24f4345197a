using System.Globalization;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Demo;

/// <summary>
/// The short end-to-end run: the same callback load against the naive endpoints and the bounded one, each on a
/// freshly started server, with a bystander <c>/ping</c> probe; then the incident replayed (too few workers, a
/// resize through the admin API). Prints a table, a verdict and what the library does not do.
/// </summary>
internal static class DemoRunner
{
    private const int Workers = 8;
    private const int IncidentWorkers = 2;
    private const int ResizedWorkers = 16;
    private const double PingRate = 20;

    /// <summary>Runs the demo.</summary>
    /// <param name="args"><c>--quick</c> for the short CI version; <c>--rate N</c> to set the callback rate.</param>
    /// <returns>The exit code: 0 when every phase ran and the bounded ledger balanced.</returns>
    public static async Task<int> RunAsync(string[] args)
    {
        var quick = args.Contains("--quick");
        var rateIndex = Array.IndexOf(args, "--rate");
        var rate = 2_000.0;
        if (rateIndex >= 0
            && (rateIndex + 1 >= args.Length
                || !double.TryParse(args[rateIndex + 1], NumberStyles.Float, CultureInfo.InvariantCulture, out rate)
                || rate <= 0))
        {
            Console.Error.WriteLine("--rate must be followed by a positive number of callbacks per second, such as --rate 1500.");
            return 2;
        }

        var phase = TimeSpan.FromSeconds(quick ? 3 : 8);
        var warmup = TimeSpan.FromSeconds(quick ? 1 : 2);

        using var cts = new CancellationTokenSource();
        Console.CancelKeyPress += (_, e) =>
        {
            e.Cancel = true;
            cts.Cancel();
            ChildServer.KillAll();
        };
        AppDomain.CurrentDomain.ProcessExit += (_, _) => ChildServer.KillAll();

        Console.WriteLine($"""
            Payment callbacks: each request does a little work, then fires a side effect that BLOCKS its thread
            (a synchronous call to a slow dependency, 1-5 ms, plus a little CPU). {rate:N0} callbacks/s arrive at a
            fixed rate for {phase.TotalSeconds:N0} s per row, while a bystander GETs /ping {PingRate:N0} times a second. Each row
            runs on a freshly started server (a child process on 127.0.0.1); the load comes from this process.
            The bounded endpoint runs side effects on {Workers} dedicated worker threads (queue 2,000; full -> 503).

            """);

        try
        {
            var rows = new List<Row>();
            foreach (var (label, path) in (List<(string, string)>)[
                ("naive: Task.Run", "naive"), ("naive: inline (sync)", "naive-sync"), ("bounded executor", "bounded")])
            {
                Console.Write($"  running {label,-22} ...");
                var row = await RunRowAsync(label, path, rate, phase, warmup, baseline: path == "bounded", cts.Token).ConfigureAwait(false);
                rows.AddRange(row);
                Console.WriteLine(" done");
            }

            Console.WriteLine();
            PrintTable(rows);
            var naive = rows.Where(r => r.Path.StartsWith("naive", StringComparison.Ordinal)).ToList();
            var bounded = rows.Single(r => r.Path == "bounded");
            var baseline = rows.Single(r => r.Path == "none");
            var worstNaivePing = naive.Max(r => r.Ping.P99Ms);
            var bestNaiveGoodput = naive.Max(r => r.Goodput);
            Console.WriteLine();
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"""
                Verdict: on its {Workers} workers the executor kept /ping at {bounded.Ping.P99Ms:N1} ms p99 (no load: {baseline.Ping.P99Ms:N1} ms; naive: up to {worstNaivePing:N0} ms)
                         with {bounded.Threads} pool threads, completing {bounded.Goodput:N0} side effects/s against the naive endpoints' best {bestNaiveGoodput:N0}/s.
                """));

            Console.WriteLine();
            Console.WriteLine($"Incident replay: the bounded endpoint with {IncidentWorkers} workers under the same load; the backlog fills the queue,");
            Console.WriteLine($"excess callbacks get 503 + Retry-After; then PUT /bounded-work/executors/payments/workers {{\"workers\":{ResizedWorkers}}}.");
            var ok = bounded.LedgerBalanced;
            ok &= await RunIncidentAsync(rate, quick, cts.Token).ConfigureAwait(false);

            Console.WriteLine("""

                What the library does: blocking side effects run on their own few threads behind a bounded queue, so the
                shared ThreadPool (requests, timers, continuations) stays free; overload becomes a visible, counted 503
                instead of an invisible, unbounded backlog; operators resize the workers at runtime. What it does NOT do:
                make blocking work faster than its workers can run it. N workers x (1 / side-effect time) is the ceiling;
                above it, callers are refused (or wait), and only more workers, a faster dependency or async I/O help.
                """);
            return ok ? 0 : 1;
        }
        catch (OperationCanceledException) when (cts.IsCancellationRequested)
        {
            Console.Error.WriteLine("Cancelled.");
            return 130;
        }
        finally
        {
            ChildServer.KillAll();
        }
    }

    private static async Task<IReadOnlyList<Row>> RunRowAsync(
        string label, string path, double rate, TimeSpan phase, TimeSpan warmup, bool baseline, CancellationToken cancellationToken)
    {
        var server = await ChildServer.StartAsync([$"--BoundedWork:Executors:payments:WorkerCount={Workers}"], cancellationToken).ConfigureAwait(false);
        await using var child = server.ConfigureAwait(false);
        using var client = OpenLoopLoad.CreateClient(256);
        using var pingClient = OpenLoopLoad.CreateClient(16);
        var rows = new List<Row>();
        var ping = new Uri(server.BaseUrl, "/ping");

        if (baseline)
        {
            // The bystander alone: its latency with no callback load, for comparison.
            await new OpenLoopLoad(pingClient, ping, HttpMethod.Get, PingRate, TimeSpan.FromSeconds(1)).RunAsync(TimeSpan.FromSeconds(2), cancellationToken).ConfigureAwait(false);
            var alone = await new OpenLoopLoad(pingClient, ping, HttpMethod.Get, PingRate, phase).RunAsync(TimeSpan.FromSeconds(5), cancellationToken).ConfigureAwait(false);
            var idle = await IncidentReplay.ReadStatsAsync(pingClient, server.BaseUrl, cancellationToken).ConfigureAwait(false);
            rows.Add(new Row("no callback load", "none", 0, 0, "-", 0, 0, null, alone, idle.ThreadPool.PeakThreads, idle.ThreadPool.PeakQueueDelayMs, true));
        }

        var url = new Uri(server.BaseUrl, "/callbacks/" + path);
        await new OpenLoopLoad(client, url, HttpMethod.Post, rate / 10, warmup).RunAsync(TimeSpan.FromSeconds(5), cancellationToken).ConfigureAwait(false);
        using (var reset = await pingClient.PostAsync(new Uri(server.BaseUrl, "/stats/reset-peaks"), null, cancellationToken).ConfigureAwait(false))
        {
            reset.EnsureSuccessStatusCode();
        }

        var before = await IncidentReplay.ReadStatsAsync(pingClient, server.BaseUrl, cancellationToken).ConfigureAwait(false);
        var loadTask = new OpenLoopLoad(client, url, HttpMethod.Post, rate, phase).RunAsync(TimeSpan.FromSeconds(5), cancellationToken);
        var pingTask = new OpenLoopLoad(pingClient, ping, HttpMethod.Get, PingRate, phase).RunAsync(TimeSpan.FromSeconds(5), cancellationToken);
        await Task.Delay(phase, cancellationToken).ConfigureAwait(false);
        var after = await IncidentReplay.ReadStatsAsync(pingClient, server.BaseUrl, cancellationToken).ConfigureAwait(false);
        var load = await loadTask.ConfigureAwait(false);
        var pingReport = await pingTask.ConfigureAwait(false);

        var (completedBefore, completedAfter) = path switch
        {
            "naive" => (before.Naive.Completed, after.Naive.Completed),
            "naive-sync" => (before.NaiveSync.Completed, after.NaiveSync.Completed),
            _ => (before.Bounded.Completed, after.Bounded.Completed),
        };
        var goodput = (completedAfter - completedBefore) / Math.Max(1e-3, after.UptimeSeconds - before.UptimeSeconds);
        var final = await server.StopAsync(TimeSpan.FromSeconds(10)).ConfigureAwait(false) ?? after;
        var (backlogText, balanced) = path switch
        {
            "naive" => ($"{after.Naive.InFlight:N0} (unbounded)", true),
            "naive-sync" => ($"{after.NaiveSync.InFlight:N0} (in requests)", true),
            _ => ($"{after.Bounded.Queued:N0} of {after.Bounded.QueueCapacity:N0}", final.Bounded.LedgerBalanced),
        };
        rows.Add(new Row(label, path, goodput, rate, backlogText, load.Status503, load.Errors + load.Unfinished + load.OtherStatus, load, pingReport,
            after.ThreadPool.PeakThreads, after.ThreadPool.PeakQueueDelayMs, balanced));
        return rows;
    }

    private static async Task<bool> RunIncidentAsync(double rate, bool quick, CancellationToken cancellationToken)
    {
        var server = await ChildServer.StartAsync([$"--BoundedWork:Executors:payments:WorkerCount={IncidentWorkers}"], cancellationToken).ConfigureAwait(false);
        await using var child = server.ConfigureAwait(false);
        var duration = TimeSpan.FromSeconds(quick ? 6 : 10);
        var resizeAt = TimeSpan.FromSeconds(quick ? 2.5 : 4);
        var lastPrinted = -1.0;
        var (report, _) = await IncidentReplay.RunAsync(
            server.BaseUrl, rate, duration, resizeAt, ResizedWorkers, TimeSpan.FromMilliseconds(250),
            s =>
            {
                if (s.Seconds - lastPrinted >= 0.99)
                {
                    lastPrinted = s.Seconds;
                    Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                        $"  t={s.Seconds,4:F1}s  workers {s.Workers,2} (busy {s.BusyWorkers,2})  queued {s.Queued,5:N0}  503s so far {s.Rejected503,6:N0}  side effects/s {s.Goodput,6:N0}"));
                }
            },
            cancellationToken).ConfigureAwait(false);
        var final = await server.StopAsync(TimeSpan.FromSeconds(10)).ConfigureAwait(false);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"""
              Resize requested at t={report.ResizeRequestedAtSeconds:F1}s: HTTP {report.ResizeStatusCode} in {report.ResizeAnsweredAfterMs:N0} ms; new workers busy within {Ms(report.NewWorkersBusyAfterMs)};
              backlog (peak {report.PeakBacklog:N0} of {report.QueueCapacity:N0}) below 10% within {Ms(report.BacklogDrainedAfterMs)}. Side effects/s: {report.GoodputBefore:N0} before, {report.GoodputAfter:N0} after.
              Ledger after shutdown: {(final is null ? "not printed (server killed)" : Ledger(final))}
            """));
        return report.ResizeStatusCode == 200 && (final?.Bounded.LedgerBalanced ?? false);
    }

    private static string Ms(double ms) => double.IsNaN(ms) ? "(not reached; samples every 250 ms)" : string.Create(CultureInfo.InvariantCulture, $"{ms:N0} ms");

    private static string Ledger(ServerStats s) => string.Create(CultureInfo.InvariantCulture,
        $"{s.Bounded.Received:N0} received = {s.Bounded.Rejected503:N0} refused (503) + {s.Bounded.Completed:N0} completed + {s.Bounded.Failed:N0} failed + {s.Bounded.Queued + s.Bounded.Running:N0} queued or running + {s.Bounded.HandedBack:N0} handed back: {(s.Bounded.LedgerBalanced ? "balanced" : "NOT BALANCED")}");

    private static void PrintTable(List<Row> rows)
    {
        Console.WriteLine("| endpoint | side effects/s | backlog at end | 503s | errors | request p50 / p99 / max (ms) | /ping p50 / p99 / max (ms) | pool threads (peak) | pool queue delay (peak ms) |");
        Console.WriteLine("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
        foreach (var r in rows.OrderBy(r => r.Path != "none"))
        {
            var request = r.Load is null ? "-" : string.Create(CultureInfo.InvariantCulture, $"{r.Load.P50Ms:N1} / {r.Load.P99Ms:N0} / {r.Load.MaxMs:N0}");
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"| {r.Label} | {(r.Load is null ? "-" : r.Goodput.ToString("N0", CultureInfo.InvariantCulture))} | {r.Backlog} | {r.Status503:N0} | {r.Errors:N0} | {request} | {r.Ping.P50Ms:N1} / {r.Ping.P99Ms:N1} / {r.Ping.MaxMs:N0} | {r.Threads} | {r.QueueDelayMs:N0} |"));
        }

        Console.WriteLine("errors: failed, timed-out or unanswered requests; a backlog that is not bounded is lost when the process stops.");
    }

    private sealed record Row(
        string Label, string Path, double Goodput, double Rate, string Backlog, long Status503, long Errors,
        LoadReport? Load, LoadReport Ping, int Threads, double QueueDelayMs, bool LedgerBalanced);
}
