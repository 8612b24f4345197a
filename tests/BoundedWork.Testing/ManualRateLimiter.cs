using System.Threading.RateLimiting;

namespace BoundedWork.Testing;

/// <summary>
/// A rate limiter that grants exactly the permits a test gives it with <see cref="Grant"/>, and records on which
/// threads permits were asked for: "never more starts than permits" becomes an exact count, with no clock involved.
/// A hand-written <see cref="RateLimiter"/> because the library's limiters replenish from their own clock.
/// </summary>
public sealed class ManualRateLimiter : RateLimiter
{
    private readonly object _sync = new();
    private long _available;
    private long _granted;
    private long _refused;
    private int _askedOnPool;

    /// <summary>Creates a limiter holding <paramref name="permits"/> permits.</summary>
    public ManualRateLimiter(long permits = 0) => _available = permits;

    /// <summary>Gets the number of permits handed out.</summary>
    public long Granted => Interlocked.Read(ref _granted);

    /// <summary>Gets the number of refused requests.</summary>
    public long Refused => Interlocked.Read(ref _refused);

    /// <summary>Gets how many times a permit was asked for on a ThreadPool thread.</summary>
    public int AskedOnPool => Volatile.Read(ref _askedOnPool);

    /// <summary>Gets how many times a lease was disposed.</summary>
    public long Returned => Interlocked.Read(ref _returned);

    private long _returned;

    /// <inheritdoc/>
    public override TimeSpan? IdleDuration => null;

    /// <summary>Adds <paramref name="permits"/> permits.</summary>
    public void Grant(long permits)
    {
        lock (_sync)
        {
            _available += permits;
        }
    }

    /// <inheritdoc/>
    public override RateLimiterStatistics? GetStatistics()
    {
        lock (_sync)
        {
            return new RateLimiterStatistics { CurrentAvailablePermits = _available, TotalSuccessfulLeases = _granted, TotalFailedLeases = _refused };
        }
    }

    /// <inheritdoc/>
    protected override RateLimitLease AttemptAcquireCore(int permitCount)
    {
        if (Thread.CurrentThread.IsThreadPoolThread)
        {
            Interlocked.Increment(ref _askedOnPool);
        }

        lock (_sync)
        {
            if (_available >= permitCount)
            {
                _available -= permitCount;
                _granted += permitCount;
                return new Lease(this, acquired: true);
            }

            _refused++;
            return new Lease(this, acquired: false);
        }
    }

    /// <inheritdoc/>
    protected override ValueTask<RateLimitLease> AcquireAsyncCore(int permitCount, CancellationToken cancellationToken) =>
        throw new NotSupportedException("The executor must never wait for a permit asynchronously.");

    private sealed class Lease(ManualRateLimiter owner, bool acquired) : RateLimitLease
    {
        private int _disposed;

        public override bool IsAcquired => acquired;

        public override IEnumerable<string> MetadataNames => [];

        public override bool TryGetMetadata(string metadataName, out object? metadata)
        {
            metadata = null;
            return false;
        }

        protected override void Dispose(bool disposing)
        {
            if (acquired && Interlocked.Exchange(ref _disposed, 1) == 0)
            {
                Interlocked.Increment(ref owner._returned);
            }

            base.Dispose(disposing);
        }
    }
}
