namespace BoundedWork.Hosting;

/// <summary>What a durable schedule does with the ticks it missed (no node ran for longer than <see cref="DurableScheduleOptions.MisfireThreshold"/>).</summary>
public enum MissedTickPolicy
{
    /// <summary>The missed ticks collapse into one run, for the latest of them (none if a tick on time is enqueued in the same pass). The default.</summary>
    LatestOnce = 0,

    /// <summary>The missed ticks are skipped and counted; the schedule goes on from its next tick.</summary>
    Skip = 1,

    /// <summary>Each missed tick runs, the latest <see cref="DurableScheduleOptions.MaxCatchUp"/> of them at most; earlier ones are skipped and counted.</summary>
    Each = 2,
}

/// <summary>How a durable schedule treats late and missed ticks.</summary>
public sealed class DurableScheduleOptions
{
    /// <summary>Gets or sets what happens to ticks missed by more than <see cref="MisfireThreshold"/>.</summary>
    /// <value>The default is <see cref="MissedTickPolicy.LatestOnce"/>.</value>
    public MissedTickPolicy MissedTicks { get; set; } = MissedTickPolicy.LatestOnce;

    /// <summary>Gets or sets how many missed ticks <see cref="MissedTickPolicy.Each"/> runs at most.</summary>
    /// <value>The default is 10. From 1 to 1,000.</value>
    public int MaxCatchUp { get; set; } = 10;

    /// <summary>
    /// Gets or sets how late a tick may be enqueued and still count as on time (every such tick is enqueued, whatever
    /// <see cref="MissedTicks"/> says). Later ones are missed.
    /// </summary>
    /// <value>The default is one minute. From one second to one day.</value>
    public TimeSpan MisfireThreshold { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>Gets or sets whether the schedule is stored paused when it is first stored (a later start never changes a stored pause).</summary>
    /// <value>The default is <see langword="false"/>.</value>
    public bool StartPaused { get; set; }

    internal void Validate()
    {
        if (!Enum.IsDefined(MissedTicks))
        {
            throw new ArgumentOutOfRangeException(nameof(MissedTicks), MissedTicks, "MissedTicks must be LatestOnce, Skip or Each.");
        }

        if (MaxCatchUp is < 1 or > 1000)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxCatchUp), MaxCatchUp, "MaxCatchUp must be from 1 to 1000.");
        }

        if (MisfireThreshold < TimeSpan.FromSeconds(1) || MisfireThreshold > TimeSpan.FromDays(1))
        {
            throw new ArgumentOutOfRangeException(nameof(MisfireThreshold), MisfireThreshold, "MisfireThreshold must be from one second to one day.");
        }
    }
}
