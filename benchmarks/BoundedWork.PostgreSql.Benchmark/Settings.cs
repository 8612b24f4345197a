namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>The options of the <c>run</c> verb.</summary>
internal sealed class Settings
{
    public bool Quick { get; private init; }

    public int Items { get; private init; }

    public int WarmUpItems { get; private init; }

    public int Producers { get; private init; }

    public int[] Consumers { get; private init; } = [];

    public int Workers { get; private init; }

    public double LatencyRate { get; private init; }

    public double LatencySeconds { get; private init; }

    public double LatencyWarmUpSeconds { get; private init; }

    public double BloatSeconds { get; private init; }

    public double BloatRate { get; private init; }

    public double BloatSampleSeconds { get; private init; }

    public bool Fsync { get; private init; }

    public string? ServerDirectoryFile { get; private init; }

    /// <summary>Gets a value indicating whether to print, per PostgreSQL throughput row, the statements the server ran (stderr).</summary>
    public bool Statements { get; private init; }

    /// <summary>Gets the shapes to run: <c>per-item</c> (the rows of one enqueue per transaction), <c>latency</c>, <c>bulk</c> (bulk insert, library against binary COPY) and <c>drain</c>.</summary>
    public IReadOnlySet<string> Shapes { get; private init; } = new HashSet<string>();

    /// <summary>Gets how many items the drain shape bulk-inserts, then drains, per consumer count.</summary>
    public int DrainItems { get; private init; }

    /// <summary>Gets how many items one bulk statement (or COPY) takes.</summary>
    public int BulkBatch { get; private init; }

    /// <summary>Gets the claims per worker of the drain shape's consumers (the per-item rows keep the default, 2).</summary>
    public int DrainClaimsPerWorker { get; private init; }

    /// <summary>Gets how many times the bulk-insert comparison runs each side, alternating.</summary>
    public int BulkRounds { get; private init; }

    private static HashSet<string> ParseShapes(string text)
    {
        string[] known = ["per-item", "latency", "bulk", "drain"];
        var shapes = text.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).ToHashSet(StringComparer.Ordinal);
        return shapes.Count > 0 && shapes.All(known.Contains)
            ? shapes
            : throw new ArgumentException($"--shapes must be a comma-separated list of {string.Join(", ", known)} (was '{text}').");
    }

    public static Settings From(Arguments arguments)
    {
        var quick = arguments.Flag("quick");
        var fsync = arguments.Text("fsync") ?? "on";
        if (fsync is not ("on" or "off"))
        {
            throw new ArgumentException($"--fsync must be on or off (was '{fsync}').");
        }

        var settings = new Settings
        {
            Quick = quick,
            Items = arguments.Int("items", quick ? 2000 : 20_000, 1),
            WarmUpItems = arguments.Int("warmup-items", quick ? 200 : 1000, 0),
            Producers = arguments.Int("producers", 4, 1, 256),
            Consumers = arguments.IntList("consumers", [1, 2, 4], 1, 32),
            Workers = arguments.Int("workers", 2, 1, 64),
            LatencyRate = arguments.Double("latency-rate", 200, 1, 10_000),
            LatencySeconds = arguments.Double("latency-seconds", quick ? 1 : 5, 0.1, 3600),
            LatencyWarmUpSeconds = arguments.Double("latency-warmup", quick ? 0.5 : 1, 0, 3600),
            BloatSeconds = arguments.Double("bloat", 0, 0, 24 * 3600),
            BloatRate = arguments.Double("bloat-rate", 300, 1, 100_000),
            BloatSampleSeconds = arguments.Double("bloat-sample", 5, 0.5, 3600),
            Fsync = fsync == "on",
            ServerDirectoryFile = arguments.Text("server-dir-file"),
            Statements = arguments.Flag("statements"),
            Shapes = ParseShapes(arguments.Text("shapes") ?? "per-item,latency,bulk,drain"),
            DrainItems = arguments.Int("drain-items", quick ? 5000 : 200_000, 1),
            BulkBatch = arguments.Int("bulk-batch", 5000, 1, 100_000),
            DrainClaimsPerWorker = arguments.Int("drain-claims-per-worker", 50, 1, 100),
            BulkRounds = arguments.Int("bulk-rounds", quick ? 1 : 3, 1, 100),
        };
        arguments.CheckAllUsed();
        return settings;
    }
}
