namespace BoundedWork.Hosting;

/// <summary>
/// The in-memory recurring schedules of this process (<c>AddRecurring</c>): list them, and pause, resume, change,
/// trigger, add or remove one at runtime. Names are matched ignoring case.
/// </summary>
/// <remarks>
/// Runtime changes live as long as the process: at the next start the schedules are those defined in code (the code
/// wins). Durable schedules shared by a fleet are kept in the database instead.
/// </remarks>
public interface IRecurringSchedules
{
    /// <summary>Takes one snapshot of every schedule, in registration order.</summary>
    /// <returns>One status per schedule.</returns>
    IReadOnlyList<RecurringScheduleStatus> GetStatus();

    /// <summary>Takes one snapshot of a schedule.</summary>
    /// <param name="name">The schedule's name (any case).</param>
    /// <returns>The status.</returns>
    /// <exception cref="KeyNotFoundException">No schedule has that name; the message names it.</exception>
    RecurringScheduleStatus GetStatus(string name);

    /// <summary>
    /// Pauses a schedule (no tick runs until it is resumed; a run already going goes on), or resumes it from its next
    /// tick after now (the ticks missed while paused do not run).
    /// </summary>
    /// <param name="name">The schedule's name (any case).</param>
    /// <param name="paused"><see langword="true"/> to pause, <see langword="false"/> to resume.</param>
    /// <returns><see langword="true"/> if the state changed; <see langword="false"/> if it already was so.</returns>
    /// <exception cref="KeyNotFoundException">No schedule has that name.</exception>
    bool SetPaused(string name, bool paused);

    /// <summary>Runs a schedule's handler now, out of its timing (also while paused), under its overlap policy.</summary>
    /// <param name="name">The schedule's name (any case).</param>
    /// <returns>What the run did.</returns>
    /// <exception cref="KeyNotFoundException">No schedule has that name.</exception>
    RecurringTriggerResult TriggerNow(string name);

    /// <summary>Gives a schedule new timing, from its next tick after now.</summary>
    /// <param name="name">The schedule's name (any case).</param>
    /// <param name="schedule">The new timing.</param>
    /// <exception cref="ArgumentNullException"><paramref name="schedule"/> is <see langword="null"/>.</exception>
    /// <exception cref="KeyNotFoundException">No schedule has that name.</exception>
    void Change(string name, RecurringSchedule schedule);

    /// <summary>Adds a schedule at runtime; it ticks from its next tick after now.</summary>
    /// <param name="name">The schedule's name, unique ignoring case.</param>
    /// <param name="schedule">When it ticks.</param>
    /// <param name="executor">The registered executor that runs it.</param>
    /// <param name="handler">The handler, run on a worker of <paramref name="executor"/>.</param>
    /// <param name="configure">Optional settings.</param>
    /// <exception cref="ArgumentException">The name is empty or taken, the executor is not registered, or a setting is invalid (the message names it); nothing is added.</exception>
    void Add(string name, RecurringSchedule schedule, string executor, Action<RecurringTickContext> handler, Action<RecurringScheduleOptions>? configure = null);

    /// <summary>Removes a schedule; a run already going goes on.</summary>
    /// <param name="name">The schedule's name (any case).</param>
    /// <returns><see langword="true"/> if there was such a schedule.</returns>
    bool Remove(string name);
}
