namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// When a periodic task of one of a node's loops (lease reaping, statistics, cleanup) is next due. Time is measured
/// on the <see cref="TimeProvider"/>'s monotonic timestamps, never on its wall clock: a wall clock set back by an hour
/// would otherwise stall the task for that hour, and one set forward would run it early. Owned by one loop's thread.
/// </summary>
internal sealed class LoopSchedule(TimeProvider time, TimeSpan interval, bool dueNow)
{
    private long _startedAt = time.GetTimestamp();
    private bool _due = dueNow;

    /// <summary>Gets how long until the task is due; zero once it is.</summary>
    public TimeSpan Remaining
    {
        get
        {
            if (_due)
            {
                return TimeSpan.Zero;
            }

            var remaining = interval - time.GetElapsedTime(_startedAt);
            return remaining > TimeSpan.Zero ? remaining : TimeSpan.Zero;
        }
    }

    /// <summary>Gets a value indicating whether the task is due.</summary>
    public bool IsDue => Remaining == TimeSpan.Zero;

    /// <summary>The task has just run: it is next due one interval from now.</summary>
    public void Restart()
    {
        _startedAt = time.GetTimestamp();
        _due = false;
    }
}
