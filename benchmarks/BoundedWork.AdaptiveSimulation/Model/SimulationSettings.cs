using BoundedWork.Internal.Adaptive;

namespace BoundedWork.AdaptiveSimulation;

/// <summary>One simulated run: the dependency, the load, the executor's queue and worker counts, and its controller.</summary>
internal sealed record SimulationSettings
{
    /// <summary>Gets the dependency behind the items.</summary>
    public required Downstream Downstream { get; init; }

    /// <summary>Gets the arrivals.</summary>
    public required LoadShape Load { get; init; }

    /// <summary>Gets how long the simulated run lasts.</summary>
    public required TimeSpan Duration { get; init; }

    /// <summary>Gets the queue capacity; an item arriving at a full queue is rejected (the Abort policy).</summary>
    public int QueueCapacity { get; init; } = 2_000;

    /// <summary>Gets the worker count at the start (a fixed executor keeps it).</summary>
    public int InitialWorkers { get; init; } = 2;

    /// <summary>Gets the adaptive mode's minimum worker count.</summary>
    public int MinWorkers { get; init; } = 2;

    /// <summary>Gets the adaptive mode's maximum worker count.</summary>
    public int MaxWorkers { get; init; } = 64;

    /// <summary>Gets the controller's parameters, or <see langword="null"/> for a fixed worker count.</summary>
    public AdaptiveParameters? Adaptive { get; init; }

    /// <summary>Gets a value indicating whether the controller only advises (its decisions are recorded, not applied).</summary>
    public bool Advisory { get; init; }

    /// <summary>Gets the simulation's time step.</summary>
    public TimeSpan Step { get; init; } = TimeSpan.FromMilliseconds(0.5);

    /// <summary>Gets how often the simulated watchdog looks at the executor.</summary>
    public TimeSpan LookPeriod { get; init; } = TimeSpan.FromMilliseconds(50);

    /// <summary>Gets how often a point of the time series is recorded.</summary>
    public TimeSpan RecordPeriod { get; init; } = TimeSpan.FromMilliseconds(250);

    /// <summary>Gets the random seed (runs with one seed are identical).</summary>
    public int Seed { get; init; } = 1;

    /// <summary>Gets a copy that keeps a fixed worker count.</summary>
    /// <param name="workers">The count.</param>
    /// <returns>The settings.</returns>
    public SimulationSettings Fixed(int workers) => this with { Adaptive = null, InitialWorkers = workers };
}
