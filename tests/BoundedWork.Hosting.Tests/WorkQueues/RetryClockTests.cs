using BoundedWork.Hosting.Internal;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>The work queues' timer thread (<see cref="RetryClock"/>) with timers due far ahead.</summary>
public sealed class RetryClockTests
{
    /// <summary>
    /// A delayed item may wait up to 365 days; the clock's thread must sleep towards such a timer in steps a monitor
    /// wait takes (at most about 24.8 days at once), and still fire the timers due before it.
    /// </summary>
    [Fact]
    public void Timer_DueMoreThan25DaysAhead_TheClockKeepsRunning_ANearerTimerFires()
    {
        using var clock = new RetryClock();
        using var far = clock.CreateTimer(static _ => { }, null, TimeSpan.FromDays(300), Timeout.InfiniteTimeSpan);
        var fired = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        // Created after the far one: the thread is asleep towards the far timer and is woken for this one.
        using var near = clock.CreateTimer(static state => ((TaskCompletionSource)state!).TrySetResult(), fired, TimeSpan.FromMilliseconds(10), Timeout.InfiniteTimeSpan);

        Assert.True(fired.Task.Wait(TestHost.Patience), "The nearer timer never fired: the clock's thread is gone.");
        Assert.Equal(1, clock.PendingCount);
    }

    /// <summary>What a user saw: an in-memory item delayed by a month took the whole process down (the clock's thread threw).</summary>
    [Fact]
    public void EnqueueAsync_DelayedByAMonth_IsHeld_AndItemsDueNowStillRun()
    {
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o => o.WorkerCount = 1);
        using (host)
        {
            Assert.True(host.Queue().EnqueueAsync(new Notice(100), new EnqueueOptions { Delay = TimeSpan.FromDays(30) }).IsCompletedSuccessfully);
            Assert.True(host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromMilliseconds(50) }).IsCompletedSuccessfully);

            probe.WaitHandled(1);
            Assert.Equal([1], probe.Handled);
        }
    }
}
