using BoundedWork.Internal.Adaptive;

namespace BoundedWork.Tests.Adaptive;

/// <summary>
/// A pin's end as <see cref="AdaptiveController.TryGetPin"/> reports it is read from one instant: a pin reported in
/// force ends after the moment it was read, at the time it was set to end.
/// </summary>
public sealed class PinClockReadTests
{
    [Fact]
    public void TryGetPin_TheClockMovesBetweenReads_ReportsThePinsOwnEnd_NotNow()
    {
        // Every read of the timestamp moves the clock 20 s on: pinned at 20 s for 30 s, it ends at 50 s; asked at 40 s,
        // a second read (60 s) would see the pin over, and report a pin in force that ends "now".
        var clock = new ClockMovingOnEachRead(TimeSpan.FromSeconds(20));
        var controller = new AdaptiveController(AdaptiveParameters.Default, clock);
        controller.Pin(5, TimeSpan.FromSeconds(30));

        Assert.True(controller.TryGetPin(out var count, out var until));

        Assert.Equal(5, count);
        Assert.Equal(ClockMovingOnEachRead.Epoch + TimeSpan.FromSeconds(50), until);
    }

    /// <summary>A clock whose timestamp moves on by <c>step</c> at each read; the wall clock shows the last timestamp read.</summary>
    private sealed class ClockMovingOnEachRead(TimeSpan step) : TimeProvider
    {
        public static readonly DateTimeOffset Epoch = new(2026, 11, 24, 12, 0, 0, TimeSpan.Zero);

        private long _ticks;

        public override long TimestampFrequency => TimeSpan.TicksPerSecond;

        public override long GetTimestamp() => Interlocked.Add(ref _ticks, step.Ticks);

        public override DateTimeOffset GetUtcNow() => Epoch + TimeSpan.FromTicks(Interlocked.Read(ref _ticks));
    }
}
