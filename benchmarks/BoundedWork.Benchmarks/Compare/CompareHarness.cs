using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks.Compare;

/// <summary>
/// <c>-- compare</c>: time per item of <see cref="BoundedExecutor"/> and of the raw channel with dedicated threads,
/// with the method of the Java harness (<c>benchmarks/java/TpeCompare.java</c>): empty items, capacity 1024,
/// producers that block while the queue is full, P dedicated producers and W workers, N items per round, warm-up
/// rounds, then measured rounds; the median and minimum ns/item per shape. The two .NET contenders alternate round
/// by round, so a slow spell of the machine hits both. With <c>--java FILE</c> (the Java harness's output) it
/// prints one table with all three; <c>benchmarks/compare-java.sh</c> runs the whole thing.
/// </summary>
internal static class CompareHarness
{
    public const int Capacity = 1024;
    public const string Usage = "compare [--quick] [--items N] [--warmup K] [--rounds R] [--shapes P/W,P/W,...] [--java FILE]";
    private const string DefaultShapes = "1/1,2/2,4/8,1/4,4/2";

    public static int Run(ReadOnlySpan<string> args)
    {
        var arguments = new HarnessArguments(args, Usage, "--quick");
        var quick = arguments.Has("--quick");
        var items = arguments.Int("--items", quick ? 20_000 : 2_000_000, 1);
        var warmup = arguments.Int("--warmup", quick ? 1 : 3, 0);
        var rounds = arguments.Int("--rounds", quick ? 3 : 7, 1);
        var shapes = ParseShapes(arguments.Text("--shapes") ?? DefaultShapes);
        var javaFile = arguments.Text("--java");
        arguments.EnsureAllUsed();

        var java = javaFile is null ? [] : ReadResults(javaFile);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"# .NET {Environment.Version} ({RuntimeInformation.OSDescription.Trim()}, {RuntimeInformation.ProcessArchitecture}), {Environment.ProcessorCount} logical CPUs; {items} items/round, {warmup} warm-up + {rounds} measured rounds per shape"));

        var results = new Dictionary<(string Contender, string Shape), Summary>();
        foreach (var (producers, workers) in shapes)
        {
            var shape = $"{producers}/{workers}";
            using var executor = new ExecutorContender(producers, workers, items);
            using var channel = new RawChannelContender(producers, workers, items);
            ICompareContender[] contenders = [executor, channel];
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
        Console.Write(FormatTable(shapes, results, java, javaFile is not null));
        return 0;
    }

    private static string FormatTable(
        List<(int Producers, int Workers)> shapes,
        Dictionary<(string Contender, string Shape), Summary> results,
        Dictionary<string, Summary> java,
        bool withJava)
    {
        var table = new StringBuilder();
        table.AppendLine(withJava
            ? "| producers/workers | BoundedExecutor ns/item | raw channel ns/item | Java TPE ns/item | vs raw channel | vs Java TPE | BoundedExecutor B/item | BoundedExecutor pool items/item |"
            : "| producers/workers | BoundedExecutor ns/item | raw channel ns/item | vs raw channel | BoundedExecutor B/item | BoundedExecutor pool items/item |");
        table.AppendLine(withJava ? "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" : "| --- | ---: | ---: | ---: | ---: | ---: |");
        foreach (var (producers, workers) in shapes)
        {
            var shape = $"{producers}/{workers}";
            var executor = results[("executor", shape)];
            var channel = results[("raw-channel", shape)];
            table.Append(CultureInfo.InvariantCulture, $"| {shape} | {Cell(executor)} | {Cell(channel)} | ");
            if (withJava)
            {
                if (java.TryGetValue(shape, out var tpe))
                {
                    table.Append(CultureInfo.InvariantCulture, $"{Cell(tpe)} | {Ratio(channel, executor)} | {Ratio(tpe, executor)} |");
                }
                else
                {
                    table.Append(CultureInfo.InvariantCulture, $"not run | {Ratio(channel, executor)} | – |");
                }
            }
            else
            {
                table.Append(CultureInfo.InvariantCulture, $"{Ratio(channel, executor)} |");
            }

            table.Append(CultureInfo.InvariantCulture, $" {executor.MaxAllocatedBytes:0.00} | {executor.MaxThreadPoolItems:0.0000} |");
            table.AppendLine();
        }

        table.AppendLine();
        table.AppendLine("Cells: median (minimum) ns per item over the measured rounds; lower is better. \"vs\" columns: the other contender's");
        table.AppendLine("median time divided by BoundedExecutor's, i.e. BoundedExecutor's throughput relative to it (above 1.00x: BoundedExecutor is faster).");
        table.AppendLine("B/item and pool items/item: the most bytes allocated and ThreadPool work items completed per item (process-wide) in any");
        table.AppendLine("measured BoundedExecutor round (0.00 B: no allocation per item, blocking waits for room included).");
        return table.ToString();
    }

    private static string Cell(Summary value) =>
        string.Create(CultureInfo.InvariantCulture, $"{value.Median:0.0} ({value.Min:0.0})");

    private static string Ratio(Summary other, Summary executor) =>
        string.Create(CultureInfo.InvariantCulture, $"{other.Median / executor.Median:0.00}x");

    /// <summary>Reads the <c>RESULT</c> lines of the Java harness, keyed by shape.</summary>
    private static Dictionary<string, Summary> ReadResults(string path)
    {
        var results = new Dictionary<string, Summary>(StringComparer.Ordinal);
        foreach (var line in File.ReadLines(path))
        {
            var fields = line.Split('\t');
            if (fields.Length >= 5 && fields[0] == "RESULT")
            {
                results[fields[2]] = new Summary(
                    double.Parse(fields[3], CultureInfo.InvariantCulture),
                    double.Parse(fields[4], CultureInfo.InvariantCulture),
                    double.NaN,
                    double.NaN);
            }
        }

        if (results.Count == 0)
        {
            throw new ArgumentException($"--java: '{path}' has no RESULT lines (is it the output of TpeCompare?).");
        }

        return results;
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
            var times = rounds.Select(r => r.Nanoseconds).Order().ToArray();
            var median = times.Length % 2 == 1 ? times[times.Length / 2] : (times[(times.Length / 2) - 1] + times[times.Length / 2]) / 2;
            return new Summary(median, times[0], rounds.Max(r => r.AllocatedBytes), rounds.Max(r => r.ThreadPoolItems));
        }
    }
}
