using System.Globalization;
using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace PaymentCallbacks.LoadDriver.Adaptive;

/// <summary>The adaptive-workers benchmark's driver commands (benchmarks/adaptive-workers.sh calls them).</summary>
internal static class ScenarioCommands
{
    private static readonly CultureInfo s_inv = CultureInfo.InvariantCulture;

    /// <summary>Prints a scenario's server settings, or one of its values (--what sweep|min|max|manual-at|manual-workers|duration|neighbour).</summary>
    /// <param name="options">--scenario NAME [--quick] [--what ...].</param>
    /// <returns>The exit code.</returns>
    public static int Describe(Arguments options)
    {
        var plan = ScenarioPlan.Get(options.Required("scenario"), options.Flag("quick"));
        Console.WriteLine(options.Optional("what") switch
        {
            null or "server" => plan.ServerArgumentLine(),
            "sweep" => string.Join(' ', plan.Sweep),
            "min" => plan.MinWorkers.ToString(s_inv),
            "max" => plan.MaxWorkers.ToString(s_inv),
            "manual-at" => double.IsNaN(plan.ManualResizeAt) ? string.Empty : plan.ManualResizeAt.ToString(s_inv),
            "manual-workers" => plan.ManualWorkers.ToString(s_inv),
            "duration" => plan.Duration.ToString(s_inv),
            "neighbour" => double.IsNaN(plan.NeighbourAt) ? string.Empty : string.Create(s_inv, $"{plan.NeighbourAt} {plan.NeighbourSeconds} {plan.NeighbourThreads}"),
            var what => throw new ArgumentException($"--what must be server, sweep, min, max, manual-at, manual-workers, duration or neighbour, not '{what}'."),
        });
        return 0;
    }

    /// <summary>Runs one contender through one scenario against a started server.</summary>
    /// <param name="options">--base U --scenario NAME --contender NAME [--endpoint bounded|naive] [--quick] --out DIR.</param>
    /// <param name="cancellationToken">Stops the run.</param>
    /// <returns>The exit code.</returns>
    public static async Task<int> RunAsync(Arguments options, CancellationToken cancellationToken)
    {
        var plan = ScenarioPlan.Get(options.Required("scenario"), options.Flag("quick"));
        var endpoint = options.Optional("endpoint") ?? "bounded";
        if (endpoint is not ("bounded" or "naive"))
        {
            throw new ArgumentException($"--endpoint must be bounded or naive, not '{endpoint}'.");
        }

        var output = options.Required("out");
        Directory.CreateDirectory(output);
        var (summary, samples) = await ScenarioRunner.RunAsync(
            new Uri(options.Required("base")), plan, options.Required("contender"), endpoint,
            TimeSpan.FromMilliseconds(options.Number("sample-ms", 250)), cancellationToken).ConfigureAwait(false);
        await using (var writer = new StreamWriter(Path.Combine(output, "series.csv")))
        {
            ScenarioRunner.WriteCsv(writer, samples);
        }

        await File.WriteAllTextAsync(Path.Combine(output, "summary.json"), JsonSerializer.Serialize(summary, ScenarioJson.Default.ScenarioSummary), cancellationToken).ConfigureAwait(false);
        Console.WriteLine(JsonSerializer.Serialize(summary, ScenarioJson.Default.ScenarioSummary));
        return 0;
    }

    /// <summary>Writes DIR/adaptive-workers.md: per scenario, every contender against the oracle (the best fixed count of the sweep).</summary>
    /// <param name="options">--results DIR.</param>
    /// <returns>The exit code.</returns>
    public static int Report(Arguments options)
    {
        var results = options.Required("results");
        var md = new StringBuilder();
        var machine = Path.Combine(results, "machine.txt");
        if (File.Exists(machine))
        {
            md.AppendLine("```").Append(File.ReadAllText(machine).TrimEnd()).AppendLine().AppendLine("```").AppendLine();
        }

        foreach (var name in ScenarioPlan.Names)
        {
            var dir = Path.Combine(results, "raw", name);
            if (!Directory.Exists(dir))
            {
                continue;
            }

            var rows = Directory.GetFiles(dir, "summary.json", SearchOption.AllDirectories)
                .Select(f => JsonSerializer.Deserialize(File.ReadAllText(f), ScenarioJson.Default.ScenarioSummary)!)
                .ToList();
            var fixedRows = rows.Where(r => r.Contender.StartsWith("fixed-", StringComparison.Ordinal)).ToList();
            if (fixedRows.Count == 0)
            {
                continue;
            }

            var best = fixedRows.Max(r => r.Goodput);
            var oracle = fixedRows.Where(r => r.Goodput >= 0.99 * best).MinBy(r => r.RunTimeP99Ms)!;
            File.WriteAllText(Path.Combine(dir, "oracle.txt"), oracle.Contender);
            md.AppendLine(s_inv, $"### {name}").AppendLine();
            md.AppendLine(s_inv, $"Oracle: {oracle.Contender} (the most goodput of the fixed counts; within 1% of it, the lowest p99 run time).").AppendLine();
            md.AppendLine("| contender | endpoint | offered/s | goodput/s | vs oracle | p99 run time ms | vs oracle | mean workers | final | changes | most changes in 30 s (steady) | backlog drained in s | 503s | peak calls in dependency |");
            md.AppendLine("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
            foreach (var r in rows.OrderBy(Order).ThenBy(r => r.Contender, StringComparer.Ordinal))
            {
                md.AppendLine(string.Create(s_inv, $"| {r.Contender} | {r.Endpoint} | {r.Offered:F0} | {r.Goodput:F0} | {r.Goodput / Math.Max(1e-9, oracle.Goodput):F3} | {r.RunTimeP99Ms:F1} | {r.RunTimeP99Ms / Math.Max(1e-9, oracle.RunTimeP99Ms):F2} | {r.MeanWorkers:F1} | {r.FinalWorkers} | {r.Changes} | {r.SteadyChangesPer30s} | {(r.DrainSeconds < 0 ? "-" : r.DrainSeconds.ToString("F2", s_inv))} | {r.Rejected503} | {r.PeakInFlight} |"));
            }

            if (!rows.Any(r => r.Contender == "adaptive"))
            {
                md.AppendLine("| adaptive | bounded | not run: the adaptive mode is not configured (ADAPTIVE_SERVER_ARGS) | | | | | | | | | | | |");
            }

            md.AppendLine();
        }

        File.WriteAllText(Path.Combine(results, "adaptive-workers.md"), md.ToString());
        Console.Write(md.ToString());
        return 0;
    }

    private static int Order(ScenarioSummary r) => r.Contender switch
    {
        "fixed-min" => 0,
        "fixed-max" => 1,
        "threadpool" => 3,
        "manual" => 4,
        "adaptive" => 5,
        _ => 2,
    };
}

/// <summary>The scenario commands' JSON.</summary>
[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, WriteIndented = true)]
[JsonSerializable(typeof(ScenarioSummary))]
internal sealed partial class ScenarioJson : JsonSerializerContext;
