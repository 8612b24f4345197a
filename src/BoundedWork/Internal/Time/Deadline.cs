namespace BoundedWork.Internal;

/// <summary>
/// Deadlines as timestamps of a <see cref="TimeProvider"/>: the one place that turns a timeout into a deadline, for
/// every caller (shutdown with a timeout, <see cref="BoundedExecutorOptions.DisposeTimeout"/>, the Wait policy's
/// timeout). A timeout too long for the clock to represent (up to <see cref="TimeSpan.MaxValue"/>) saturates at
/// <see cref="Never"/>; it never wraps round into the past.
/// </summary>
internal static class Deadline
{
    /// <summary>The deadline that never passes.</summary>
    public const long Never = long.MaxValue;

    /// <summary>
    /// The timestamp of <paramref name="clock"/> <paramref name="timeout"/> from now: <see cref="Never"/> for
    /// <see cref="Timeout.InfiniteTimeSpan"/> or a timeout beyond the clock's range, now for a timeout of zero or less.
    /// </summary>
    public static long After(TimeProvider clock, TimeSpan timeout)
    {
        if (timeout == Timeout.InfiniteTimeSpan)
        {
            return Never;
        }

        var now = clock.GetTimestamp();
        if (timeout <= TimeSpan.Zero)
        {
            return now;
        }

        // In floating point first: timeout.Ticks times the clock's frequency overflows a long long before the result
        // does not fit (TimeSpan.MaxValue at a nanosecond clock is about a hundred times too large).
        var offset = timeout.Ticks * ((double)clock.TimestampFrequency / TimeSpan.TicksPerSecond);
        if (offset >= Never)
        {
            return Never;
        }

        var whole = (long)offset;
        return now > 0 && whole >= Never - now ? Never : now + whole;
    }
}
