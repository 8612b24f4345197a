using System.Diagnostics;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks.Trickle;

/// <summary>
/// The trickle harness: CPU time per item and wake-up latency when items trickle in at a fixed rate (1k, 5k and 20k
/// items/s by default), for BoundedExecutor with 2 and 1 workers, the shared ThreadPool and a raw channel read by
/// dedicated threads. Every row runs in a child process of its own (<see cref="TrickleChild"/>), so the process CPU
/// clock sees one contender only; the idle baseline (the same pacer, items run inline) is measured the same way at
/// each rate and subtracted. Prints one markdown table; <c>benchmarks/trickle.sh</c> runs it.
/// </summary>
internal static class TrickleHarness
{
    public const string Usage = "[--quick] [--seconds S] [--warmup S] [--rates R,R,...] [--contenders NAME,NAME,...]";

    public static int Run(ReadOnlySpan<string> args)
    {
        var arguments = new HarnessArguments(args, Usage, "--quick");
        var quick = arguments.Has("--quick");
        var seconds = arguments.Number("--seconds", quick ? 0.15 : 3.0, 0.05);
        var warmup = arguments.Number("--warmup", quick ? 0.1 : 1.0, 0.0);
        var rates = ParseList(arguments.Text("--rates") ?? "1000,5000,20000", "--rates")
            .Select(r => double.TryParse(r, NumberStyles.Float, CultureInfo.InvariantCulture, out var rate) && rate >= 1 && rate <= 1_000_000
                ? rate
                : throw new ArgumentException($"--rates: '{r}' is not a rate between 1 and 1,000,000 items/s."))
            .ToList();
        var contenders = ParseList(arguments.Text("--contenders") ?? string.Join(",", TrickleContender.Names.Skip(1)), "--contenders");
        arguments.EnsureAllUsed();
        foreach (var name in contenders)
        {
            _ = TrickleContender.LabelOf(name); // validates the name
        }

        if (rates.Any(rate => rate * seconds < 10))
        {
            throw new ArgumentException("--seconds: every rate needs at least 10 measured items (rate x seconds >= 10).");
        }

        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"# .NET {Environment.Version} ({RuntimeInformation.OSDescription.Trim()}, {RuntimeInformation.ProcessArchitecture}), {Environment.ProcessorCount} logical CPUs; {warmup:0.###} s warm-up + {seconds:0.###} s measured per row, one child process per row"));

        var rows = new List<(TrickleResult Result, TrickleResult Baseline)>();
        var method = string.Empty;
        foreach (var rate in rates)
        {
            var baseline = RunChild("idle", rate, warmup, seconds);
            method = baseline.PacerMethod;
            rows.Add((baseline, baseline));
            foreach (var name in contenders.Where(n => n != "idle"))
            {
                rows.Add((RunChild(name, rate, warmup, seconds), baseline));
            }
        }

        Console.WriteLine();
        Console.Write(FormatTable(rows, method));
        return 0;
    }

    private static string FormatTable(List<(TrickleResult Result, TrickleResult Baseline)> rows, string method)
    {
        var table = new StringBuilder();
        table.AppendLine("| items/s | contender | items | CPU µs/item | net CPU µs/item | net % of a core | wake p50 µs | wake p99 µs | wake max µs |");
        table.AppendLine("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        var worstLag = 0.0;
        var offRate = false;
        foreach (var (result, baseline) in rows)
        {
            worstLag = Math.Max(worstLag, result.LagP99Microseconds);
            var flag = result.IsOffRate ? " \\*" : string.Empty;
            offRate |= result.IsOffRate;
            var isBaseline = ReferenceEquals(result, baseline);
            var gross = result.CpuSeconds * 1e6 / result.Items;
            var net = isBaseline ? "–" : string.Create(CultureInfo.InvariantCulture, $"{(result.CpuSeconds - baseline.CpuSeconds) * 1e6 / result.Items:0.0}");
            var core = isBaseline ? "–" : string.Create(CultureInfo.InvariantCulture, $"{(result.CpuSeconds - baseline.CpuSeconds) / result.WallSeconds * 100:0.0}%");
            table.AppendLine(string.Create(CultureInfo.InvariantCulture,
                $"| {result.Rate:#,0} | {TrickleContender.LabelOf(result.Name)} | {result.Items:#,0}{flag} | {gross:0.0} | {net} | {core} | {result.P50:0.0} | {result.P99:0.0} | {result.Max:0.0} |"));
        }

        table.AppendLine();
        table.AppendLine("CPU: the child process's CPU time (all threads, user + kernel) over the measured window, per item; \"net\" subtracts the");
        table.AppendLine("idle baseline at the same rate (same pacer, items run inline), so it is the cost of handing items to the contender.");
        table.AppendLine("Wake: time from the submit call to the item's first instruction on the consumer. Lower is better everywhere.");
        table.AppendLine(string.Create(CultureInfo.InvariantCulture, $"Pacing: {method}; worst p99 pacer lag of any row {worstLag:0.0} µs."));
        if (offRate)
        {
            table.AppendLine("\\* The measured window of this row ran more than 5% off the target rate (the pacer or the items fell behind): the");
            table.AppendLine("machine was too busy for this row to mean anything; run again on a quiet machine.");
        }

        return table.ToString();
    }

    private static TrickleResult RunChild(string name, double rate, double warmup, double seconds)
    {
        var start = new ProcessStartInfo
        {
            FileName = Environment.ProcessPath ?? "dotnet",
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        if (string.Equals(Path.GetFileNameWithoutExtension(start.FileName), "dotnet", StringComparison.OrdinalIgnoreCase))
        {
            // Started as `dotnet BoundedWork.Benchmarks.Trickle.dll`: the child needs the assembly too.
            start.ArgumentList.Add(typeof(TrickleHarness).Assembly.Location);
        }

        foreach (var argument in new[] { TrickleChild.Verb, name, Invariant(rate), Invariant(warmup), Invariant(seconds) })
        {
            start.ArgumentList.Add(argument);
        }

        Console.Error.WriteLine(string.Create(CultureInfo.InvariantCulture, $"trickle: {name} at {rate:#,0}/s ..."));
        using var child = Process.Start(start) ?? throw new InvalidOperationException("Could not start the trickle child process.");
        var output = child.StandardOutput.ReadToEndAsync();
        if (!child.WaitForExit(TimeSpan.FromSeconds(warmup + seconds + 90)))
        {
            child.Kill(entireProcessTree: true);
            throw new TimeoutException($"The trickle child for {name} at {rate}/s did not finish.");
        }

        var line = output.GetAwaiter().GetResult().Split('\n').FirstOrDefault(l => l.StartsWith("RESULT\t", StringComparison.Ordinal));
        if (child.ExitCode != 0 || line is null)
        {
            throw new InvalidOperationException($"The trickle child for {name} at {rate}/s failed (exit code {child.ExitCode}).");
        }

        var result = TrickleResult.Parse(line);
        if (result.IsOffRate)
        {
            Console.Error.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"warning: {name} at {rate}/s: the measured window ran {result.Items / result.WallSeconds:0} items/s (the last items ran late?)."));
        }

        return result;
    }

    private static string Invariant(double value) => value.ToString("R", CultureInfo.InvariantCulture);

    private static List<string> ParseList(string text, string option)
    {
        var parts = text.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries).ToList();
        return parts.Count > 0 ? parts : throw new ArgumentException($"{option}: the list is empty.");
    }

    private sealed record TrickleResult(string Name, double Rate, int Items, double WallSeconds, double CpuSeconds, double P50, double P99, double Max, double LagP99Microseconds, string PacerMethod)
    {
        /// <summary>Gets whether the measured window ran more than 5% off the target rate.</summary>
        public bool IsOffRate => Math.Abs((Items / WallSeconds) - Rate) > Rate * 0.05;

        public static TrickleResult Parse(string line)
        {
            var f = line.TrimEnd('\r').Split('\t');
            static double D(string s) => double.Parse(s, CultureInfo.InvariantCulture);
            return new TrickleResult(f[1], D(f[2]), int.Parse(f[3], CultureInfo.InvariantCulture), D(f[4]), D(f[5]), D(f[6]), D(f[7]), D(f[8]), D(f[9]), f[10]);
        }
    }
}
