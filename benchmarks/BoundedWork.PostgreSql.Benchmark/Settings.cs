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

    /// <summary>
    /// Gets the shapes to run: <c>per-item</c> (the rows of one enqueue per transaction), <c>enqueue</c> (enqueue only,
    /// unkeyed and with ordering keys: one for every producer, one per producer; not in the default list), <c>latency</c>, <c>bulk</c>
    /// (bulk insert, library against binary COPY), <c>drain</c>, and <c>cluster</c> (the cluster limits: what they cost
    /// when they do not bind, and whether they hold when they do; not in the default list, see cluster-limits.sh), and
    /// <c>fair</c> (fair share across tenants against FIFO, 3 consumer processes and a witness; not in the default list,
    /// see fair-share-durable.sh).
    /// </summary>
    public IReadOnlySet<string> Shapes { get; private init; } = new HashSet<string>();

    /// <summary>Gets how many items the drain shape bulk-inserts, then drains, per consumer count.</summary>
    public int DrainItems { get; private init; }

    /// <summary>Gets how many items one bulk statement (or COPY) takes.</summary>
    public int BulkBatch { get; private init; }

    /// <summary>Gets the claims per worker of the drain shape's consumers (the per-item rows keep the default, 2).</summary>
    public int DrainClaimsPerWorker { get; private init; }

    /// <summary>
    /// Gets the library's claims per worker in the drain shape when it differs from the reference's (0: the same,
    /// <see cref="DrainClaimsPerWorker"/>). The library's node holds at most workers × claims per worker items until their
    /// outcomes are written; the reference holds up to two claims' worth plus the outcomes it has not written yet, so
    /// twice the reference's setting, or more, compares the two at the same number of items in flight.
    /// </summary>
    public int DrainLibraryClaimsPerWorker { get; private init; }

    /// <summary>
    /// Gets a value indicating whether the drain shape also runs the reference bounded as the library's node is (it holds
    /// at most workers × claims per worker items until their outcomes are written), a third side in the alternation.
    /// </summary>
    public bool DrainBoundedReference { get; private init; }

    /// <summary>Gets the library's claims per worker in the drain shape.</summary>
    public int DrainLibraryClaims => DrainLibraryClaimsPerWorker > 0 ? DrainLibraryClaimsPerWorker : DrainClaimsPerWorker;

    /// <summary>Gets how many times the bulk-insert comparison runs each side, alternating.</summary>
    public int BulkRounds { get; private init; }

    /// <summary>Gets how many times the drain shape runs each side (the library, the hand-written reference), alternating, per consumer count.</summary>
    public int DrainRounds { get; private init; }

    /// <summary>Gets the cluster shape's options.</summary>
    public ClusterSettings Cluster { get; private init; } = null!;

    /// <summary>Gets the fair-share shape's options.</summary>
    public FairSettings Fair { get; private init; } = null!;

    /// <summary>Gets a value indicating whether only the cluster and fair-share shapes run (then the in-memory baseline row does not).</summary>
    public bool ClusterOnly => Shapes.All(shape => shape is "cluster" or "fair");

    private static HashSet<string> ParseShapes(string text)
    {
        string[] known = ["per-item", "enqueue", "latency", "bulk", "drain", "cluster", "fair"];
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
            DrainClaimsPerWorker = arguments.Int("drain-claims-per-worker", 50, 1, 1000),
            DrainLibraryClaimsPerWorker = arguments.Int("drain-library-claims-per-worker", 0, 0, 1000),
            DrainBoundedReference = arguments.Flag("drain-bounded-reference"),
            BulkRounds = arguments.Int("bulk-rounds", quick ? 1 : 3, 1, 100),
            DrainRounds = arguments.Int("drain-rounds", quick ? 1 : 3, 1, 100),
            Cluster = ClusterSettings.From(arguments, quick),
            Fair = FairSettings.From(arguments, quick),
        };
        arguments.CheckAllUsed();
        return settings;
    }
}

/// <summary>The options of the cluster shape (<c>--shapes cluster</c>, or benchmarks/cluster-limits.sh).</summary>
internal sealed class ClusterSettings
{
    /// <summary>Gets how many items each overhead case drains per round.</summary>
    public int Items { get; private init; }

    /// <summary>Gets how many rounds of every overhead case run, the cases alternating within a round (forward, then backward).</summary>
    public int Rounds { get; private init; }

    /// <summary>Gets the consumer process counts of the overhead cases.</summary>
    public int[] Consumers { get; private init; } = [];

    /// <summary>Gets the workers per consumer process of the overhead cases.</summary>
    public int Workers { get; private init; }

    /// <summary>Gets the claims per worker of every consumer (the queue's default, 2).</summary>
    public int ClaimsPerWorker { get; private init; }

    /// <summary>Gets how many distinct ordering keys the keyed items use.</summary>
    public int Keys { get; private init; }

    /// <summary>Gets the consumer processes of the binding runs.</summary>
    public int BindingConsumers { get; private init; }

    /// <summary>Gets the workers per consumer process of the binding runs.</summary>
    public int BindingWorkers { get; private init; }

    /// <summary>Gets how long each handler blocks in the binding runs, in milliseconds.</summary>
    public int HandlerMilliseconds { get; private init; }

    /// <summary>Gets the global concurrency limit of the binding run (max_running).</summary>
    public int MaxRunning { get; private init; }

    /// <summary>Gets the rate limit of the binding run (starts_per_second).</summary>
    public double Rate { get; private init; }

    /// <summary>Gets the keys of the per-key binding run.</summary>
    public int BindingKeys { get; private init; }

    /// <summary>Gets the start burst of the rate's binding run (start_burst; 0: the default, one second's worth).</summary>
    public int Burst { get; private init; }

    /// <summary>Gets the per-key limit of the per-key binding run (max_running_per_key).</summary>
    public int MaxRunningPerKey { get; private init; }

    /// <summary>Gets how long each binding run is measured, after its warm-up.</summary>
    public double BindingSeconds { get; private init; }

    /// <summary>Gets the warm-up of each binding run (not measured; the rate's initial burst falls into it).</summary>
    public double BindingWarmUpSeconds { get; private init; }

    /// <summary>Gets the folder the markdown and CSV files go to (none: stdout only).</summary>
    public string? OutputDirectory { get; private init; }

    /// <summary>Gets the command line to print with the results (the script passes its own).</summary>
    public string? CommandLine { get; private init; }

    /// <summary>Gets the commit the run measured (the script passes it).</summary>
    public string? Commit { get; private init; }

    /// <summary>Gets a value indicating whether a limit that did not hold fails the run (exit code 1).</summary>
    public bool Strict { get; private init; }

    public static ClusterSettings From(Arguments arguments, bool quick) => new()
    {
        Items = arguments.Int("cluster-items", quick ? 300 : 4000, 1),
        Rounds = arguments.Int("cluster-rounds", quick ? 1 : 4, 1, 100),
        Consumers = arguments.IntList("cluster-consumers", [1, 2, 4], 1, 32),
        Workers = arguments.Int("cluster-workers", 2, 1, 64),
        ClaimsPerWorker = arguments.Int("cluster-claims-per-worker", 2, 1, 100),
        Keys = arguments.Int("cluster-keys", 1000, 1, 1_000_000),
        BindingConsumers = arguments.Int("binding-consumers", 4, 1, 32),
        BindingWorkers = arguments.Int("binding-workers", 8, 1, 64),
        HandlerMilliseconds = arguments.Int("handler-ms", 20, 1, 10_000),
        MaxRunning = arguments.Int("max-running", 6, 1, 10_000),
        Rate = arguments.Double("rate", 200, 0.1, 100_000),
        Burst = arguments.Int("burst", 0, 0, 1_000_000),
        BindingKeys = arguments.Int("binding-keys", 3, 1, 1000),
        MaxRunningPerKey = arguments.Int("max-running-per-key", 2, 1, 1000),
        BindingSeconds = arguments.Double("binding-seconds", quick ? 2 : 10, 0.5, 3600),
        BindingWarmUpSeconds = arguments.Double("binding-warmup", quick ? 0.5 : 2, 0, 3600),
        OutputDirectory = arguments.Text("cluster-out"),
        CommandLine = arguments.Text("command-line"),
        Commit = arguments.Text("commit"),
        Strict = arguments.Flag("strict"),
    };
}

/// <summary>The options of the fair-share shape (<c>--shapes fair</c>, or benchmarks/fair-share-durable.sh).</summary>
internal sealed class FairSettings
{
    /// <summary>Gets the consumer processes.</summary>
    public int Consumers { get; private init; }

    /// <summary>Gets the workers per consumer process.</summary>
    public int Workers { get; private init; }

    /// <summary>Gets how long each handler blocks, in milliseconds: with the workers, the fleet's capacity.</summary>
    public int HandlerMilliseconds { get; private init; }

    /// <summary>Gets each consumer's <c>ClaimsPerWorker</c>.</summary>
    public int ClaimsPerWorker { get; private init; }

    /// <summary>Gets the offered load as a multiple of the fleet's capacity (1.5: 150%).</summary>
    public double Load { get; private init; }

    /// <summary>Gets how many tenants send: one heavy, the rest quiet.</summary>
    public int Tenants { get; private init; }

    /// <summary>Gets how many times as much as each quiet tenant the heavy tenant sends.</summary>
    public double Heavy { get; private init; }

    /// <summary>Gets the heavy tenant's weight under fair share (the others have the default, 1).</summary>
    public int HeavyWeight { get; private init; }

    /// <summary>Gets the most items of one tenant running at once under fair share (MaxRunningPerTenant; 0: two thirds of the fleet's workers).</summary>
    public int Bound { get; private init; }

    /// <summary>Gets how long each overload run is measured (items enqueued in that window), after its warm-up.</summary>
    public double Seconds { get; private init; }

    /// <summary>Gets the warm-up of each overload run (its items are not measured).</summary>
    public double WarmUpSeconds { get; private init; }

    /// <summary>Gets how many rounds run, each with one overload run and one backlogged run per mode, the order alternating.</summary>
    public int Rounds { get; private init; }

    /// <summary>Gets the longest window of the backlogged runs (shares while every tenant has a backlog).</summary>
    public double BacklogSeconds { get; private init; }

    /// <summary>Gets how long one quiet tenant runs alone at its rate (the reference wait).</summary>
    public double ReferenceSeconds { get; private init; }

    /// <summary>Gets the fleet's workers.</summary>
    public int FleetWorkers => Consumers * Workers;

    /// <summary>Gets the fleet's capacity, items per second: every worker busy with handlers of <see cref="HandlerMilliseconds"/>.</summary>
    public double Capacity => FleetWorkers * 1000.0 / HandlerMilliseconds;

    /// <summary>Gets the bound the runs with fair share set.</summary>
    public int EffectiveBound => Bound > 0 ? Bound : Math.Max(1, FleetWorkers * 2 / 3);

    public static FairSettings From(Arguments arguments, bool quick) => new()
    {
        Consumers = arguments.Int("fair-consumers", 3, 1, 32),
        Workers = arguments.Int("fair-workers", 4, 1, 64),
        HandlerMilliseconds = arguments.Int("fair-handler-ms", 50, 1, 10_000),
        ClaimsPerWorker = arguments.Int("fair-claims-per-worker", 2, 1, 100),
        Load = arguments.Double("fair-load", 1.5, 0.1, 10),
        Tenants = arguments.Int("fair-tenants", 10, 2, 1000),
        Heavy = arguments.Double("fair-heavy", 20, 1, 1000),
        HeavyWeight = arguments.Int("fair-heavy-weight", 2, 1, 1000),
        Bound = arguments.Int("fair-bound", 0, 0, 10_000),
        Seconds = arguments.Double("fair-seconds", quick ? 2 : 15, 0.5, 3600),
        WarmUpSeconds = arguments.Double("fair-warmup", quick ? 0.5 : 3, 0, 3600),
        Rounds = arguments.Int("fair-rounds", quick ? 1 : 2, 1, 100),
        BacklogSeconds = arguments.Double("fair-backlog-seconds", quick ? 1.5 : 6, 0.5, 3600),
        ReferenceSeconds = arguments.Double("fair-reference-seconds", quick ? 1 : 10, 0.5, 3600),
    };
}
