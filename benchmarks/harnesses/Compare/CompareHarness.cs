using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks.Compare;

/// <summary>
/// The comparison harness: time per item of <see cref="BoundedExecutor"/> in its default configuration (the producer's
/// ExecutionContext flows to each item), of BoundedExecutor with the flow off, and of the raw channel with dedicated
/// threads, with the method of the Java harness (<c>benchmarks/java/TpeCompare.java</c>): items that increment one
/// shared counter (<see cref="CompareItem"/>; <c>--item empty</c> for no-ops), capacity 1024, producers that block
/// while the queue is full, P dedicated producers (each carrying a request's ExecutionContext) and W workers, N items
/// per round, warm-up rounds, then measured rounds; the median and minimum ns/item per shape. The .NET contenders
/// alternate round by round, so a slow spell of the machine hits all of them. With <c>--java FILE</c> (the Java
/// harness's output) it prints one table with all four; <c>benchmarks/compare-java.sh</c> runs the whole thing. With
/// <c>--report FILE</c> it measures nothing and prints the table for the <c>RESULT</c> lines of several runs (one
/// process each) collected in FILE, and in the <c>--java</c> file: a process's speed can depend on the process
/// itself (where the runtime put its objects, what its JIT decided), which more rounds in one process cannot average
/// out.
/// </summary>
internal static class CompareHarness
{
    public const int Capacity = 1024;
    public const string Usage = "[--quick] [--items N] [--warmup K] [--rounds R] [--shapes P/W,P/W,...] [--item counter|empty] [--java FILE] | --report FILE [--java FILE]";
    private const string DefaultShapes = "1/1,2/2,4/8,1/4,4/2";
    private const string Default = "executor";
    private const string FlowOff = "executor-flow-off";
    private const string RawChannel = "raw-channel";

    public static int Run(ReadOnlySpan<string> args)
    {
        var arguments = new HarnessArguments(args, Usage, "--quick");
        if (arguments.Text("--report") is { } reportFile)
        {
            return Report(reportFile, arguments);
        }

        var quick = arguments.Has("--quick");
        var items = arguments.WholeNumber("--items", quick ? 20_000 : 2_000_000, 1);
        var warmup = arguments.WholeNumber("--warmup", quick ? 1 : 3, 0);
        var rounds = arguments.WholeNumber("--rounds", quick ? 3 : 7, 1);
        var shapes = ParseShapes(arguments.Text("--shapes") ?? DefaultShapes);
        var item = arguments.Text("--item") ?? CompareItem.Kinds[0];
        _ = new CompareItem(item); // validates the name
        var javaFile = arguments.Text("--java");
        arguments.EnsureAllUsed();

        var java = javaFile is null ? [] : Aggregate(ReadResults(javaFile, "--java"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"# .NET {Environment.Version} ({RuntimeInformation.OSDescription.Trim()}, {RuntimeInformation.ProcessArchitecture}), {Environment.ProcessorCount} logical CPUs; {items} items/round (item: {item}), {warmup} warm-up + {rounds} measured rounds per shape"));

        var results = new Dictionary<(string Contender, string Shape), Summary>();
        foreach (var (producers, workers) in shapes)
        {
            var shape = $"{producers}/{workers}";
            using var executor = new ExecutorContender(producers, workers, items, flowExecutionContext: true, item);
            using var flowOff = new ExecutorContender(producers, workers, items, flowExecutionContext: false, item);
            using var channel = new RawChannelContender(producers, workers, items, item);
            ICompareContender[] contenders = [executor, flowOff, channel];
            var measured = contenders.Select(_ => new RoundResult[rounds]).ToArray();
            for (var round = -warmup; round < rounds; round++)
            {
                for (var c = 0; c < contenders.Length; c++)
                {
                    var result = contenders[c].RunRound();
                    if (round >= 0)
                    {
                        measured[c][round] = result;
                    }
                }
            }

            for (var c = 0; c < contenders.Length; c++)
            {
                var summary = Summary.Of(measured[c]);
                results[(contenders[c].Name, shape)] = summary;
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"RESULT\t{contenders[c].Name}\t{shape}\t{summary.Median:0.0}\t{summary.Min:0.0}\t{rounds}\t{items}\t{summary.MaxAllocatedBytes:0.00}\t{summary.MaxThreadPoolItems:0.0000}"));
            }
        }

        Console.WriteLine();
        Console.Write(FormatTable(shapes, results, java.ToDictionary(kv => kv.Key.Shape, kv => kv.Value), javaFile is not null, []));
        return 0;
    }

    /// <summary>Prints the table for the results of several processes: each cell aggregates the processes' medians.</summary>
    private static int Report(string reportFile, HarnessArguments arguments)
    {
        var javaFile = arguments.Text("--java");
        arguments.EnsureAllUsed();
        var runs = ReadResults(reportFile, "--report");
        var shapes = runs.Keys.Where(k => k.Contender == Default).Select(k => ParseShapes(k.Shape)[0]).ToList();
        var results = Aggregate(runs);
        foreach (var shape in shapes.Select(s => $"{s.Producers}/{s.Workers}"))
        {
            if (!results.ContainsKey((RawChannel, shape)))
            {
                throw new ArgumentException($"--report: '{reportFile}' has executor results for {shape} but no raw-channel ones.");
            }
        }

        var javaRuns = javaFile is null ? [] : ReadResults(javaFile, "--java");
        var java = Aggregate(javaRuns);
        var processes = runs.Values.Max(list => list.Count);
        var javaProcesses = javaFile is null ? string.Empty : $", {javaRuns.Values.Max(list => list.Count)} Java process(es)";
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"# {processes} .NET process(es){javaProcesses}; each cell aggregates the processes' medians"));
        Console.WriteLine();
        var perProcess = processes > 1
            ? runs.Where(kv => kv.Key.Contender == Default).ToDictionary(kv => kv.Key.Shape, kv => kv.Value)
            : [];
        Console.Write(FormatTable(shapes, results, java.ToDictionary(kv => kv.Key.Shape, kv => kv.Value), javaFile is not null, perProcess));
        return 0;
    }

    private static string FormatTable(
        List<(int Producers, int Workers)> shapes,
        Dictionary<(string Contender, string Shape), Summary> results,
        Dictionary<string, Summary> java,
        bool withJava,
        Dictionary<string, List<Summary>> executorPerProcess)
    {
        var table = new StringBuilder();
        var columns = new List<(string Header, string Align)>
        {
            ("producers/workers", "---"),
            ("BoundedExecutor (default) ns/item", "---:"),
            ("BoundedExecutor, flow off ns/item", "---:"),
            ("raw channel ns/item", "---:"),
        };
        if (withJava)
        {
            columns.Add(("Java TPE ns/item", "---:"));
        }

        columns.Add(("default vs raw channel", "---:"));
        if (withJava)
        {
            columns.Add(("default vs Java TPE", "---:"));
        }

        columns.Add(("flow off vs raw channel", "---:"));
        if (withJava)
        {
            columns.Add(("flow off vs Java TPE", "---:"));
        }

        columns.Add(("default B/item", "---:"));
        columns.Add(("default pool items/item", "---:"));
        if (executorPerProcess.Count > 0)
        {
            columns.Add(("default median per process", "---:"));
        }

        table.AppendLine("| " + string.Join(" | ", columns.Select(c => c.Header)) + " |");
        table.AppendLine("| " + string.Join(" | ", columns.Select(c => c.Align)) + " |");
        foreach (var (producers, workers) in shapes)
        {
            var shape = $"{producers}/{workers}";
            var executor = results[(Default, shape)];
            Summary? flowOff = results.TryGetValue((FlowOff, shape), out var f) ? f : null;
            var channel = results[(RawChannel, shape)];
            Summary? tpe = java.TryGetValue(shape, out var t) ? t : null;
            var cells = new List<string> { shape, Cell(executor), Cell(flowOff), Cell(channel) };
            if (withJava)
            {
                cells.Add(tpe is null ? "not run" : Cell(tpe));
            }

            cells.Add(Ratio(channel, executor));
            if (withJava)
            {
                cells.Add(Ratio(tpe, executor));
            }

            cells.Add(Ratio(channel, flowOff));
            if (withJava)
            {
                cells.Add(Ratio(tpe, flowOff));
            }

            cells.Add(executor.MaxAllocatedBytes.ToString("0.00", CultureInfo.InvariantCulture));
            cells.Add(executor.MaxThreadPoolItems.ToString("0.0000", CultureInfo.InvariantCulture));
            if (executorPerProcess.Count > 0)
            {
                cells.Add(executorPerProcess.TryGetValue(shape, out var processes)
                    ? string.Join(", ", processes.Select(p => p.Median.ToString("0.0", CultureInfo.InvariantCulture)))
                    : "–");
            }

            table.AppendLine("| " + string.Join(" | ", cells) + " |");
        }

        table.AppendLine();
        if (executorPerProcess.Count > 0)
        {
            table.AppendLine("Several processes: each time cell is the median of the processes' medians (and the lowest minimum of any process);");
            table.AppendLine("the last column lists the default BoundedExecutor's median in each process, in the order they ran.");
        }

        table.AppendLine("Default: FlowExecutionContext = true, the producer's ExecutionContext (a request's) flows to each item; flow off: false.");
        table.AppendLine("Cells: median (minimum) ns per item over the measured rounds; lower is better. \"vs\" columns: the other contender's");
        table.AppendLine("median time divided by BoundedExecutor's, i.e. BoundedExecutor's throughput relative to it (above 1.00x: BoundedExecutor is faster).");
        table.AppendLine("B/item and pool items/item: the most bytes allocated and ThreadPool work items completed per item (process-wide) in any");
        table.AppendLine("measured round of the default BoundedExecutor (0.00 B: no allocation per item, blocking waits for room included).");
        return table.ToString();
    }

    private static string Cell(Summary? value) =>
        value is { } v ? string.Create(CultureInfo.InvariantCulture, $"{v.Median:0.0} ({v.Min:0.0})") : "not run";

    private static string Ratio(Summary? other, Summary? executor) =>
        other is { } o && executor is { } e ? string.Create(CultureInfo.InvariantCulture, $"{o.Median / e.Median:0.00}x") : "–";

    /// <summary>
    /// Reads <c>RESULT</c> lines (this harness's or the Java harness's): per contender and shape, one summary per
    /// process, in the order the processes ran.
    /// </summary>
    private static Dictionary<(string Contender, string Shape), List<Summary>> ReadResults(string path, string option)
    {
        var results = new Dictionary<(string Contender, string Shape), List<Summary>>();
        foreach (var line in File.ReadLines(path))
        {
            var fields = line.Split('\t');
            if (fields.Length >= 5 && fields[0] == "RESULT")
            {
                var key = (fields[1], fields[2]);
                if (!results.TryGetValue(key, out var list))
                {
                    results[key] = list = [];
                }

                list.Add(new Summary(
                    double.Parse(fields[3], CultureInfo.InvariantCulture),
                    double.Parse(fields[4], CultureInfo.InvariantCulture),
                    fields.Length >= 9 ? double.Parse(fields[7], CultureInfo.InvariantCulture) : double.NaN,
                    fields.Length >= 9 ? double.Parse(fields[8], CultureInfo.InvariantCulture) : double.NaN));
            }
        }

        if (results.Count == 0)
        {
            throw new ArgumentException($"{option}: '{path}' has no RESULT lines.");
        }

        return results;
    }

    /// <summary>One summary per contender and shape: the median of the processes' medians, the lowest minimum, the worst allocation.</summary>
    private static Dictionary<(string Contender, string Shape), Summary> Aggregate(Dictionary<(string Contender, string Shape), List<Summary>> runs) =>
        runs.ToDictionary(kv => kv.Key, kv => new Summary(
            MedianOf(kv.Value.Select(s => s.Median)),
            kv.Value.Min(s => s.Min),
            kv.Value.Max(s => s.MaxAllocatedBytes),
            kv.Value.Max(s => s.MaxThreadPoolItems)));

    private static double MedianOf(IEnumerable<double> values)
    {
        var sorted = values.Order().ToArray();
        return sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
    }

    private static List<(int Producers, int Workers)> ParseShapes(string text)
    {
        var shapes = new List<(int Producers, int Workers)>();
        foreach (var part in text.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries))
        {
            var pw = part.Split('/');
            if (pw.Length != 2
                || !int.TryParse(pw[0], NumberStyles.None, CultureInfo.InvariantCulture, out var producers)
                || !int.TryParse(pw[1], NumberStyles.None, CultureInfo.InvariantCulture, out var workers)
                || producers < 1 || workers < 1)
            {
                throw new ArgumentException($"--shapes: '{part}' is not producers/workers with at least 1 of each, e.g. 4/8.");
            }

            shapes.Add((producers, workers));
        }

        return shapes.Count > 0 ? shapes : throw new ArgumentException("--shapes: no shape given.");
    }

    /// <summary>A contender's measured rounds for one shape: median and minimum ns/item, worst allocations and pool items.</summary>
    private readonly record struct Summary(double Median, double Min, double MaxAllocatedBytes, double MaxThreadPoolItems)
    {
        public static Summary Of(RoundResult[] rounds)
        {
            return new Summary(MedianOf(rounds.Select(r => r.Nanoseconds)), rounds.Min(r => r.Nanoseconds), rounds.Max(r => r.AllocatedBytes), rounds.Max(r => r.ThreadPoolItems));
        }
    }
}
