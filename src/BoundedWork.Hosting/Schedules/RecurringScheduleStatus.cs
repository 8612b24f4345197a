namespace BoundedWork.Hosting;

/// <summary>How a schedule's last tick ended.</summary>
public enum RecurringRunOutcome
{
    /// <summary>No run has ended yet.</summary>
    None = 0,

    /// <summary>The handler returned.</summary>
    Succeeded = 1,

    /// <summary>The handler threw (the exception is logged and its message kept in <see cref="RecurringScheduleStatus.LastError"/>).</summary>
    Failed = 2,

    /// <summary>The executor refused the run (full, shut down, or not registered).</summary>
    Rejected = 3,
}

/// <summary>What a triggered run did.</summary>
public enum RecurringTriggerResult
{
    /// <summary>The run was handed to the executor.</summary>
    Started = 0,

    /// <summary>The previous run is still going; the run waits for it (<see cref="RecurringOverlapPolicy.Queue"/>).</summary>
    Queued = 1,

    /// <summary>The previous run is still going; the run was skipped and counted.</summary>
    Skipped = 2,

    /// <summary>The executor refused the run.</summary>
    Rejected = 3,
}

/// <summary>One consistent snapshot of a recurring schedule: its timing, state and counters since the process started.</summary>
public sealed record RecurringScheduleStatus
{
    /// <summary>Gets the schedule's name.</summary>
    public required string Name { get; init; }

    /// <summary>Gets the executor that runs it.</summary>
    public required string Executor { get; init; }

    /// <summary>Gets when it ticks.</summary>
    public required RecurringSchedule Schedule { get; init; }

    /// <summary>Gets what a tick does while the previous run is going.</summary>
    public RecurringOverlapPolicy Overlap { get; init; }

    /// <summary>Gets whether it is paused.</summary>
    public bool IsPaused { get; init; }

    /// <summary>Gets whether a run is going now.</summary>
    public bool IsRunning { get; init; }

    /// <summary>Gets the next tick's instant, or <see langword="null"/> while paused, stopped, or when there is none.</summary>
    public DateTimeOffset? NextRunAt { get; init; }

    /// <summary>Gets the scheduled instant of the last tick that ran (or was triggered).</summary>
    public DateTimeOffset? LastScheduledAt { get; init; }

    /// <summary>Gets when the last run started.</summary>
    public DateTimeOffset? LastStartedAt { get; init; }

    /// <summary>Gets when the last run ended.</summary>
    public DateTimeOffset? LastEndedAt { get; init; }

    /// <summary>Gets how the last run ended.</summary>
    public RecurringRunOutcome LastOutcome { get; init; }

    /// <summary>Gets the last failure's message (a throwing handler or a refusing executor), or <see langword="null"/>.</summary>
    public string? LastError { get; init; }

    /// <summary>Gets the ticks that came (skipped ones included; triggered runs not).</summary>
    public long Ticks { get; init; }

    /// <summary>Gets the runs that ended with the handler returning.</summary>
    public long Succeeded { get; init; }

    /// <summary>Gets the runs that ended with the handler throwing.</summary>
    public long Failed { get; init; }

    /// <summary>Gets the ticks skipped because the previous run was still going (or one already waited).</summary>
    public long Skipped { get; init; }

    /// <summary>Gets the runs the executor refused.</summary>
    public long Rejected { get; init; }

    /// <summary>Gets the runs an operator triggered.</summary>
    public long Triggered { get; init; }
}
