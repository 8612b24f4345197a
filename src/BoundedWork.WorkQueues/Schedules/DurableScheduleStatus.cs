namespace BoundedWork.Hosting;

/// <summary>A durable schedule as stored: its timing, state and the fate of its last enqueued item.</summary>
public sealed record DurableScheduleStatus
{
    /// <summary>Gets the schedule's name.</summary>
    public required string Name { get; init; }

    /// <summary>Gets the queue its ticks are enqueued on.</summary>
    public required string Queue { get; init; }

    /// <summary>Gets when it ticks, or <see langword="null"/> when the stored definition cannot be read on this node (see <see cref="DefinitionError"/>).</summary>
    public RecurringSchedule? Schedule { get; init; }

    /// <summary>Gets the stored definition as text: <c>cron '0 2 * * *' in Europe/Berlin</c> or <c>every 00:05:00</c>.</summary>
    public required string Definition { get; init; }

    /// <summary>Gets why the stored definition cannot be read on this node (an unknown time zone), or <see langword="null"/>.</summary>
    public string? DefinitionError { get; init; }

    /// <summary>Gets what happens to missed ticks.</summary>
    public MissedTickPolicy MissedTicks { get; init; }

    /// <summary>Gets whether it is paused.</summary>
    public bool IsPaused { get; init; }

    /// <summary>Gets whether it is defined in code (<c>AddDurableSchedule</c>) rather than added at runtime.</summary>
    public bool IsDefinedInCode { get; init; }

    /// <summary>Gets the next tick to enqueue, or <see langword="null"/> when there is none.</summary>
    public DateTimeOffset? NextRunAt { get; init; }

    /// <summary>Gets the last tick enqueued (its scheduled instant).</summary>
    public DateTimeOffset? LastRunAt { get; init; }

    /// <summary>Gets when the last item was enqueued.</summary>
    public DateTimeOffset? LastEnqueuedAt { get; init; }

    /// <summary>Gets the id of the last enqueued item.</summary>
    public long? LastItemId { get; init; }

    /// <summary>
    /// Gets the state of the last enqueued item: <c>ready</c>, <c>scheduled</c>, <c>running</c>, <c>completed</c>,
    /// <c>dead</c> (a dead letter), <c>cancelled</c>, <c>gone</c> (cleaned up after it ended), or <see langword="null"/> before the first.
    /// </summary>
    public string? LastOutcome { get; init; }

    /// <summary>Gets how many ticks have been enqueued (triggered runs included).</summary>
    public long Enqueued { get; init; }

    /// <summary>Gets how many ticks were missed and not run, under <see cref="MissedTicks"/>.</summary>
    public long Missed { get; init; }

    /// <summary>Gets when the schedule was last stored or changed.</summary>
    public DateTimeOffset ChangedAt { get; init; }

    /// <summary>Gets who last changed it (<see langword="null"/> for the code's definition).</summary>
    public string? ChangedBy { get; init; }
}
