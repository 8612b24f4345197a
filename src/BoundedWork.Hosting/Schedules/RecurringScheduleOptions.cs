namespace BoundedWork.Hosting;

/// <summary>What a tick does when the schedule's previous run is still going.</summary>
public enum RecurringOverlapPolicy
{
    /// <summary>The tick is skipped and counted (<see cref="RecurringScheduleStatus.Skipped"/>): runs never overlap. The default.</summary>
    Skip = 0,

    /// <summary>
    /// The tick waits and runs as soon as the previous run ends. At most one tick waits: a further tick while one
    /// waits is skipped and counted, so a slow handler never piles up runs.
    /// </summary>
    Queue = 1,
}

/// <summary>How a recurring schedule runs besides its timing.</summary>
public sealed class RecurringScheduleOptions
{
    /// <summary>Gets or sets what a tick does while the previous run is still going.</summary>
    /// <value>The default is <see cref="RecurringOverlapPolicy.Skip"/>.</value>
    public RecurringOverlapPolicy Overlap { get; set; } = RecurringOverlapPolicy.Skip;

    /// <summary>
    /// Gets or sets the most a tick's run is delayed by, at random, to spread schedules that tick at the same time.
    /// Keep it well below the schedule's period: the tick's instant (<see cref="RecurringTickContext.ScheduledAt"/>)
    /// stays the scheduled one.
    /// </summary>
    /// <value>The default is <see cref="TimeSpan.Zero"/>: no jitter. From zero to one hour.</value>
    public TimeSpan Jitter { get; set; }

    /// <summary>Gets or sets whether the schedule starts paused (no ticks until <see cref="IRecurringSchedules.SetPaused(string, bool)"/>).</summary>
    /// <value>The default is <see langword="false"/>.</value>
    public bool StartPaused { get; set; }

    internal void Validate()
    {
        if (!Enum.IsDefined(Overlap))
        {
            throw new ArgumentOutOfRangeException(nameof(Overlap), Overlap, "Overlap must be Skip or Queue.");
        }

        if (Jitter < TimeSpan.Zero || Jitter > TimeSpan.FromHours(1))
        {
            throw new ArgumentOutOfRangeException(nameof(Jitter), Jitter, "Jitter must be from zero to one hour.");
        }
    }
}
