using BoundedWork.Internal.Adaptive;

namespace BoundedWork.AdaptiveSimulation;

/// <summary>
/// The four benchmark scenarios of adaptive workers, in simulation. benchmarks/adaptive-workers.sh runs the same
/// shapes end to end against the payment-callback sample (the same dependency model, K, service times and rates).
/// </summary>
internal static class Scenarios
{
    /// <summary>Gets the scenarios' names, in order.</summary>
    public static IReadOnlyList<string> Names { get; } = ["seed", "saturating", "bursts", "cpu-burst"];

    /// <summary>Builds a scenario by name.</summary>
    /// <param name="name">One of <see cref="Names"/>.</param>
    /// <param name="parameters">The controller's parameters, or <see langword="null"/> for a fixed count.</param>
    /// <returns>The settings.</returns>
    public static SimulationSettings Get(string name, AdaptiveParameters? parameters) => name switch
    {
        "seed" => SeedIncident(parameters),
        "saturating" => Saturating(parameters),
        "bursts" => BurstsAndDrift(parameters),
        "cpu-burst" => CpuBurst(parameters),
        _ => throw new ArgumentException($"Unknown scenario '{name}'; the scenarios are {string.Join(", ", Names)}.", nameof(name)),
    };

    /// <summary>
    /// The seed incident: the executor starts with 2 workers under 90% of what 8 workers can do (side effects of 1-5
    /// ms, paced arrivals), and the dependency's knee (32) is well above 8.
    /// </summary>
    /// <param name="parameters">The controller's parameters, or <see langword="null"/> for a fixed count.</param>
    /// <returns>The settings.</returns>
    public static SimulationSettings SeedIncident(AdaptiveParameters? parameters) => new()
    {
        Downstream = new Downstream { Capacity = 32, ServiceTime = TimeSpan.FromMilliseconds(3), Jitter = 2.0 / 3 },
        Load = new LoadShape(_ => 0.9 * 8 / 0.003, Poisson: false),
        Duration = TimeSpan.FromSeconds(60),
        QueueCapacity = 2_000,
        InitialWorkers = 2,
        MinWorkers = 2,
        MaxWorkers = 64,
        Adaptive = parameters,
    };

    /// <summary>
    /// A saturating dependency: K = 12 connections, 10 ms per call, thrashing a little past the knee (each extra call
    /// slows the others by a quarter of 1/K); offered 130% of what K connections serve; 2 to 64 workers.
    /// </summary>
    /// <param name="parameters">The controller's parameters, or <see langword="null"/> for a fixed count.</param>
    /// <returns>The settings.</returns>
    public static SimulationSettings Saturating(AdaptiveParameters? parameters) => new()
    {
        Downstream = new Downstream { Capacity = 12, ServiceTime = TimeSpan.FromMilliseconds(10), Jitter = 0.5, ContentionPenalty = 0.25 },
        Load = new LoadShape(_ => 1.3 * 12 / 0.010, Poisson: false),
        Duration = TimeSpan.FromSeconds(120),
        QueueCapacity = 2_000,
        InitialWorkers = 2,
        MinWorkers = 2,
        MaxWorkers = 64,
        Adaptive = parameters,
    };

    /// <summary>
    /// CPU-bound items at a rate 2 workers sustain, with a neighbour's CPU burst: items of 0.8 ms of computing on 2
    /// cores (the dependency's capacity) arrive at 1,200 a second (Poisson); from 30 s to 90 s a neighbour's burst makes
    /// an item take 1.0 ms when it runs alone and 1.4 ms when two run at once. 2 workers keep up throughout (1.7 busy
    /// in the burst); 1 worker completes 1,000 a second in the burst and falls behind. 1 to 64 workers, starting at 2.
    /// </summary>
    /// <param name="parameters">The controller's parameters, or <see langword="null"/> for a fixed count.</param>
    /// <returns>The settings.</returns>
    public static SimulationSettings CpuBurst(AdaptiveParameters? parameters) => new()
    {
        Downstream = new Downstream
        {
            Capacity = 2,
            ServiceTime = TimeSpan.FromMilliseconds(0.8),
            Jitter = 0.1,
            Slowdown = static (t, calls) => t is >= 30 and < 90 ? (calls <= 1 ? 1.25 : 1.75) : 1,
        },
        Load = LoadShape.Constant(1_200),
        Duration = TimeSpan.FromSeconds(120),
        QueueCapacity = 2_000,
        InitialWorkers = 2,
        MinWorkers = 1,
        MaxWorkers = 64,
        Adaptive = parameters,
        Step = TimeSpan.FromMilliseconds(0.05),
    };

    /// <summary>
    /// Bursts on a drifting dependency: 30 s at 2,000 items/s, 30 s at 200/s, repeating; the dependency (K = 32, 5
    /// ms) slows to twice its service time and back over each 240 s; 2 to 64 workers, for 480 s.
    /// </summary>
    /// <param name="parameters">The controller's parameters, or <see langword="null"/> for a fixed count.</param>
    /// <returns>The settings.</returns>
    public static SimulationSettings BurstsAndDrift(AdaptiveParameters? parameters) => new()
    {
        Downstream = new Downstream
        {
            Capacity = 32,
            ServiceTime = TimeSpan.FromMilliseconds(5),
            Jitter = 0.5,
            SpeedFactor = Downstream.Drift(2, TimeSpan.FromSeconds(240)),
        },
        Load = LoadShape.OnOff(2_000, TimeSpan.FromSeconds(30), 200, TimeSpan.FromSeconds(30)) with { Poisson = false },
        Duration = TimeSpan.FromSeconds(480),
        QueueCapacity = 2_000,
        InitialWorkers = 2,
        MinWorkers = 2,
        MaxWorkers = 64,
        Adaptive = parameters,
    };
}
