namespace BoundedWork.Hosting;

/// <summary>One run of a recurring schedule, handed to its handler on a worker of the schedule's executor.</summary>
public sealed class RecurringTickContext
{
    internal RecurringTickContext(string scheduleName, DateTimeOffset scheduledAt, bool triggered, IServiceProvider services, CancellationToken cancellationToken)
    {
        ScheduleName = scheduleName;
        ScheduledAt = scheduledAt;
        IsTriggered = triggered;
        Services = services;
        CancellationToken = cancellationToken;
    }

    /// <summary>Gets the schedule's name.</summary>
    public string ScheduleName { get; }

    /// <summary>Gets the tick's scheduled instant (not when it started: jitter and a queued tick start later), or the time of the trigger.</summary>
    public DateTimeOffset ScheduledAt { get; }

    /// <summary>Gets whether an operator triggered this run (<see cref="IRecurringSchedules.TriggerNow(string)"/>) rather than the schedule.</summary>
    public bool IsTriggered { get; }

    /// <summary>Gets the services of a scope made for this run and disposed after it.</summary>
    public IServiceProvider Services { get; }

    /// <summary>Gets a token cancelled when the host stops.</summary>
    public CancellationToken CancellationToken { get; }
}

/// <summary>A recurring schedule's handler resolved from a scope per run (<c>AddRecurring&lt;THandler&gt;</c>).</summary>
public interface IRecurringHandler
{
    /// <summary>Runs one tick, on a worker thread of the schedule's executor: blocking calls are fine here.</summary>
    /// <param name="context">The tick.</param>
    void Run(RecurringTickContext context);
}
