namespace BoundedWork.Internal;

/// <summary>
/// The clock that stamps every item (queued, started): what slow-item and queue-wait alarms, the oldest item's age
/// and running items' elapsed times are measured with. On the system clock it reads
/// <see cref="Environment.TickCount64"/> (a few nanoseconds, millisecond resolution: ample for thresholds of
/// seconds) instead of a high-resolution timestamp (about 25 ns on Linux, and there are two per item); any other
/// <see cref="TimeProvider"/> (a test's fake clock) is used as it is. The duration histograms, which need
/// sub-millisecond precision, take their own high-resolution timestamps, and only while someone listens.
/// </summary>
internal readonly struct ItemClock
{
    private readonly TimeProvider? _timeProvider;

    public ItemClock(TimeProvider timeProvider) =>
        _timeProvider = ReferenceEquals(timeProvider, TimeProvider.System) ? null : timeProvider;

    public long Now() => _timeProvider is null ? Environment.TickCount64 : _timeProvider.GetTimestamp();

    public TimeSpan Elapsed(long from, long to) =>
        _timeProvider is null ? TimeSpan.FromMilliseconds(to - from) : _timeProvider.GetElapsedTime(from, to);
}
