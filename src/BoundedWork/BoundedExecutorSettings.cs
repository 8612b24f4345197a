namespace BoundedWork;

/// <summary>
/// The settings of a running <see cref="BoundedExecutor"/> that can change at runtime, as one consistent value.
/// Read them with <see cref="BoundedExecutor.Settings"/>; change them with
/// <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettingsChange)"/>.
/// </summary>
public sealed record BoundedExecutorSettings
{
    /// <summary>Gets the worker count the executor converges to.</summary>
    public required int WorkerCount { get; init; }

    /// <summary>Gets how many items may wait in the queue.</summary>
    public required int QueueCapacity { get; init; }

    /// <summary>Gets what happens to a new item when the queue is full.</summary>
    public required RejectionPolicy RejectionPolicy { get; init; }

    /// <summary>Gets how long the Wait policy waits for room (<see cref="Timeout.InfiniteTimeSpan"/> for no limit).</summary>
    public required TimeSpan WaitTimeout { get; init; }

    /// <summary>Gets how long an item may run before it is reported as slow (<see cref="Timeout.InfiniteTimeSpan"/>: off).</summary>
    public required TimeSpan SlowItemThreshold { get; init; }

    /// <summary>Gets how long an item may wait in the queue before it is reported (<see cref="Timeout.InfiniteTimeSpan"/>: off).</summary>
    public required TimeSpan QueueWaitThreshold { get; init; }
}
