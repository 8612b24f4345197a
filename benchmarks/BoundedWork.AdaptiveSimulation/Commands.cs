using System.Globalization;
using System.Text;
using BoundedWork.Internal.Adaptive;

namespace BoundedWork.AdaptiveSimulation;

/// <summary>Command-line options as <c>--name value</c> pairs.</summary>
internal sealed class Options
{
    private readonly Dictionary<string, string> _values = new(StringComparer.Ordinal);

    public static Options Parse(string[] args)
    {
        var options = new Options();
        for (var i = 0; i < args.Length; i++)
        {
            if (!args[i].StartsWith("--", StringComparison.Ordinal))
            {
                throw new ArgumentException($"Unexpected argument '{args[i]}': options are --name value.");
            }

            var hasValue = i + 1 < args.Length && !args[i + 1].StartsWith("--", StringComparison.Ordinal);
            options._values[args[i][2..]] = hasValue ? args[++i] : "true";
        }

        return options;
    }

    public string? Get(string name) => _values.GetValueOrDefault(name);

    public int Int(string name, int fallback) =>
        _values.TryGetValue(name, out var text)
            ? int.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out var value) && value > 0 ? value : throw new ArgumentException($"--{name} must be a positive integer, not '{text}'.")
            : fallback;

    public IReadOnlyList<string> ScenarioNames() => Get("scenario") is { } one ? [Scenarios.Get(one, null) is not null ? one : throw new ArgumentException(one)] : Scenarios.Names;
}

/// <summary>One contender's outcome in one scenario.</summary>
internal sealed record ScenarioRow(string Contender, SimulationResult Result, ScenarioMetrics Metrics);

/// <summary>What a scenario is judged on, computed the same way for every contender.</summary>
/// <param name="Goodput">Completions per second over the measured window.</param>
/// <param name="P99RunTimeMs">The items' 99th-percentile run time over the measured window.</param>
/// <param name="MeanWorkers">The mean worker count over the measured window.</param>
/// <param name="FinalWorkers">The worker count at the end.</param>
/// <param name="Changes">Count changes over the whole run.</param>
/// <param name="SteadyChangesPer30s">The most changes in any 30 s of a steady phase (bursts scenario; otherwise the last half of the run).</param>
/// <param name="DrainSeconds">From the backlog forming (200 items) to below 10% of the queue (seed scenario), or NaN.</param>
/// <param name="Rejected">Items rejected because the queue was full.</param>
internal sealed record ScenarioMetrics(
    double Goodput, double P99RunTimeMs, double MeanWorkers, int FinalWorkers, int Changes, int SteadyChangesPer30s,
    double DrainSeconds, long Rejected)
{
    /// <summary>Measures a run.</summary>
    /// <param name="name">The scenario's name.</param>
    /// <param name="result">The run.</param>
    /// <returns>The metrics.</returns>
    public static ScenarioMetrics Of(string name, SimulationResult result)
    {
        var end = result.Settings.Duration.TotalSeconds;
        var from = name == "seed" ? 0 : 10;
        var drain = result.Drain(200, result.Settings.QueueCapacity / 10);
        var steady = name == "bursts"
            ? Enumerable.Range(0, (int)(end / 30)).Max(phase => result.MostChangesInAnyWindow(30, (phase * 30) + 10, (phase + 1) * 30))
            : result.MostChangesInAnyWindow(30, end / 2, end);
        return new ScenarioMetrics(
            result.Goodput(from, end), result.RunTimePercentile(0.99, from, end) * 1000, result.MeanWorkers(from, end),
            result.FinalWorkers, result.Changes.Count(), steady, drain is { } d ? d.Drained - d.Formed : double.NaN, result.Rejected);
    }
}

/// <summary>The simulation's commands.</summary>
internal static class Commands
{
    private static readonly CultureInfo s_inv = CultureInfo.InvariantCulture;

    /// <summary>Every scenario against fixed-min, fixed-max, the oracle (the best fixed count by sweep) and adaptive.</summary>
    /// <param name="options">--scenario NAME, --out DIR.</param>
    /// <returns>The exit code.</returns>
    public static int RunScenarios(Options options)
    {
        var output = options.Get("out");
        if (output is not null)
        {
            Directory.CreateDirectory(output);
        }

        var md = new StringBuilder();
        foreach (var name in options.ScenarioNames())
        {
            var rows = Contenders(name, AdaptiveParameters.Default);
            AppendTable(md, name, rows);
            if (output is not null)
            {
                foreach (var row in rows)
                {
                    using var writer = new StreamWriter(Path.Combine(output, $"{name}-{row.Contender.Split(' ')[0]}.csv"));
                    row.Result.WriteCsv(writer);
                }
            }
        }

        Console.Write(md.ToString());
        if (output is not null)
        {
            File.WriteAllText(Path.Combine(output, "simulation.md"), md.ToString());
        }

        return 0;
    }

    /// <summary>A grid of parameters, each run through the scenarios and scored against the oracle.</summary>
    /// <param name="options">--scenario NAME, --top N.</param>
    /// <returns>The exit code.</returns>
    public static int Tune(Options options)
    {
        var names = options.ScenarioNames();
        var oracles = names.ToDictionary(n => n, n => Oracle(n).Metrics);
        var candidates =
            from interval in new[] { 0.25, 0.5 }
            from target in new[] { 5.0, 10, 20 }
            from growth in new[] { 2.0, 4 }
            from tolerance in new[] { 0.1, 0.2, 0.3 }
            from drain in new[] { 0.5, 1 }
            select AdaptiveParameters.Default with
            {
                Interval = TimeSpan.FromSeconds(interval),
                Cooldown = TimeSpan.FromSeconds(interval),
                QueueWaitTarget = TimeSpan.FromMilliseconds(target),
                MaxGrowthFactor = growth,
                GrowthTolerance = tolerance,
                DrainTime = TimeSpan.FromSeconds(drain),
            };
        var scored = candidates
            .Select(p => (Parameters: p, Score: names.Sum(n => Score(n, ScenarioMetrics.Of(n, Simulator.Run(Scenarios.Get(n, p))), oracles[n]))))
            .OrderBy(x => x.Score)
            .Take(options.Int("top", 10));
        Console.WriteLine("| score | interval | queue wait target | max growth | growth tolerance | drain time |");
        Console.WriteLine("|--:|--:|--:|--:|--:|--:|");
        foreach (var (p, score) in scored)
        {
            Console.WriteLine(string.Create(s_inv, $"| {score:F2} | {p.Interval.TotalMilliseconds} ms | {p.QueueWaitTarget.TotalMilliseconds} ms | {p.MaxGrowthFactor} | {p.GrowthTolerance} | {p.DrainTime.TotalMilliseconds} ms |"));
        }

        return 0;
    }

    /// <summary>Prints every change decision of the adaptive run of one scenario.</summary>
    /// <param name="options">--scenario NAME.</param>
    /// <returns>The exit code.</returns>
    public static int Trace(Options options)
    {
        var name = options.Get("scenario") ?? throw new ArgumentException("--scenario is required.");
        var result = Simulator.Run(Scenarios.Get(name, AdaptiveParameters.Default));
        foreach (var decision in result.Decisions.Where(d => d.IsChange || options.Get("holds") is not null))
        {
            Console.WriteLine(string.Create(s_inv, $"{result.Seconds(decision),8:F2} s  {decision}"));
        }

        Console.WriteLine(ScenarioMetrics.Of(name, result));
        return 0;
    }

    /// <summary>The four contenders of a scenario: fixed at the minimum, at the maximum, the oracle, and adaptive.</summary>
    /// <param name="name">The scenario.</param>
    /// <param name="parameters">The adaptive contender's parameters.</param>
    /// <returns>One row each.</returns>
    public static IReadOnlyList<ScenarioRow> Contenders(string name, AdaptiveParameters parameters)
    {
        var settings = Scenarios.Get(name, parameters);
        var rows = new List<ScenarioRow>
        {
            Row(name, $"fixed-min ({settings.MinWorkers})", settings.Fixed(settings.MinWorkers)),
            Row(name, $"fixed-max ({settings.MaxWorkers})", settings.Fixed(settings.MaxWorkers)),
            Oracle(name),
            Row(name, "adaptive", settings),
        };
        return rows;
    }

    /// <summary>The best fixed count by sweep: the most goodput; within 1% of it, the lowest p99 run time.</summary>
    /// <param name="name">The scenario.</param>
    /// <returns>The oracle's row.</returns>
    public static ScenarioRow Oracle(string name)
    {
        var settings = Scenarios.Get(name, null);
        var sweep = Enumerable.Range(settings.MinWorkers, settings.MaxWorkers - settings.MinWorkers + 1)
            .Where(n => n <= 16 || n % 4 == 0)
            .Select(n => Row(name, $"oracle ({n})", settings.Fixed(n)))
            .ToList();
        var best = sweep.Max(r => r.Metrics.Goodput);
        return sweep.Where(r => r.Metrics.Goodput >= best * 0.99).MinBy(r => r.Metrics.P99RunTimeMs)!;
    }

    private static ScenarioRow Row(string name, string contender, SimulationSettings settings)
    {
        var result = Simulator.Run(settings);
        return new ScenarioRow(contender, result, ScenarioMetrics.Of(name, result));
    }

    private static double Score(string name, ScenarioMetrics m, ScenarioMetrics oracle)
    {
        var score = (Math.Max(0, 1 - (m.Goodput / oracle.Goodput)) * 100) + (Math.Max(0, (m.P99RunTimeMs / oracle.P99RunTimeMs) - 1) * 20)
            + (Math.Max(0, m.SteadyChangesPer30s - 1) * 5);
        if (name == "seed")
        {
            score += double.IsNaN(m.DrainSeconds) ? 100 : m.DrainSeconds;
        }

        return score;
    }

    private static void AppendTable(StringBuilder md, string name, IReadOnlyList<ScenarioRow> rows)
    {
        var oracle = rows.Single(r => r.Contender.StartsWith("oracle", StringComparison.Ordinal)).Metrics;
        md.AppendLine(s_inv, $"### {name} (simulated)").AppendLine();
        md.AppendLine("| contender | goodput/s | vs oracle | p99 run time ms | vs oracle | mean workers | final workers | changes | most changes in 30 s (steady) | backlog drained in s | rejected |");
        md.AppendLine("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        foreach (var row in rows)
        {
            var m = row.Metrics;
            md.AppendLine(string.Create(s_inv, $"| {row.Contender} | {m.Goodput:F0} | {m.Goodput / oracle.Goodput:F3} | {m.P99RunTimeMs:F1} | {m.P99RunTimeMs / oracle.P99RunTimeMs:F2} | {m.MeanWorkers:F1} | {m.FinalWorkers} | {m.Changes} | {m.SteadyChangesPer30s} | {(double.IsNaN(m.DrainSeconds) ? "-" : m.DrainSeconds.ToString("F2", s_inv))} | {m.Rejected} |"));
        }

        md.AppendLine();
    }
}
