using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests;

/// <summary>
/// Pause and resume: a paused executor starts no new item, keeps queueing up to capacity (then the rejection policy
/// applies), lets running items finish, resumes by itself at its end on the executor's clock, and a shutdown while
/// paused drains (or hands back at the deadline) every item as without a pause.
/// </summary>
public sealed class PauseTests
{
    /// <summary>Waits until the watchdog has looked <paramref name="passes"/> more times: a paused worker had time to go wrong.</summary>
    private static void WaitForWatchdog(BoundedExecutor executor, int passes = 3)
    {
        var start = executor.WatchdogPasses;
        Assert.True(SpinWait.SpinUntil(() => executor.WatchdogPasses >= start + passes, TestKit.Safety), "The watchdog never looked.");
    }

    [Fact]
    public async Task Pause_QueuedItemsDoNotStart_UntilResumed()
    {
        await using var executor = TestKit.Create(workers: 2, capacity: 8, configure: o => o.SlowItemThreshold = TimeSpan.FromMilliseconds(20));
        var started = 0;
        executor.Pause("downstream is down");
        for (var i = 0; i < 5; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref started));
        }

        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 2, TestKit.Safety), "Workers never parked.");
        WaitForWatchdog(executor);
        var paused = executor.GetStatistics();
        Assert.Equal(0, Volatile.Read(ref started));
        Assert.Equal(5, paused.QueueLength);
        Assert.Equal(0, paused.Running + paused.Starting);
        Assert.True(paused.IsPaused);
        Assert.True(executor.IsPaused);

        Assert.True(executor.Resume());
        var resumed = TestKit.WaitForStatistics(executor, s => s.Completed == 5);
        Assert.Equal(5, Volatile.Read(ref started));
        Assert.False(resumed.IsPaused);
        Assert.Null(resumed.PauseReason);
        Assert.False(executor.Resume());
    }

    [Fact]
    public async Task Pause_RunningItemFinishes_AndTheNextDoesNotStart()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 8);
        using var gate = new Gate();
        var next = 0;
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Pause("hold");
        executor.Execute(() => Interlocked.Increment(ref next));

        gate.Open();
        var s = TestKit.WaitForStatistics(executor, s => s.Completed == 1 && s.BusyWorkerCount == 0);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety), "The worker never parked.");
        WaitForWatchdog(executor);
        Assert.Equal(0, Volatile.Read(ref next));
        Assert.Equal(1, executor.GetStatistics().QueueLength);
        Assert.Equal(0, s.Failed);

        executor.Resume();
        TestKit.WaitForStatistics(executor, s => s.Completed == 2);
        Assert.Equal(1, Volatile.Read(ref next));
    }

    [Theory]
    [InlineData(RejectionPolicy.Abort)]
    [InlineData(RejectionPolicy.Discard)]
    [InlineData(RejectionPolicy.DiscardOldest)]
    public async Task Pause_QueueAcceptsUpToCapacity_ThenThePolicyApplies(RejectionPolicy policy)
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 2, policy: policy);
        executor.Pause("full test");
        Assert.True(executor.TryExecute(() => { }));
        Assert.True(executor.TryExecute(() => { }));
        Assert.False(executor.TryExecute(() => { }));

        var s = executor.GetStatistics();
        Assert.Equal(2, s.QueueLength);
        Assert.Equal(1, s.Rejected);
        executor.Resume();
        var done = TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.Completed == 2);
        TestKit.AssertConserved(done);
    }

    [Fact]
    public async Task Pause_WithAnEnd_ResumesByItselfOnTheExecutorsClock()
    {
        var clock = new FakeTimeProvider(new DateTimeOffset(2026, 1, 1, 12, 0, 0, TimeSpan.Zero));
        await using var executor = TestKit.Create(workers: 1, capacity: 4, configure: o => o.TimeProvider = clock);
        using var ran = new ManualResetEventSlim();
        executor.Pause("maintenance", TimeSpan.FromMinutes(10));
        executor.Execute(ran.Set);

        var paused = executor.GetStatistics();
        Assert.Equal("maintenance", paused.PauseReason);
        Assert.Equal(clock.GetUtcNow(), paused.PausedSince);
        Assert.Equal(clock.GetUtcNow().AddMinutes(10), paused.PausedUntil);

        clock.Advance(TimeSpan.FromMinutes(9));
        WaitForWatchdog(executor);
        Assert.False(ran.IsSet);
        Assert.True(executor.IsPaused);

        clock.Advance(TimeSpan.FromMinutes(1));
        ran.WaitOrFail("the item after the pause's end");
        Assert.False(executor.GetStatistics().IsPaused);
    }

    [Fact]
    public async Task Pause_WorkersWaitingForARateLimitPermit_GiveUpTheWait_AndStartNothingWhenPermitsCome()
    {
        var limiter = new ManualRateLimiter();
        await using var executor = TestKit.Create(workers: 2, capacity: 8, configure: o => o.RateLimiter = limiter);
        var started = 0;
        for (var i = 0; i < 3; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref started));
        }

        TestKit.WaitForStatistics(executor, s => s.RateLimitWaitingWorkers == 2);
        executor.Pause("limiter test");
        TestKit.WaitForStatistics(executor, s => s.RateLimitWaitingWorkers == 0);
        limiter.Grant(3);
        WaitForWatchdog(executor);
        Assert.Equal(0, Volatile.Read(ref started));
        Assert.Equal(3, executor.GetStatistics().QueueLength);

        executor.Resume();
        TestKit.WaitForStatistics(executor, s => s.Completed == 3);
    }

    [Fact]
    public async Task Shutdown_WhilePaused_DrainsEveryQueuedItem()
    {
        var executor = TestKit.Create(workers: 2, capacity: 8);
        var ran = 0;
        executor.Pause("incident");
        for (var i = 0; i < 6; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref ran));
        }

        var result = await executor.ShutdownAsync(Timeout.InfiniteTimeSpan);
        Assert.Empty(result.AbandonedItems);
        Assert.True(result.WorkersExited);
        Assert.Equal(6, Volatile.Read(ref ran));
        var s = executor.GetStatistics();
        Assert.False(s.IsPaused);
        TestKit.AssertConserved(s);
        Assert.Throws<InvalidOperationException>(() => executor.Pause("too late"));
        Assert.False(executor.Resume());
    }

    [Fact]
    public async Task Shutdown_WhilePaused_AtTheDeadline_HandsBackTheQueuedItems()
    {
        var executor = TestKit.Create(workers: 1, capacity: 8);
        using var gate = new Gate();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Pause("incident");
        executor.Execute(() => { });
        executor.Execute(() => { });

        var result = await executor.ShutdownAsync(new CancellationToken(canceled: true));
        Assert.Equal(2, result.AbandonedItems.Count);
        gate.Open();
        executor.Completion.WaitOrFail("the workers' exit");
        var s = executor.GetStatistics();
        Assert.Equal(2, s.Abandoned);
        TestKit.AssertConserved(s);
    }

    [Theory]
    [InlineData("")]
    [InlineData("   ")]
    [InlineData("line\r\nInjected: header")]
    [InlineData("tab\there")]
    public async Task Pause_BadReason_ThrowsNamingTheReason_AndNothingChanges(string reason)
    {
        await using var executor = TestKit.Create();
        var error = Assert.Throws<ArgumentException>(() => executor.Pause(reason));
        Assert.Equal("reason", error.ParamName);
        Assert.False(executor.IsPaused);
    }

    [Fact]
    public async Task Pause_TooLongReason_Throws()
    {
        await using var executor = TestKit.Create();
        Assert.Throws<ArgumentException>(() => executor.Pause(new string('x', BoundedExecutor.MaxPauseReasonLength + 1)));
        executor.Pause(new string('x', BoundedExecutor.MaxPauseReasonLength));
        Assert.True(executor.IsPaused);
    }

    [Theory]
    [InlineData(-1L)]
    [InlineData(0L)]
    [InlineData(long.MaxValue)]
    public async Task Pause_BadDuration_ThrowsNamingTheDuration_AndNothingChanges(long ticks)
    {
        await using var executor = TestKit.Create();
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => executor.Pause("why", TimeSpan.FromTicks(ticks)));
        Assert.Equal("duration", error.ParamName);
        Assert.False(executor.IsPaused);
    }

    [Fact]
    public async Task Pause_Again_ReplacesTheReasonAndTheEnd()
    {
        await using var executor = TestKit.Create();
        executor.Pause("first", TimeSpan.FromMinutes(5));
        executor.Pause("second");
        var s = executor.GetStatistics();
        Assert.Equal("second", s.PauseReason);
        Assert.Null(s.PausedUntil);
    }
}

/// <summary>A pause with an end resumes on time while the shared ThreadPool is starved: the watchdog thread ends it.</summary>
[Collection(StarvationCollection.Name)]
public sealed class PauseStarvationTests
{
    [Fact]
    public void Pause_WithAnEnd_ResumesWhileThePoolIsStarved()
    {
        var clock = new FakeTimeProvider();
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, capacity: 4, configure: o => o.TimeProvider = clock));
        using var ran = new ManualResetEventSlim();
        using (var starvation = ThreadPoolStarvation.Begin())
        {
            executor.Value.Pause("starved", TimeSpan.FromSeconds(30));
            executor.Value.Execute(ran.Set);
            clock.Advance(TimeSpan.FromSeconds(30));
            ran.WaitOrFail("the item after the pause's end, with the pool starved");
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }
    }
}
