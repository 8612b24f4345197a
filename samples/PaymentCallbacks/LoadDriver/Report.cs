using System.Globalization;
using System.Text;
using System.Text.Json;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.LoadDriver;

/// <summary>
/// Turns the raw files of a benchmark run (<c>DIR/raw/...</c>) into <c>DIR/results.md</c>: one table per load shape,
/// the incident replay and the memory figures. Every figure is computed from what the server and the load tools
/// reported; nothing is estimated.
/// </summary>
internal static class Report
{
    private static readonly CultureInfo s_inv = CultureInfo.InvariantCulture;

    /// <summary>Writes the report.</summary>
    /// <param name="results">The results folder.</param>
    /// <returns>The exit code: 1 if a bounded row's ledger did not balance.</returns>
    public static int Write(string results)
    {
        var md = new StringBuilder();
        var balanced = true;
        var machine = Path.Combine(results, "machine.txt");
        if (File.Exists(machine))
        {
            md.AppendLine("Machine and settings:").AppendLine().AppendLine("```").Append(File.ReadAllText(machine).TrimEnd()).AppendLine().AppendLine("```").AppendLine();
        }

        foreach (var (shape, title) in (List<(string, string)>)[
            ("open", "Open loop (fixed arrival rate; latency from the intended send time)"),
            ("closed", "Closed loop (wrk, C connections, each sends again when answered; --timeout 30s)")])
        {
            var dir = Path.Combine(results, "raw", shape);
            if (!Directory.Exists(dir))
            {
                continue;
            }

            md.AppendLine(CultureInfo.InvariantCulture, $"### {title}").AppendLine();
            md.AppendLine("| endpoint | load | answered req/s | side effects/s | backlog at end | ledger | 503s | errors | request p50 / p90 / p99 / max (ms) | /ping p50 / p99 / max (ms) | pool threads (peak) | pool queue delay (peak ms) |");
            md.AppendLine("|---|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|");
            foreach (var rowDir in Directory.GetDirectories(dir).Order(StringComparer.Ordinal))
            {
                balanced &= AppendRow(md, rowDir);
            }

            md.AppendLine();
        }

        AppendReplay(md, Path.Combine(results, "raw", "replay"));
        AppendMemory(md, Path.Combine(results, "raw", "memory"));
        File.WriteAllText(Path.Combine(results, "results.md"), md.ToString());
        Console.WriteLine(md.ToString());
        return balanced ? 0 : 1;
    }

    private static bool AppendRow(StringBuilder md, string dir)
    {
        var row = File.ReadAllLines(Path.Combine(dir, "row.txt"))
            .Select(l => l.Split('=', 2)).Where(p => p.Length == 2).ToDictionary(p => p[0], p => p[1], StringComparer.Ordinal);
        var endpoint = row["endpoint"];
        var before = Read<ServerStats>(dir, "before.json");
        var after = Read<ServerStats>(dir, "after.json");
        var ledger = Read<ServerStats>(dir, "ledger.json");
        var ping = Read<LoadReport>(dir, "ping.json");
        var load = Read<LoadReport>(dir, "load.json");
        var wrk = File.Exists(Path.Combine(dir, "wrk.txt")) ? WrkOutput.Parse(File.ReadAllText(Path.Combine(dir, "wrk.txt"))) : null;

        string goodput = "-", backlog = "-", ledgerText = "-", answered = "-", latency = "-";
        long rejected = 0, errors = 0;
        var ok = true;
        if (before is not null && after is not null && endpoint != "none")
        {
            var seconds = Math.Max(1e-3, after.UptimeSeconds - before.UptimeSeconds);
            var (b, a, f) = endpoint switch
            {
                "naive" => (before.Naive.Completed, after.Naive.Completed, ledger?.Naive),
                "naive-sync" => (before.NaiveSync.Completed, after.NaiveSync.Completed, ledger?.NaiveSync),
                _ => (before.Bounded.Completed, after.Bounded.Completed, null),
            };
            goodput = ((a - b) / seconds).ToString("N0", s_inv);
            rejected = after.Bounded.Rejected503 - before.Bounded.Rejected503;
            if (endpoint == "bounded")
            {
                backlog = string.Create(s_inv, $"{after.Bounded.Queued:N0} of {after.Bounded.QueueCapacity:N0}");
                ok = ledger?.Bounded.LedgerBalanced == true;
                ledgerText = ledger is null
                    ? "not printed"
                    : string.Create(s_inv, $"{(ok ? "balanced" : "NOT balanced")}: {ledger.Bounded.Received:N0} = {ledger.Bounded.Rejected503:N0} 503 + {ledger.Bounded.Completed:N0} done + {ledger.Bounded.Failed:N0} failed + {ledger.Bounded.Queued + ledger.Bounded.Running:N0} queued + {ledger.Bounded.HandedBack:N0} handed back");
            }
            else
            {
                var inFlight = endpoint == "naive" ? after.Naive.InFlight : after.NaiveSync.InFlight;
                backlog = string.Create(s_inv, $"{inFlight:N0} (unbounded)");
                ledgerText = f is null ? "not printed" : string.Create(s_inv, $"{f.InFlight:N0} never ran (lost at exit, unreported)");
            }
        }

        if (load is not null)
        {
            answered = ((load.Ok + load.Status503 + load.OtherStatus) / load.DurationSeconds).ToString("N0", s_inv);
            latency = string.Create(s_inv, $"{load.P50Ms:N1} / {load.P90Ms:N1} / {load.P99Ms:N0} / {load.MaxMs:N0}");
            errors = load.Errors + load.Unfinished + load.OtherStatus;
        }
        else if (wrk is not null)
        {
            answered = wrk.RequestsPerSecond.ToString("N0", s_inv);
            latency = string.Create(s_inv, $"{wrk.P50Ms:N1} / {wrk.P90Ms:N1} / {wrk.P99Ms:N0} / {wrk.MaxMs:N0}");
            errors = wrk.SocketErrors + Math.Max(0, wrk.Non2xx - rejected);
        }

        var pingText = ping is null ? "-" : string.Create(s_inv, $"{ping.P50Ms:N1} / {ping.P99Ms:N1} / {ping.MaxMs:N0}{(ping.Errors + ping.Unfinished > 0 ? $" ({ping.Errors + ping.Unfinished} failed)" : "")}");
        var pool = after?.ThreadPool;
        md.AppendLine(string.Create(s_inv,
            $"| {row["label"]} | {row["load"]} | {answered} | {goodput} | {backlog} | {ledgerText} | {rejected:N0} | {errors:N0} | {latency} | {pingText} | {pool?.PeakThreads.ToString(s_inv) ?? "-"} | {pool?.PeakQueueDelayMs.ToString("N0", s_inv) ?? "-"} |"));
        return ok;
    }

    private static void AppendReplay(StringBuilder md, string dir)
    {
        var report = Read<ReplayReport>(dir, "replay.json");
        if (report is null)
        {
            return;
        }

        md.AppendLine("### Incident replay").AppendLine();
        md.AppendLine(string.Create(s_inv, $"""
            The bounded endpoint with {report.WorkersBefore} workers under {report.Load.TargetRate:N0} callbacks/s; at t = {report.ResizeRequestedAtSeconds:F1} s,
            `PUT /bounded-work/executors/payments/workers {"{"}"workers":{report.WorkersAfter}{"}"}` (HTTP {report.ResizeStatusCode}, answered in {report.ResizeAnsweredAfterMs:N0} ms).

            | | |
            |---|--:|
            | backlog peak (queue capacity {report.QueueCapacity:N0}) | {report.PeakBacklog:N0} |
            | resize request to new workers taking items | {Ms(report.NewWorkersBusyAfterMs)} |
            | resize request to backlog below 10% of capacity | {Ms(report.BacklogDrainedAfterMs)} |
            | side effects/s in the 2 s before the resize | {report.GoodputBefore:N0} |
            | side effects/s after the backlog drained | {report.GoodputAfter:N0} |
            | 503s before the resize / after the backlog drained | {report.Rejected503BeforeResize:N0} / {report.Rejected503AfterDrain:N0} |
            | ledger balanced at the end | {(report.LedgerBalanced ? "yes" : "NO")} |

            Samples every 250 ms: `raw/replay/replay.csv`; plot: `replay.png`. Bystander `/ping` latency over time: `bystander.png`.

            """));
    }

    private static void AppendMemory(StringBuilder md, string dir)
    {
        var on = Read<MemoryQueuedReport>(dir, "queued-flow-on.json");
        var off = Read<MemoryQueuedReport>(dir, "queued-flow-off.json");
        var workers = Read<MemoryWorkersReport>(dir, "workers.json");
        if (on is null && off is null && workers is null)
        {
            return;
        }

        md.AppendLine("### Memory").AppendLine();
        md.AppendLine("| measurement | items or threads | GC heap or RSS added | per item or thread |");
        md.AppendLine("|---|--:|--:|--:|");
        foreach (var q in new[] { on, off }.OfType<MemoryQueuedReport>())
        {
            md.AppendLine(string.Create(s_inv,
                $"| queued callback, FlowExecutionContext = {q.FlowExecutionContext.ToString().ToLowerInvariant()} (GC heap after a full collection) | {q.Queued:N0} | {Bytes(q.HeapAfter - q.HeapBefore)} | {q.BytesPerQueuedItem:N0} B |"));
        }

        if (workers is not null)
        {
            md.AppendLine(string.Create(s_inv,
                $"| idle worker thread (process RSS) | {workers.ThreadsAdded:N0} | {Bytes(workers.WorkingSetAfter - workers.WorkingSetBefore)} | {workers.WorkingSetPerThread / 1024:N1} KiB |"));
        }

        md.AppendLine();
    }

    private static string Ms(double ms) => double.IsNaN(ms) ? "not reached" : string.Create(s_inv, $"{ms:N0} ms (sampled every 250 ms)");

    private static string Bytes(long bytes) => string.Create(s_inv, $"{bytes / 1024.0 / 1024.0:N1} MiB");

    private static T? Read<T>(string dir, string file)
        where T : class
    {
        var path = Path.Combine(dir, file);
        if (!File.Exists(path) || new FileInfo(path).Length == 0)
        {
            return null;
        }

        return (T?)JsonSerializer.Deserialize(File.ReadAllText(path), typeof(T), DriverJson.Default);
    }
}
