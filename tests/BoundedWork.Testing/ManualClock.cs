namespace BoundedWork.Testing;

/// <summary>A clock that moves only when a test says so (timestamps only; timers are the system's).</summary>
public sealed class ManualClock : TimeProvider
{
    private long _ticks = TimeSpan.FromDays(1).Ticks;

    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    public override long GetTimestamp() => Interlocked.Read(ref _ticks);

    public void Advance(TimeSpan by) => Interlocked.Add(ref _ticks, by.Ticks);
}
