using System.Threading.RateLimiting;

namespace BoundedWork.Benchmarks.Contenders;

/// <summary>
/// "The limiter": ThreadPool work gated by <see cref="ConcurrencyLimiter"/> (PermitLimit = workers, QueueLimit =
/// capacity), the bulkhead that Polly's concurrency limiter strategy wraps (Polly.RateLimiting is not available on
/// this machine's package source, so the benchmarks use the limiter directly).
/// </summary>
/// <remarks>
/// <para>
/// Submitting takes a permit: if one is free, the item goes straight to the ThreadPool holding it; otherwise the
/// request waits in the limiter's queue and the item is queued to the ThreadPool when the permit is granted. The
/// item releases its permit when it has run. So at most <c>workers</c> items run at once and at most
/// <c>capacity</c> wait, as with a bounded executor.
/// </para>
/// <para>
/// When the limiter's queue is full it rejects at once (it has no "wait for room"); a producer then backs off
/// (spin, then yield) and retries, which is the backpressure a limiter user has to build by hand.
/// </para>
/// </remarks>
public sealed class LimiterGate : IDisposable
{
    private readonly ConcurrencyLimiter _limiter;
    private readonly Action _work;
    private readonly Action<RateLimitLease> _runAndRelease;

    public LimiterGate(int permits, int queueLimit, Action work)
    {
        _limiter = new ConcurrencyLimiter(new ConcurrencyLimiterOptions
        {
            PermitLimit = permits,
            QueueLimit = queueLimit,
            QueueProcessingOrder = QueueProcessingOrder.OldestFirst,
        });
        _work = work;
        _runAndRelease = RunAndRelease;
    }

    /// <summary>Gets the number of requests waiting in the limiter's queue (for hang reports).</summary>
    public string Describe()
    {
        var statistics = _limiter.GetStatistics();
        return $"Limiter: available permits {statistics?.CurrentAvailablePermits}, queued {statistics?.CurrentQueuedCount}, failed leases {statistics?.TotalFailedLeases}.";
    }

    /// <summary>Submits one item; blocks (spinning, then yielding) only while the limiter's queue is full.</summary>
    public void Submit()
    {
        var backOff = default(SpinWait);
        while (true)
        {
            var lease = _limiter.AttemptAcquire();
            if (lease.IsAcquired)
            {
                ThreadPool.UnsafeQueueUserWorkItem(_runAndRelease, lease, preferLocal: false);
                return;
            }

            var pending = _limiter.AcquireAsync();
            if (!pending.IsCompleted)
            {
                // Queued in the limiter: run the item on the ThreadPool once the permit is granted.
                pending.AsTask().ContinueWith(
                    static (granted, state) => ((LimiterGate)state!).OnGranted(granted),
                    this,
                    CancellationToken.None,
                    TaskContinuationOptions.ExecuteSynchronously,
                    TaskScheduler.Default);
                return;
            }

            lease = pending.Result;
            if (lease.IsAcquired)
            {
                ThreadPool.UnsafeQueueUserWorkItem(_runAndRelease, lease, preferLocal: false);
                return;
            }

            // The limiter's queue is full: it rejected the request. Back off and retry.
            lease.Dispose();
            backOff.SpinOnce(sleep1Threshold: -1);
        }
    }

    public void Dispose() => _limiter.Dispose();

    private void OnGranted(Task<RateLimitLease> granted)
    {
        // Only queue here (never run the item inline): the grant happens inside another item's Release.
        ThreadPool.UnsafeQueueUserWorkItem(_runAndRelease, granted.Result, preferLocal: false);
    }

    private void RunAndRelease(RateLimitLease lease)
    {
        try
        {
            _work();
        }
        finally
        {
            lease.Dispose();
        }
    }
}
