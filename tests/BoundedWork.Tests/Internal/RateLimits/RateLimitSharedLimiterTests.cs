using System.Threading.RateLimiting;

namespace BoundedWork.Tests.Internal.RateLimits;

/// <summary>
/// One <see cref="ConcurrencyLimiter"/> shared by two executors: a permit is held only while an item runs, so an idle
/// executor never holds one back from the other. The windows between a worker's permit and its claim are opened
/// deterministically by <see cref="HookedLimiter"/>, which runs a test's step on the worker's thread right after it
/// grants a permit.
/// </summary>
public sealed class RateLimitSharedLimiterTests
{
    [Fact]
    public void SharedLimiter_ItemCancelledAfterItsWorkerTookThePermit_PermitIsGivenBack_TheOtherExecutorStarts()
    {
        using var shared = new HookedLimiter(new ConcurrencyLimiter(new ConcurrencyLimiterOptions { PermitLimit = 1, QueueLimit = 0 }));
        using var b = new DisposableExecutor(TestKit.Create(workers: 1, configure: o => o.RateLimiter = shared));
        using var a = new DisposableExecutor(TestKit.Create(workers: 1, configure: o => o.RateLimiter = shared)); // disposed first
        using var cancellation = new CancellationTokenSource();

        // A's worker takes the only permit for the item; its caller cancels the item before the worker claims it.
        shared.OnNextGrant(cancellation.Cancel);
        var ran = false;
        var cancelled = a.Value.RunAsync(() => ran = true, cancellation.Token);
        Assert.True(((IAsyncResult)cancelled).AsyncWaitHandle.WaitOne(TestKit.Safety));
        Assert.True(cancelled.IsCanceled);
        var idle = TestKit.WaitForStatistics(a.Value, s => s.Cancelled == 1 && s.QueueLength == 0);
        Assert.False(ran);
        TestKit.AssertConserved(idle);

        // Both executors idle: B's item must get the permit (the wait is a hang guard, not a timing assertion).
        b.Value.RunAsync(() => { }).WaitOrFail("executor B's item while executor A is idle");
        Assert.Equal(1, TestKit.WaitForStatistics(b.Value, s => s.Completed == 1).PermitsAcquired);
        Assert.True(SpinWait.SpinUntil(() => shared.GetStatistics()!.CurrentAvailablePermits == 1, TestKit.Safety), "A permit is still held while both executors are idle.");
        TestKit.AssertConserved(a.Value.GetStatistics());
    }

    [Fact]
    public void SharedLimiter_ItemTakenByAnotherWorkerAfterThePermit_PermitIsGivenBack_TheOtherExecutorStarts()
    {
        using var shared = new HookedLimiter(new ConcurrencyLimiter(new ConcurrencyLimiterOptions { PermitLimit = 2, QueueLimit = 0 }));
        using var b = new DisposableExecutor(TestKit.Create(workers: 2, configure: o => o.RateLimiter = shared));
        using var a = new DisposableExecutor(TestKit.Create(workers: 2, configure: o => o.RateLimiter = shared)); // disposed first
        using var firstStarted = new ManualResetEventSlim();
        using var releaseFirst = new ManualResetEventSlim();
        using var secondStarted = new ManualResetEventSlim();
        using var loserGranted = new ManualResetEventSlim();

        // A's first worker runs an item holding one permit.
        a.Value.Execute(() =>
        {
            firstStarted.Set();
            releaseFirst.Wait(TestKit.Safety);
        });
        firstStarted.WaitOrFail("the first item");

        // A's other worker takes the second permit for the next item and stays in the limiter until the first worker,
        // freed meanwhile, has taken that item with a permit of its own: the other worker then finds nothing to start.
        shared.OnNextGrant(() =>
        {
            loserGranted.Set();
            secondStarted.Wait(TestKit.Safety);
        });
        a.Value.Execute(secondStarted.Set);
        loserGranted.WaitOrFail("the other worker's permit");
        releaseFirst.Set();
        secondStarted.WaitOrFail("the second item");
        TestKit.AssertConserved(TestKit.WaitForStatistics(a.Value, s => s.Completed == 2 && s.QueueLength == 0));
        Assert.True(SpinWait.SpinUntil(() => shared.GetStatistics()!.CurrentAvailablePermits == 2, TestKit.Safety), "Executor A holds a permit while idle.");

        // Both executors idle: B's two items must run at once, on both permits.
        using var bothStarted = new CountdownEvent(2);
        using var releaseB = new ManualResetEventSlim();
        for (var i = 0; i < 2; i++)
        {
            b.Value.Execute(() =>
            {
                bothStarted.Signal();
                releaseB.Wait(TestKit.Safety * 2); // outlasts the assertion's wait: an item ending would free its permit
            });
        }

        try
        {
            Assert.True(bothStarted.Wait(TestKit.Safety), "Executor B could not run two items at once on two permits while executor A was idle.");
        }
        finally
        {
            releaseB.Set();
        }

        TestKit.AssertConserved(TestKit.WaitForStatistics(b.Value, s => s.Completed == 2));
        Assert.True(SpinWait.SpinUntil(() => shared.GetStatistics()!.CurrentAvailablePermits == 2, TestKit.Safety), "A permit is still held while both executors are idle.");
    }

    [Fact]
    public void Permit_ItemCancelledAfterItsWorkerTookThePermit_GoesToTheNextQueuedItem()
    {
        using var shared = new HookedLimiter(new ConcurrencyLimiter(new ConcurrencyLimiterOptions { PermitLimit = 1, QueueLimit = 0 }));
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, configure: o => o.RateLimiter = shared));
        using var cancellation = new CancellationTokenSource();
        using var nextRan = new ManualResetEventSlim();

        // The worker takes the permit for the first item; before it claims that item, its caller cancels it and a
        // second item is queued behind it. The permit goes to the second item: the limiter grants one, not two.
        shared.OnNextGrant(() =>
        {
            cancellation.Cancel();
            executor.Value.Execute(nextRan.Set);
        });
        var cancelled = executor.Value.RunAsync(() => { }, cancellation.Token);
        nextRan.WaitOrFail("the item queued behind the cancelled one");
        Assert.True(((IAsyncResult)cancelled).AsyncWaitHandle.WaitOne(TestKit.Safety));
        Assert.True(cancelled.IsCanceled);
        var s = TestKit.WaitForStatistics(executor.Value, s => s.Completed == 1 && s.Cancelled == 1);
        Assert.Equal(1, shared.GetStatistics()!.TotalSuccessfulLeases);
        Assert.Equal(1, s.PermitsAcquired);
        TestKit.AssertConserved(s);
    }

    /// <summary>A limiter that forwards to another and runs a test's step once, on the asking thread, right after a grant.</summary>
    private sealed class HookedLimiter(RateLimiter inner) : RateLimiter
    {
        private Action? _onNextGrant;

        public override TimeSpan? IdleDuration => inner.IdleDuration;

        /// <summary>Runs <paramref name="step"/> on the thread of the next permit granted, before that thread gets it.</summary>
        public void OnNextGrant(Action step) => Volatile.Write(ref _onNextGrant, step);

        public override RateLimiterStatistics? GetStatistics() => inner.GetStatistics();

        protected override RateLimitLease AttemptAcquireCore(int permitCount)
        {
            var lease = inner.AttemptAcquire(permitCount);
            if (lease.IsAcquired && Interlocked.Exchange(ref _onNextGrant, null) is { } step)
            {
                step();
            }

            return lease;
        }

        protected override ValueTask<RateLimitLease> AcquireAsyncCore(int permitCount, CancellationToken cancellationToken) =>
            throw new NotSupportedException("The executor must never wait for a permit asynchronously.");

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                inner.Dispose();
            }

            base.Dispose(disposing);
        }
    }
}
