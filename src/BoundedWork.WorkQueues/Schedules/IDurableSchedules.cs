namespace BoundedWork.Hosting;

/// <summary>
/// The durable schedules of every queue that runs them in this process (<c>AddDurableSchedule</c>): stored by the
/// queue's storage, shared by every node, each tick enqueued once across the fleet. Every change is stored at once,
/// seen by every node on its next pass, and logged with who made it. The admin console, <c>bw</c> and the dashboard
/// operate durable schedules through this interface, whatever the storage.
/// </summary>
/// <remarks>
/// <para>
/// A schedule defined in code or configuration is stored when a node starts. A runtime change (timing, pause, missed-tick policy) holds
/// until that definition itself changes: a node that starts with a different definition stores it, and the definition
/// wins; a node that starts with the same definition keeps the runtime change. A pause is never undone by a start.
/// </para>
/// <para>
/// A storage that runs durable schedules (<c>BoundedWork.PostgreSql</c>) registers one implementation as a singleton.
/// Bad input throws <see cref="ArgumentException"/> whose parameter names the field, with nothing stored; an unknown
/// name throws <see cref="KeyNotFoundException"/>.
/// </para>
/// </remarks>
public interface IDurableSchedules
{
    /// <summary>Gets the queues whose schedules this process runs.</summary>
    IReadOnlyList<string> Queues { get; }

    /// <summary>Reads every stored schedule of the queues this process runs, by queue then name.</summary>
    /// <param name="cancellationToken">Cancels the read.</param>
    /// <returns>The schedules.</returns>
    Task<IReadOnlyList<DurableScheduleStatus>> ListAsync(CancellationToken cancellationToken = default);

    /// <summary>Reads one stored schedule.</summary>
    /// <param name="name">The schedule's name (exact).</param>
    /// <param name="cancellationToken">Cancels the read.</param>
    /// <returns>The schedule, or <see langword="null"/> when none has that name.</returns>
    Task<DurableScheduleStatus?> GetAsync(string name, CancellationToken cancellationToken = default);

    /// <summary>Stores a new schedule on a queue; every node enqueues its ticks from the next one after now.</summary>
    /// <param name="name">The schedule's name: 1 to 200 characters, no control characters, unique across the queues of a schema.</param>
    /// <param name="queue">The queue (one of <see cref="Queues"/>).</param>
    /// <param name="schedule">When it ticks.</param>
    /// <param name="configure">Optional missed-tick settings.</param>
    /// <param name="changedBy">Who adds it, for the log and the stored record.</param>
    /// <param name="cancellationToken">Cancels the change.</param>
    /// <returns>The stored schedule.</returns>
    /// <exception cref="ArgumentException">The name is invalid or taken, the queue does not run schedules here, or a setting is invalid (the message names it); nothing is stored.</exception>
    Task<DurableScheduleStatus> AddAsync(string name, string queue, RecurringSchedule schedule, Action<DurableScheduleOptions>? configure = null, string? changedBy = null, CancellationToken cancellationToken = default);

    /// <summary>Gives a schedule new timing, from its next tick after now.</summary>
    /// <param name="name">The schedule's name.</param>
    /// <param name="schedule">The new timing.</param>
    /// <param name="changedBy">Who changes it.</param>
    /// <param name="cancellationToken">Cancels the change.</param>
    /// <returns>The stored schedule.</returns>
    /// <exception cref="KeyNotFoundException">No schedule has that name.</exception>
    Task<DurableScheduleStatus> ChangeAsync(string name, RecurringSchedule schedule, string? changedBy = null, CancellationToken cancellationToken = default);

    /// <summary>
    /// Gives a schedule a new missed-tick policy (<see cref="DurableScheduleOptions.MissedTicks"/>): what the next pass
    /// does with ticks missed while no node ran. Its timing, pause and <see cref="DurableScheduleOptions.MaxCatchUp"/> stay.
    /// </summary>
    /// <param name="name">The schedule's name.</param>
    /// <param name="missedTicks">The policy.</param>
    /// <param name="changedBy">Who changes it.</param>
    /// <param name="cancellationToken">Cancels the change.</param>
    /// <returns>The stored schedule.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="missedTicks"/> is not a defined policy; nothing is stored.</exception>
    /// <exception cref="KeyNotFoundException">No schedule has that name.</exception>
    Task<DurableScheduleStatus> SetMissedTicksAsync(string name, MissedTickPolicy missedTicks, string? changedBy = null, CancellationToken cancellationToken = default);

    /// <summary>Pauses a schedule on every node, or resumes it from its next tick after now (ticks missed while paused do not run).</summary>
    /// <param name="name">The schedule's name.</param>
    /// <param name="paused"><see langword="true"/> to pause, <see langword="false"/> to resume.</param>
    /// <param name="changedBy">Who changes it.</param>
    /// <param name="cancellationToken">Cancels the change.</param>
    /// <returns>The stored schedule.</returns>
    /// <exception cref="KeyNotFoundException">No schedule has that name.</exception>
    Task<DurableScheduleStatus> SetPausedAsync(string name, bool paused, string? changedBy = null, CancellationToken cancellationToken = default);

    /// <summary>Enqueues one run of a schedule now (also while paused), out of its timing.</summary>
    /// <param name="name">The schedule's name.</param>
    /// <param name="changedBy">Who triggers it.</param>
    /// <param name="cancellationToken">Cancels the enqueue.</param>
    /// <returns>The id of the enqueued item.</returns>
    /// <exception cref="KeyNotFoundException">No schedule has that name.</exception>
    Task<long> TriggerNowAsync(string name, string? changedBy = null, CancellationToken cancellationToken = default);

    /// <summary>Deletes a stored schedule (a schedule defined in code is stored again when a node starts).</summary>
    /// <param name="name">The schedule's name.</param>
    /// <param name="changedBy">Who removes it.</param>
    /// <param name="cancellationToken">Cancels the change.</param>
    /// <returns><see langword="true"/> if there was such a schedule.</returns>
    Task<bool> RemoveAsync(string name, string? changedBy = null, CancellationToken cancellationToken = default);
}
