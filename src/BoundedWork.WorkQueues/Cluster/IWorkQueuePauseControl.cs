namespace BoundedWork.Hosting;

/// <summary>
/// Fleet-wide pauses of a durable queue, kept in its storage: pausing the queue stops every node from claiming its
/// items, and pausing an ordering key stops them from claiming that key's items while the rest flows. The storage is
/// the truth: a node that starts, or comes back, during a pause stays paused. Running items finish; a pause with an
/// end resumes by itself, measured on the storage's clock. Registered by storage packages (for example
/// BoundedWork.PostgreSql); resolve all of them with <c>IEnumerable&lt;IWorkQueuePauseControl&gt;</c>.
/// </summary>
public interface IWorkQueuePauseControl
{
    /// <summary>Gets the name of the queue.</summary>
    string QueueName { get; }

    /// <summary>Reads the pauses in force: the queue's, and its paused ordering keys.</summary>
    /// <param name="cancellationToken">Cancels the read.</param>
    /// <returns>The pauses in force (a pause whose end has passed is not).</returns>
    Task<WorkQueuePauses> GetPausesAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Pauses the queue fleet-wide, or only the items of one ordering key: no node claims them from the moment this
    /// returns (every node stops within one heartbeat; an item a node claimed before and has not started yet is handed
    /// back unrun). Pausing again replaces the pause (its reason and its end). Audited like a settings change.
    /// </summary>
    /// <param name="reason">Why: 1 to <see cref="BoundedExecutor.MaxPauseReasonLength"/> characters, no control characters.</param>
    /// <param name="duration">How long: positive and at most <see cref="BoundedExecutor.MaxPauseDuration"/>, or <see cref="Timeout.InfiniteTimeSpan"/> until resumed.</param>
    /// <param name="changedBy">Who asked, for the audit: 1 to 200 characters, no control characters.</param>
    /// <param name="key">The ordering key to pause, or <see langword="null"/> to pause the whole queue.</param>
    /// <param name="cancellationToken">Cancels the change (it may have been applied).</param>
    /// <returns>The pause as stored.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="reason"/> or <paramref name="changedBy"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The reason, the key or <paramref name="changedBy"/> is invalid (the message names it); nothing changes.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="duration"/> is neither positive (up to the maximum) nor infinite; nothing changes.</exception>
    Task<WorkQueuePause> PauseAsync(string reason, TimeSpan duration, string changedBy, string? key = null, CancellationToken cancellationToken = default);

    /// <summary>Ends the queue's fleet-wide pause, or one key's: every node claims again at once. Audited like a settings change.</summary>
    /// <param name="changedBy">Who asked, for the audit.</param>
    /// <param name="key">The ordering key to resume, or <see langword="null"/> for the whole queue.</param>
    /// <param name="cancellationToken">Cancels the change (it may have been applied).</param>
    /// <returns>The pause that was ended, or <see langword="null"/> when none was in force.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="changedBy"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The key or <paramref name="changedBy"/> is invalid (the message names it).</exception>
    Task<WorkQueuePause?> ResumeAsync(string changedBy, string? key = null, CancellationToken cancellationToken = default);
}

/// <summary>One fleet-wide pause of a durable queue, or of one of its ordering keys.</summary>
public sealed record WorkQueuePause
{
    /// <summary>Gets the paused ordering key, or <see langword="null"/> when the whole queue is paused.</summary>
    public string? Key { get; init; }

    /// <summary>Gets why the pause was made.</summary>
    public required string Reason { get; init; }

    /// <summary>Gets when the pause was made (the storage's clock).</summary>
    public DateTimeOffset Since { get; init; }

    /// <summary>Gets when the pause ends by itself (the storage's clock), or <see langword="null"/> when it lasts until resumed.</summary>
    public DateTimeOffset? Until { get; init; }

    /// <summary>Gets who made the pause.</summary>
    public string? By { get; init; }
}

/// <summary>The fleet-wide pauses of a durable queue in force at one moment (<see cref="IWorkQueuePauseControl.GetPausesAsync"/>).</summary>
public sealed record WorkQueuePauses
{
    /// <summary>Gets the queue's own pause, or <see langword="null"/> when the queue is not paused.</summary>
    public WorkQueuePause? Queue { get; init; }

    /// <summary>Gets the paused ordering keys, by key.</summary>
    public IReadOnlyList<WorkQueuePause> Keys { get; init; } = [];

    /// <summary>Gets when the pauses were read (the storage's clock).</summary>
    public DateTimeOffset ReadAt { get; init; }
}
