using System.Globalization;

namespace PaymentCallbacks.LoadDriver.Adaptive;

/// <summary>One phase of a scenario's load: a rate held for a while.</summary>
/// <param name="Rate">Callback requests per second.</param>
/// <param name="Seconds">How long.</param>
internal sealed record LoadPhase(double Rate, double Seconds);

/// <summary>
/// One scenario of the adaptive-workers benchmark against the payment-callback sample: the server settings of its
/// dependency (capacity K, delays, contention, drift), the load, the window it is judged on, and the fixed counts the
/// oracle is swept over. The simulation (benchmarks/BoundedWork.AdaptiveSimulation) models the same scenarios.
/// </summary>
/// <param name="Name">seed, saturating, bursts or cpu-burst.</param>
/// <param name="ServerArguments">The server's settings for the dependency and the executor's queue.</param>
/// <param name="Phases">The load, phase after phase.</param>
/// <param name="MeasureFrom">Seconds from the load's start from which goodput and run time are judged.</param>
/// <param name="SteadyWindows">The (from, to) windows in which changes count as changes in a steady phase.</param>
/// <param name="MinWorkers">The adaptive mode's minimum (the fixed-min contender).</param>
/// <param name="MaxWorkers">The adaptive mode's maximum (the fixed-max contender).</param>
/// <param name="Sweep">The fixed worker counts the oracle is chosen from.</param>
/// <param name="ManualResizeAt">When the manual contender (seed only) resizes, in seconds; NaN for none.</param>
/// <param name="ManualWorkers">The count the manual contender resizes to.</param>
/// <param name="NeighbourAt">When a neighbour's CPU burst starts, in seconds from the load's start; NaN for none.</param>
/// <param name="NeighbourSeconds">How long the neighbour's burst lasts.</param>
/// <param name="NeighbourThreads">How many threads the neighbour keeps busy (each one core's worth of spinning).</param>
internal sealed record ScenarioPlan(
    string Name,
    IReadOnlyList<string> ServerArguments,
    IReadOnlyList<LoadPhase> Phases,
    double MeasureFrom,
    IReadOnlyList<(double From, double To)> SteadyWindows,
    int MinWorkers,
    int MaxWorkers,
    IReadOnlyList<int> Sweep,
    double ManualResizeAt,
    int ManualWorkers,
    double NeighbourAt = double.NaN,
    double NeighbourSeconds = 0,
    int NeighbourThreads = 0)
{
    /// <summary>The queue capacity every scenario runs with.</summary>
    public const int QueueCapacity = 2_000;

    /// <summary>Gets the scenarios' names.</summary>
    public static IReadOnlyList<string> Names { get; } = ["seed", "saturating", "bursts", "cpu-burst"];

    /// <summary>Gets the load's total duration.</summary>
    public double Duration => Phases.Sum(p => p.Seconds);

    /// <summary>Builds a scenario.</summary>
    /// <param name="name">One of <see cref="Names"/>.</param>
    /// <param name="quick">A smoke run: seconds instead of minutes, two sweep points.</param>
    /// <returns>The plan.</returns>
    public static ScenarioPlan Get(string name, bool quick) => name switch
    {
        // 2 workers under 90% of what 8 workers do with 1-5 ms side effects (the incident replay's load); the
        // dependency's knee, 32 connections, is far above 8.
        "seed" => new(
            name,
            ["--SideEffect:MinDelayMs", "1", "--SideEffect:MaxDelayMs", "5", "--Downstream:Capacity", "32"],
            [new(Math.Round(0.9 * 8 * 1000 / 3.1), quick ? 4 : 30)],
            0,
            [(quick ? 2 : 10, quick ? 4 : 30)],
            2,
            64,
            quick ? [8, 16] : [6, 8, 10, 12, 16],
            quick ? 1.5 : 6,
            16),

        // K = 12 connections at 5-15 ms, thrashing a little past the knee; offered 130% of what 12 connections do.
        "saturating" => new(
            name,
            ["--SideEffect:MinDelayMs", "5", "--SideEffect:MaxDelayMs", "15", "--Downstream:Capacity", "12", "--Downstream:ContentionPenalty", "0.25"],
            [new(Math.Round(1.3 * 12 * 1000 / 10.1), quick ? 4 : 120)],
            quick ? 1 : 10,
            [(quick ? 2 : 60, quick ? 4 : 120)],
            2,
            64,
            quick ? [12, 16] : [8, 10, 12, 14, 16, 20],
            double.NaN,
            0),

        // Bursts (2,000/s on, 200/s off) on a dependency (K = 32, 3-7 ms) that slows to twice its delay and back.
        "bursts" => Bursts(quick),

        // CPU-bound side effects (about 0.8 ms of hashing, no blocking) at 1,200/s, a rate 2 workers sustain on 2 vCPUs;
        // a neighbour process spins two threads for the middle half of the run: the run time rises, and fewer workers
        // would not lower it. 1 to 64 workers, starting at 2.
        "cpu-burst" => new(
            name,
            ["--SideEffect:MinDelayMs", "0", "--SideEffect:MaxDelayMs", "0", "--SideEffect:CpuIterations", "1000", "--Downstream:Capacity", "64"],
            [new(1_200, quick ? 8 : 120)],
            quick ? 1 : 10,
            [(quick ? 2 : 30, quick ? 6 : 90)],
            1,
            64,
            quick ? [1, 2] : [1, 2, 3, 4],
            double.NaN,
            0,
            quick ? 2 : 30,
            quick ? 4 : 60,
            2),
        _ => throw new ArgumentException($"Unknown scenario '{name}'; the scenarios are {string.Join(", ", Names)}."),
    };

    /// <summary>The server arguments as one shell-ready line.</summary>
    /// <returns>The arguments separated by spaces.</returns>
    public string ServerArgumentLine() => string.Join(' ', ServerArguments);

    private static ScenarioPlan Bursts(bool quick)
    {
        var phase = quick ? 3 : 30;
        var cycles = quick ? 2 : 4;
        var phases = Enumerable.Range(0, cycles).SelectMany(_ => new[] { new LoadPhase(2_000, phase), new LoadPhase(200, phase) }).ToList();
        var steady = Enumerable.Range(0, cycles * 2).Select(i => ((i * phase) + (phase / 3.0), (i + 1) * phase * 1.0)).ToList();
        return new ScenarioPlan(
            "bursts",
            ["--SideEffect:MinDelayMs", "3", "--SideEffect:MaxDelayMs", "7", "--Downstream:Capacity", "32", "--Downstream:DriftFactor", "2",
             "--Downstream:DriftPeriodSeconds", (cycles * phase * 2).ToString(CultureInfo.InvariantCulture)],
            phases,
            0,
            steady,
            2,
            64,
            quick ? [16, 32] : [8, 12, 16, 24, 32],
            double.NaN,
            0);
    }
}
