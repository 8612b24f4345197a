using BoundedWork.Internal;

namespace BoundedWork;

/// <summary>
/// A change to a running executor's settings for <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettingsChange)"/>.
/// Each property left <see langword="null"/> keeps its current value; the ones set are validated together and
/// applied all at once, or not at all.
/// </summary>
public sealed record BoundedExecutorSettingsChange
{
    /// <summary>Gets the new worker count, between 1 and <see cref="BoundedExecutor.MaxWorkerCount"/>.</summary>
    /// <value>Defaults to <see langword="null"/> (unchanged).</value>
    public int? WorkerCount { get; init; }

    /// <summary>
    /// Gets the new queue capacity, at least 1. Shrinking it below the current queue length evicts nothing:
    /// admission stops until the queue has drained below the new capacity.
    /// </summary>
    /// <value>Defaults to <see langword="null"/> (unchanged).</value>
    public int? QueueCapacity { get; init; }

    /// <summary>Gets the new rejection policy, applied to items submitted from now on.</summary>
    /// <value>Defaults to <see langword="null"/> (unchanged).</value>
    public RejectionPolicy? RejectionPolicy { get; init; }

    /// <summary>
    /// Gets the new wait timeout of the Wait policy: positive, or <see cref="Timeout.InfiniteTimeSpan"/>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/> (unchanged).</value>
    public TimeSpan? WaitTimeout { get; init; }

    /// <summary>Gets the new slow-item threshold: positive, or <see cref="Timeout.InfiniteTimeSpan"/> for off.</summary>
    /// <value>Defaults to <see langword="null"/> (unchanged).</value>
    public TimeSpan? SlowItemThreshold { get; init; }

    /// <summary>Gets the new queue-wait threshold: positive, or <see cref="Timeout.InfiniteTimeSpan"/> for off.</summary>
    /// <value>Defaults to <see langword="null"/> (unchanged).</value>
    public TimeSpan? QueueWaitThreshold { get; init; }

    /// <summary>
    /// Checks every setting this change sets, for an executor whose hard maximum worker count is
    /// <paramref name="maxWorkerCount"/>.
    /// </summary>
    /// <param name="maxWorkerCount">The executor's <see cref="BoundedExecutor.MaxWorkerCount"/>.</param>
    /// <returns>One message per invalid setting, keyed by the setting's name (<c>WorkerCount</c>, <c>QueueCapacity</c>, ...); empty when the change is valid.</returns>
    public IReadOnlyDictionary<string, string> GetValidationErrors(int maxWorkerCount)
    {
        var errors = new Dictionary<string, string>(StringComparer.Ordinal);
        Add(errors, nameof(WorkerCount), WorkerCount is { } workers ? SettingsRules.WorkerCount(workers, maxWorkerCount) : null);
        Add(errors, nameof(QueueCapacity), QueueCapacity is { } capacity ? SettingsRules.QueueCapacity(capacity) : null);
        Add(errors, nameof(RejectionPolicy), RejectionPolicy is { } policy ? SettingsRules.RejectionPolicy(policy) : null);
        Add(errors, nameof(WaitTimeout), WaitTimeout is { } timeout ? SettingsRules.WaitTimeout(timeout) : null);
        Add(errors, nameof(SlowItemThreshold), SlowItemThreshold is { } slow ? SettingsRules.Threshold(nameof(SlowItemThreshold), slow) : null);
        Add(errors, nameof(QueueWaitThreshold), QueueWaitThreshold is { } wait ? SettingsRules.Threshold(nameof(QueueWaitThreshold), wait) : null);
        return errors;
    }

    private static void Add(Dictionary<string, string> errors, string setting, string? error)
    {
        if (error is not null)
        {
            errors[setting] = error;
        }
    }
}
