using System.Threading.RateLimiting;

namespace BoundedWork.Tests.Internal.RateLimits;

/// <summary>
/// A submitting thread that runs its item itself (CallerRuns) and waits for a permit stops waiting once the executor
/// has completed: the drain is over, nothing replenishes the limit any more, and the item is rejected as shut down
/// instead of blocking its submitter for good.
/// </summary>
public sealed class RateLimitCallerShutdownTests
{
    [Fact]
    public void CallerRunsSubmitter_WaitingForAPermit_IsRejected_OnceTheDrainHasCompleted()
    {
        // Two permits: one for the item that blocks the worker, one for the item queued behind it.
        using var limiter = new CallerGatedLimiter(new ManualRateLimiter(2));
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.CallerRuns, configure: o => o.RateLimiter = limiter);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var queuedRan = 0;
        executor.Execute(() => Interlocked.Increment(ref queuedRan)); // the queue is full now

        RejectedExecutionException? rejection = null;
        var callerRan = 0;
        var caller = new Thread(() =>
        {
            try
            {
                executor.Execute(() => Interlocked.Increment(ref callerRan)); // full: runs here, after a permit
            }
            catch (RejectedExecutionException ex)
            {
                rejection = ex;
            }
        })
        { IsBackground = true };
        limiter.GatedThread = caller;
        caller.Start();
        limiter.CallerAsking.WaitOrFail("the submitting thread to ask for a permit");

        // The drain runs to its end while the submitter is between asking and waiting: the worker takes the last
        // permit for the queued item and exits.
        var shutdown = executor.ShutdownAsync();
        gate.Open();
        shutdown.WaitOrFail("the drain");
        Assert.True(shutdown.Result.WorkersExited);

        // The submitter is refused (no permit is left) and must give up rather than wait for a limit nobody serves.
        limiter.ReleaseCaller.Set();
        Assert.True(caller.Join(TestKit.Safety), "The CallerRuns submitter kept waiting for a permit after the executor completed.");
        Assert.NotNull(rejection);
        Assert.Equal(RejectionReason.ShutDown, rejection.Reason);
        Assert.Equal(0, callerRan);
        Assert.Equal(1, queuedRan);
        var s = executor.GetStatistics();
        Assert.Equal(3, s.Submitted);
        Assert.Equal(2, s.Completed);
        Assert.Equal(1, s.Rejected);
        TestKit.AssertConserved(s);
        Assert.Equal(0, s.RateLimitWaitingWorkers);
        Assert.Equal(2, s.PermitsAcquired);
    }

    /// <summary>A limiter that holds the first request of one thread until the test releases it, then asks the inner limiter.</summary>
    private sealed class CallerGatedLimiter(ManualRateLimiter inner) : RateLimiter
    {
        private int _gated;

        public Thread? GatedThread { get; set; }

        public ManualResetEventSlim CallerAsking { get; } = new();

        public ManualResetEventSlim ReleaseCaller { get; } = new();

        public override TimeSpan? IdleDuration => null;

        public override RateLimiterStatistics? GetStatistics() => inner.GetStatistics();

        protected override RateLimitLease AttemptAcquireCore(int permitCount)
        {
            if (Thread.CurrentThread == GatedThread && Interlocked.Exchange(ref _gated, 1) == 0)
            {
                CallerAsking.Set();
                ReleaseCaller.WaitOrFail("the test to release the submitting thread");
            }

            return inner.AttemptAcquire(permitCount);
        }

        protected override ValueTask<RateLimitLease> AcquireAsyncCore(int permitCount, CancellationToken cancellationToken) =>
            throw new NotSupportedException("The executor must never wait for a permit asynchronously.");

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                CallerAsking.Dispose();
                ReleaseCaller.Dispose();
                inner.Dispose();
            }

            base.Dispose(disposing);
        }
    }
}
