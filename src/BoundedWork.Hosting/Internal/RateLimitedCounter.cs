namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Counts events and lets at most one report through per interval, handing the reporter the count since the
/// previous report. Lock-free: the caller that wins the interval reports, every other caller only counts.
/// </summary>
internal sealed class RateLimitedCounter(TimeProvider timeProvider, TimeSpan interval)
{
    private long _pending;
    private long _lastReportTimestamp = long.MinValue;

    /// <summary>The shortest time between two reports of one executor's repeated events.</summary>
    public static readonly TimeSpan DefaultInterval = TimeSpan.FromSeconds(30);

    /// <summary>Counts one event; returns <see langword="true"/> with the events since the last report when this caller should report.</summary>
    public bool TryCountAndReport(out long count)
    {
        Interlocked.Increment(ref _pending);
        var now = timeProvider.GetTimestamp();
        var last = Volatile.Read(ref _lastReportTimestamp);
        if (last != long.MinValue && timeProvider.GetElapsedTime(last, now) < interval)
        {
            count = 0;
            return false;
        }

        if (Interlocked.CompareExchange(ref _lastReportTimestamp, now, last) != last)
        {
            count = 0;
            return false; // another caller reports this interval
        }

        count = Interlocked.Exchange(ref _pending, 0);
        return count > 0;
    }
}
