using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Threading.RateLimiting;

namespace BoundedWork.Tests.Internal.RateLimits;

/// <summary>
/// A rate limit beside the worker bound: workers take a permit before they claim an item, wait for one on their own
/// thread while the item stays queued, and every way a wait can end (a permit, a change of limit, a shrink, a
/// cancellation, a shutdown deadline) loses nothing. Permits come from <see cref="ManualRateLimiter"/>, so "no more
/// starts than permits" is an exact count.
/// </summary>
public sealed class RateLimitTests
{
    [Theory]
    [InlineData(1)]
    [InlineData(3)]
    public void Starts_NeverExceedPermits_TheOthersWaitQueued(int workers)
    {
        var limiter = new ManualRateLimiter(permits: 2);
        using var executor = new DisposableExecutor(TestKit.Create(workers: workers, configure: o => o.RateLimiter = limiter));
        var started = 0;
        for (var i = 0; i < 6; i++)
        {
            executor.Value.Execute(() => Interlocked.Increment(ref started));
        }

        var waiting = TestKit.WaitForStatistics(executor.Value, s => s.Completed == 2 && s.RateLimitWaitingWorkers == workers);
        Assert.Equal(2, Volatile.Read(ref started));
        Assert.Equal(4, waiting.QueueLength); // the waiting workers hold no item: the rest stay queued and visible
        Assert.True(waiting.IsRateLimited);
        Assert.True(waiting.PermitsRefused >= 1);
        Assert.Equal(2, waiting.PermitsAcquired);
        TestKit.AssertConserved(waiting with { Submitted = waiting.Submitted - waiting.QueueLength });

        limiter.Grant(1);
        TestKit.WaitForStatistics(executor.Value, s => s.Completed == 3 && s.RateLimitWaitingWorkers == workers);
        Assert.Equal(3, Volatile.Read(ref started));

        limiter.Grant(3);
        var done = TestKit.WaitForStatistics(executor.Value, s => s.Completed == 6);
        Assert.Equal(6, Volatile.Read(ref started));
        Assert.Equal(6, limiter.Granted);
        Assert.Equal(6, done.PermitsAcquired);
        Assert.Equal(0, limiter.AskedOnPool);
        TestKit.AssertConserved(done);
    }

    [Fact]
    public void Permit_TakenWhileAnotherWorkerTookTheItem_IsGivenBackToTheLimiter()
    {
        // Two workers, two permits, one item: a permit granted to a worker that then finds the item gone is given back
        // (a user's limiter may be shared with other executors), so once the executor is idle no lease is held.
        // RateLimitSharedLimiterTests opens that window deterministically.
        var limiter = new ManualRateLimiter(permits: 2);
        using var executor = new DisposableExecutor(TestKit.Create(workers: 2, configure: o => o.RateLimiter = limiter));
        using var ran = new CountdownEvent(2);
        executor.Value.Execute(() => ran.Signal());
        TestKit.WaitForStatistics(executor.Value, s => s.Completed == 1);
        Assert.True(SpinWait.SpinUntil(() => limiter.Returned == limiter.Granted, TestKit.Safety), "A permit is held by an idle executor.");
        limiter.Grant(1);
        executor.Value.Execute(() => ran.Signal());
        Assert.True(ran.Wait(TestKit.Safety));
        Assert.True(limiter.Granted <= 3);
        TestKit.AssertConserved(TestKit.WaitForStatistics(executor.Value, s => s.Completed == 2));
    }

    [Fact]
    public void Reconfigure_AddsChangesAndRemovesTheLimit_WhileWorkersWait()
    {
        using var executor = new DisposableExecutor(TestKit.Create(workers: 2, capacity: 64));
        var limiter = new ManualRateLimiter();
        var change = executor.Value.Reconfigure(s => s with { RateLimiter = limiter });
        Assert.Equal(["RateLimiter"], change.ChangedSettings);
        Assert.Contains("RateLimiter none -> ManualRateLimiter", change.ToString(), StringComparison.Ordinal);

        for (var i = 0; i < 10; i++)
        {
            executor.Value.Execute(() => { });
        }

        TestKit.WaitForStatistics(executor.Value, s => s.RateLimitWaitingWorkers == 2 && s.QueueLength == 10);

        // The executor's own token bucket replaces the user's limiter: the waiting workers ask it at once.
        executor.Value.Reconfigure(s => s with { RateLimiter = null, PermitsPerSecond = 1_000_000, PermitBurst = 1_000_000 });
        var done = TestKit.WaitForStatistics(executor.Value, s => s.Completed == 10);
        Assert.Equal(0, limiter.Granted);
        Assert.Equal(1_000_000, done.PermitsPerSecond);

        // Removing the limit: nothing waits any more.
        executor.Value.Reconfigure(s => s with { PermitsPerSecond = 0 });
        executor.Value.RunAsync(() => { }).WaitOrFail("an item without a limit");
        Assert.False(executor.Value.GetStatistics().IsRateLimited);
    }

    [Fact]
    public void Reconfigure_LowerRate_KeepsNoFreshBurst()
    {
        // The new bucket takes over what the old one held: a full bucket of 5 lowered to a burst of 2 holds 2, not a
        // fresh full bucket, and one that was emptied stays empty.
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, configure: o => { o.PermitsPerSecond = 1; o.PermitBurst = 5; }));
        executor.Value.Reconfigure(s => s with { PermitBurst = 2 });
        var limiter = executor.Value.Permits.Limiter!;
        Assert.InRange(limiter.GetStatistics()!.CurrentAvailablePermits, 0, 2);
    }

    [Theory]
    [InlineData(-1, 1, "PermitsPerSecond")]
    [InlineData(1_000_001, 1, "PermitsPerSecond")]
    [InlineData(10, 0, "PermitBurst")]
    [InlineData(10, 1_000_001, "PermitBurst")]
    public void Reconfigure_InvalidRateLimit_NamesTheSetting_AndChangesNothing(int permitsPerSecond, int burst, string setting)
    {
        using var executor = new DisposableExecutor(TestKit.Create());
        var before = executor.Value.Settings;
        var error = Assert.Throws<ArgumentException>(() => executor.Value.Reconfigure(s => s with { PermitsPerSecond = permitsPerSecond, PermitBurst = burst }));
        Assert.Contains(setting, error.Message, StringComparison.Ordinal);
        Assert.Same(before, executor.Value.Settings);
    }

    [Fact]
    public void Options_BothALimiterAndPermitsPerSecond_AreRefusedNamingPermitsPerSecond()
    {
        var options = new BoundedExecutorOptions { PermitsPerSecond = 10, RateLimiter = new ManualRateLimiter() };
        var errors = options.GetValidationErrors();
        Assert.Contains("RateLimiter is set", errors["PermitsPerSecond"], StringComparison.Ordinal);
    }

    [Fact]
    public void RunAsync_CancelledWhileWorkersWaitForAPermit_IsCancelledAndSpendsNoPermit()
    {
        var limiter = new ManualRateLimiter();
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, configure: o => o.RateLimiter = limiter));
        using var cancellation = new CancellationTokenSource();
        var ran = false;
        var task = executor.Value.RunAsync(() => ran = true, cancellation.Token);
        TestKit.WaitForStatistics(executor.Value, s => s.RateLimitWaitingWorkers == 1);
        cancellation.Cancel();
        Assert.True(((IAsyncResult)task).AsyncWaitHandle.WaitOne(TestKit.Safety));
        Assert.True(task.IsCanceled);

        limiter.Grant(1);
        executor.Value.RunAsync(() => { }).WaitOrFail("the next item");
        Assert.False(ran);
        var s = TestKit.WaitForStatistics(executor.Value, s => s.Completed == 1 && s.Cancelled == 1);
        Assert.Equal(1, limiter.Granted);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public void Shutdown_Deadline_AbandonsTheItemsWorkersWaitedFor_AndTheWorkersExit()
    {
        var limiter = new ManualRateLimiter();
        var executor = TestKit.Create(workers: 3, configure: o => o.RateLimiter = limiter);
        var ran = 0;
        for (var i = 0; i < 5; i++)
        {
            executor.Execute(() => Interlocked.Increment(ref ran));
        }

        TestKit.WaitForStatistics(executor, s => s.RateLimitWaitingWorkers == 3);
        var result = executor.Shutdown(TimeSpan.FromMilliseconds(20));
        Assert.Equal(5, result.AbandonedItems.Count);
        executor.Completion.WaitOrFail("the workers to exit");
        var s = executor.GetStatistics();
        Assert.Equal(5, s.Abandoned);
        Assert.Equal(0, s.RateLimitWaitingWorkers);
        Assert.Equal(0, Volatile.Read(ref ran));
        Assert.Equal(0, limiter.Granted);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public void Shutdown_WithoutDeadline_DrainsAsPermitsCome()
    {
        var limiter = new ManualRateLimiter();
        var executor = TestKit.Create(workers: 2, configure: o => o.RateLimiter = limiter);
        for (var i = 0; i < 4; i++)
        {
            executor.Execute(() => { });
        }

        TestKit.WaitForStatistics(executor, s => s.RateLimitWaitingWorkers == 2);
        var shutdown = executor.ShutdownAsync(Timeout.InfiniteTimeSpan);
        Assert.False(shutdown.IsCompleted);
        limiter.Grant(4);
        shutdown.WaitOrFail("the drain");
        Assert.Empty(shutdown.Result.AbandonedItems);
        var s = executor.GetStatistics();
        Assert.Equal(4, s.Completed);
        TestKit.AssertConserved(s);
        Assert.Equal(limiter.Granted, limiter.Returned); // every lease ended, the held ones included
    }

    [Fact]
    public void Resize_Shrink_RetiresWorkersThatWaitForAPermit()
    {
        var limiter = new ManualRateLimiter();
        using var executor = new DisposableExecutor(TestKit.Create(workers: 4, configure: o => o.RateLimiter = limiter));
        for (var i = 0; i < 6; i++)
        {
            executor.Value.Execute(() => { });
        }

        TestKit.WaitForStatistics(executor.Value, s => s.RateLimitWaitingWorkers == 4);
        executor.Value.Resize(1);
        var shrunk = TestKit.WaitForStatistics(executor.Value, s => s.LiveWorkerCount == 1 && s.RateLimitWaitingWorkers == 1);
        Assert.Equal(6, shrunk.QueueLength);

        limiter.Grant(6);
        TestKit.AssertConserved(TestKit.WaitForStatistics(executor.Value, s => s.Completed == 6));
    }

    [Fact]
    public void CallerRuns_TakesAPermitToo()
    {
        var limiter = new ManualRateLimiter();
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.CallerRuns, configure: o => o.RateLimiter = limiter));
        executor.Value.Execute(() => { }); // queued; the worker waits for a permit
        TestKit.WaitForStatistics(executor.Value, s => s.RateLimitWaitingWorkers == 1 && s.QueueLength == 1);

        var callerRan = new ManualResetEventSlim();
        var caller = new Thread(() => executor.Value.Execute(callerRan.Set)) { IsBackground = true };
        caller.Start();
        TestKit.WaitForStatistics(executor.Value, s => s.RateLimitWaitingWorkers == 2);
        Assert.False(callerRan.IsSet);

        limiter.Grant(2);
        callerRan.WaitOrFail("the caller-run item");
        Assert.True(caller.Join(TestKit.Safety));
        var s = TestKit.WaitForStatistics(executor.Value, s => s.Completed == 2);
        Assert.Equal(1, s.CallerRuns);
        Assert.Equal(2, limiter.Granted);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public void PermitsPerSecond_BuiltInBucket_IsReplenishedByTheWatchdog()
    {
        // A burst of 1 empties the bucket at the first item: the rest run only because the watchdog replenishes it.
        using var executor = new DisposableExecutor(TestKit.Create(workers: 2, capacity: 64, configure: o => { o.PermitsPerSecond = 2000; o.PermitBurst = 1; }));
        Assert.IsType<TokenBucketRateLimiter>(executor.Value.Permits.Limiter);
        Assert.False(((TokenBucketRateLimiter)executor.Value.Permits.Limiter!).IsAutoReplenishing);
        for (var i = 0; i < 40; i++)
        {
            executor.Value.Execute(() => { });
        }

        var s = TestKit.WaitForStatistics(executor.Value, s => s.Completed == 40);
        Assert.Equal(40, s.PermitsAcquired);
        TestKit.AssertConserved(s);
    }

    [Fact]
    public void Metrics_ReportWaitingWorkersPermitsRefusalsAndWaitDurations()
    {
        var name = $"metrics-{Guid.NewGuid():N}";
        var measured = new ConcurrentDictionary<string, double>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == BoundedWorkDiagnostics.MeterName && instrument.Name.StartsWith("boundedwork.ratelimit.", StringComparison.Ordinal))
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        void Record(Instrument instrument, double value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            foreach (var tag in tags)
            {
                if (tag.Key == BoundedWorkDiagnostics.ExecutorTag && Equals(tag.Value, name))
                {
                    measured[instrument.Name] = value;
                }
            }
        }

        listener.SetMeasurementEventCallback<int>((i, v, t, _) => Record(i, v, t));
        listener.SetMeasurementEventCallback<long>((i, v, t, _) => Record(i, v, t));
        listener.SetMeasurementEventCallback<double>((i, v, t, _) => Record(i, v, t));
        listener.Start();

        var limiter = new ManualRateLimiter();
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, name: name, configure: o => o.RateLimiter = limiter));
        using var grantAll = new GrantOnExit(limiter); // a failed assertion must not leave the drain waiting for permits
        executor.Value.Execute(() => { });
        TestKit.WaitForStatistics(executor.Value, s => s.RateLimitWaitingWorkers == 1);
        listener.RecordObservableInstruments();
        Assert.Equal(1, measured["boundedwork.ratelimit.waiting"]);
        Assert.Equal(1, measured["boundedwork.ratelimit.refusals"]);
        Assert.Equal(0, measured["boundedwork.ratelimit.permits"]);

        limiter.Grant(1);
        TestKit.WaitForStatistics(executor.Value, s => s.Completed == 1 && s.RateLimitWaitingWorkers == 0);
        Assert.True(measured.ContainsKey("boundedwork.ratelimit.wait.duration"), "The finished wait was not recorded.");
        listener.RecordObservableInstruments();
        Assert.Equal(0, measured["boundedwork.ratelimit.waiting"]);
        Assert.Equal(1, measured["boundedwork.ratelimit.permits"]);
        Assert.True(executor.Value.GetStatistics().RateLimitWaitTime > TimeSpan.Zero);
    }
}

/// <summary>Grants plenty of permits when a test ends, so that shutting its executor down never waits for them.</summary>
internal sealed class GrantOnExit(ManualRateLimiter limiter) : IDisposable
{
    public void Dispose() => limiter.Grant(1_000_000);
}
