using System.Collections.Concurrent;
using BoundedWork.Internal;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Internal.Time;

/// <summary>
/// A deadline too far away to represent on the executor's clock means no deadline: it never wraps round into the
/// past. The tests wait until the watchdog (which keeps every deadline) has looked at least once after the deadline
/// was set, then check that it abandoned nothing.
/// </summary>
public sealed class HugeDeadlineTests
{
    public static TheoryData<TimeSpan> HugeTimeouts => new()
    {
        TimeSpan.MaxValue,
        TimeSpan.MaxValue - TimeSpan.FromTicks(1),
        TimeSpan.FromDays(200_000),
    };

    [Theory]
    [MemberData(nameof(HugeTimeouts))]
    public async Task ShutdownAsync_HugeTimeout_WaitsForTheDrainInsteadOfAbandoningAtOnce(TimeSpan timeout)
    {
        using var gate = new Gate();
        var ran = 0;
        var executor = TestKit.Create(workers: 1, configure: FrequentWatchdog);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        for (var i = 0; i < 3; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref ran));
        }

        var shutdown = executor.ShutdownAsync(timeout);
        WaitForTheWatchdogToLook(executor);

        Assert.Equal(0, executor.GetStatistics().Abandoned);
        Assert.Equal(3, executor.QueueLength);
        Assert.False(shutdown.IsCompleted);
        gate.Open();
        var result = await shutdown.WaitAsync(TestKit.Safety);
        Assert.True(result.Drained);
        Assert.Equal(3, Volatile.Read(ref ran));
    }

    [Fact]
    public void Shutdown_Synchronous_TimeSpanMaxValue_WaitsForTheDrain()
    {
        using var gate = new Gate();
        var ran = 0;
        var executor = TestKit.Create(workers: 1, configure: FrequentWatchdog);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() =>
        {
            Interlocked.Increment(ref ran);
        });
        ShutdownResult? result = null;
        var caller = new Thread(() => result = executor.Shutdown(TimeSpan.MaxValue));
        caller.Start();
        Assert.True(SpinWait.SpinUntil(() => executor.IsShutdown, TestKit.Safety));
        WaitForTheWatchdogToLook(executor);

        Assert.Equal(0, executor.GetStatistics().Abandoned);
        Assert.True(caller.IsAlive, "Shutdown(TimeSpan.MaxValue) returned while an item was still running.");
        gate.Open();
        Assert.True(caller.Join(TestKit.Safety));
        Assert.True(result!.Drained);
        Assert.Equal(1, Volatile.Read(ref ran));
    }

    [Fact]
    public async Task DisposeAsync_DisposeTimeoutMaxValue_WaitsForTheDrainAndAbandonsNothing()
    {
        var rejected = new ConcurrentQueue<WorkItemRejectedArguments>();
        using var gate = new Gate();
        var ran = 0;
        var executor = TestKit.Create(workers: 1, configure: o =>
        {
            FrequentWatchdog(o);
            o.DisposeTimeout = TimeSpan.MaxValue;
            o.OnRejected = rejected.Enqueue;
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        for (var i = 0; i < 3; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref ran));
        }

        var disposing = executor.DisposeAsync().AsTask();
        WaitForTheWatchdogToLook(executor);

        Assert.Equal(0, executor.GetStatistics().Abandoned);
        Assert.False(disposing.IsCompleted);
        gate.Open();
        await disposing.WaitAsync(TestKit.Safety);
        Assert.Empty(rejected);
        Assert.Equal(3, Volatile.Read(ref ran));
        Assert.True(executor.Completion.IsCompleted);
    }

    [Fact]
    public void DeadlineAfter_SaturatesAtNeverAndNeverWrapsIntoThePast()
    {
        var nanosecondClock = new NanosecondClock(long.MaxValue / 2);
        var manual = new FakeTimeProvider();

        Assert.Equal(Deadline.Never, Deadline.After(nanosecondClock, TimeSpan.MaxValue));
        Assert.Equal(Deadline.Never, Deadline.After(nanosecondClock, TimeSpan.FromDays(200_000)));
        Assert.Equal(Deadline.Never, Deadline.After(nanosecondClock, Timeout.InfiniteTimeSpan));
        Assert.Equal(Deadline.Never, Deadline.After(manual, TimeSpan.MaxValue));
        Assert.Equal((long.MaxValue / 2) + 1_000_000_000, Deadline.After(nanosecondClock, TimeSpan.FromSeconds(1)));
        Assert.Equal(long.MaxValue / 2, Deadline.After(nanosecondClock, TimeSpan.Zero));
        Assert.Equal(manual.GetTimestamp() + TimeSpan.TicksPerSecond, Deadline.After(manual, TimeSpan.FromSeconds(1)));
    }

    /// <summary>A clock at a fixed timestamp ticking in nanoseconds, as Stopwatch does on Linux.</summary>
    private sealed class NanosecondClock(long now) : TimeProvider
    {
        public override long TimestampFrequency => 1_000_000_000;

        public override long GetTimestamp() => now;
    }

    /// <summary>Looks at least every 5 ms, so waiting for it to look costs the test little.</summary>
    private static void FrequentWatchdog(BoundedExecutorOptions options) => options.SlowItemThreshold = TimeSpan.FromMilliseconds(20);

    /// <summary>Waits until the watchdog has begun and finished a whole pass after this call began.</summary>
    private static void WaitForTheWatchdogToLook(BoundedExecutor executor)
    {
        var passes = executor.WatchdogPasses;
        Assert.True(SpinWait.SpinUntil(() => executor.WatchdogPasses >= passes + 2, TestKit.Safety), "The watchdog never looked.");
    }
}
