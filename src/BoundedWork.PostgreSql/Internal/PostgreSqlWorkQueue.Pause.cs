using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Fleet-wide pauses (<see cref="IWorkQueuePauseControl"/>): the arguments checked here, the rest in
/// <see cref="FleetPauses"/> (docs/durable-invariants.md, I9).
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T> : IWorkQueuePauseControl
{
    /// <summary>The most ordering keys a queue may have paused at once.</summary>
    internal const int MaxPausedKeys = FleetPauses.MaxPausedKeys;

    /// <summary>The queue's fleet-wide pauses: stored, read, and the one in force on this node (I9).</summary>
    private readonly FleetPauses _pauses;

    /// <summary>Gets the queue's fleet-wide pause in force on this node, or <see langword="null"/>.</summary>
    internal WorkQueuePause? FleetPause => _pauses.InForce;

    public Task<WorkQueuePauses> GetPausesAsync(CancellationToken cancellationToken = default) => _pauses.ReadAsync(cancellationToken);

    public Task<WorkQueuePause> PauseAsync(string reason, TimeSpan duration, string changedBy, string? key = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(reason);
        ArgumentNullException.ThrowIfNull(changedBy);
        if (BoundedExecutor.GetPauseReasonError(reason) is { } invalidReason)
        {
            throw new ArgumentException(invalidReason, nameof(reason));
        }

        if (duration != Timeout.InfiniteTimeSpan && (duration <= TimeSpan.Zero || duration > BoundedExecutor.MaxPauseDuration))
        {
            throw new ArgumentOutOfRangeException(nameof(duration), duration, $"A pause's duration must be positive and at most {BoundedExecutor.MaxPauseDuration.TotalDays} days, or Timeout.InfiniteTimeSpan (until resumed).");
        }

        CheckChangedByAndKey(changedBy, key);
        return _pauses.PauseAsync(reason, duration == Timeout.InfiniteTimeSpan ? null : duration.TotalMilliseconds, changedBy, key, cancellationToken);
    }

    public Task<WorkQueuePause?> ResumeAsync(string changedBy, string? key = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(changedBy);
        CheckChangedByAndKey(changedBy, key);
        return _pauses.ResumeAsync(changedBy, key, cancellationToken);
    }

    private static void CheckChangedByAndKey(string changedBy, string? key)
    {
        if (ClusterSettingsRules.CheckChangedBy(changedBy) is { } invalid)
        {
            throw new ArgumentException(invalid, nameof(changedBy));
        }

        if (key is not null)
        {
            if (key.Length == 0)
            {
                throw new ArgumentException("The ordering key to pause or resume must not be empty.", nameof(key));
            }

            ValidateKey(key, "ordering key", MaxOrderingKeyLength, nameof(key));
        }
    }
}
