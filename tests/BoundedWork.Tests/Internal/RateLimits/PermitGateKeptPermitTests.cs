using System.Threading.RateLimiting;
using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.RateLimits;

/// <summary>
/// A permit of the executor's own token bucket that found no item to start is kept for the next asker; it serves only
/// the bucket that granted it. Driven on the gate itself, on the test's thread, so every step is deterministic.
/// </summary>
public sealed class PermitGateKeptPermitTests
{
    private static readonly Func<int, bool> s_keepAsking = static _ => true;

    [Fact]
    public void KeptPermitOfOwnBucket_AfterReconfigurationToAUsersLimiter_IsNotUsed_TheUsersLimiterIsAsked()
    {
        var gate = new PermitGate(TimeProvider.System, static () => { });
        gate.Apply(Settings() with { PermitsPerSecond = 1, PermitBurst = 1 });
        RateLimitLease? first = null;
        Assert.True(gate.TryAcquire(ref first, s_keepAsking, 0));
        gate.Unused(first); // the worker found no item: the bucket's permit is kept

        using var users = new CountingLimiter();
        gate.Apply(Settings() with { RateLimiter = users });
        RateLimitLease? second = null;
        Assert.True(gate.TryAcquire(ref second, s_keepAsking, 0));

        Assert.Equal(1, users.Granted); // before: 0, the item started on the old bucket's kept permit
        gate.DisposeOwned();
    }

    [Fact]
    public void KeptPermitOfOwnBucket_AfterReconfigurationToNoLimitAndBack_IsGivenUp_TheNewBucketStartsWithItsBurstOnly()
    {
        var gate = new PermitGate(TimeProvider.System, static () => { });
        gate.Apply(Settings() with { PermitsPerSecond = 1, PermitBurst = 1 });
        RateLimitLease? first = null;
        Assert.True(gate.TryAcquire(ref first, s_keepAsking, 0));
        gate.Unused(first); // kept

        gate.Apply(Settings() with { PermitsPerSecond = 0 })?.Dispose(); // no limit: the kept permit is given up
        gate.Apply(Settings() with { PermitsPerSecond = 1, PermitBurst = 1 });

        RateLimitLease? a = null;
        Assert.True(gate.TryAcquire(ref a, s_keepAsking, 0)); // the new bucket's burst
        RateLimitLease? c = null;
        Assert.False(TryOnce(gate, ref c)); // before: granted, from the kept permit of the replaced bucket
        gate.DisposeOwned();
    }

    [Fact]
    public void KeptPermit_WhenTheRateChanges_CountsAmongThePermitsTheNewBucketTakesOver_NeverMoreThanItsBurst()
    {
        var gate = new PermitGate(TimeProvider.System, static () => { });
        gate.Apply(Settings() with { PermitsPerSecond = 1, PermitBurst = 1 });
        RateLimitLease? first = null;
        Assert.True(gate.TryAcquire(ref first, s_keepAsking, 0));
        gate.Unused(first); // kept; the bucket itself is empty

        gate.Apply(Settings() with { PermitsPerSecond = 2, PermitBurst = 1 })?.Dispose();

        RateLimitLease? a = null;
        Assert.True(TryOnce(gate, ref a)); // the kept permit, carried over into the new bucket
        RateLimitLease? b = null;
        Assert.False(TryOnce(gate, ref b));
        gate.DisposeOwned();
    }

    [Fact]
    public void PermitOfAReplacedBucket_HandedBackAfterTheReplacement_IsNotKept()
    {
        var gate = new PermitGate(TimeProvider.System, static () => { });
        gate.Apply(Settings() with { PermitsPerSecond = 1, PermitBurst = 1 });
        using var granted = new ManualResetEventSlim();
        using var handBack = new ManualResetEventSlim();

        // A worker's thread: a permit of the first bucket, then (after the limit changed) no item to start.
        var workerGranted = false;
        var worker = new Thread(() =>
        {
            RateLimitLease? first = null;
            workerGranted = gate.TryAcquire(ref first, s_keepAsking, 0);
            granted.Set();
            handBack.Wait(TestKit.Safety);
            gate.Unused(first);
        });
        worker.Start();
        granted.WaitOrFail("the worker's permit");
        Assert.True(workerGranted);

        using var users = new CountingLimiter();
        gate.Apply(Settings() with { RateLimiter = users })?.Dispose();
        gate.Apply(Settings() with { PermitsPerSecond = 1, PermitBurst = 1 });
        RateLimitLease? a = null;
        Assert.True(TryOnce(gate, ref a)); // the new bucket's burst
        handBack.Set();
        Assert.True(worker.Join(TestKit.Safety));

        RateLimitLease? b = null;
        Assert.False(TryOnce(gate, ref b)); // before: granted, from the old bucket's permit kept for the new one
        gate.DisposeOwned();
    }

    /// <summary>The settings of a one-worker executor, the test's limit to be set with <c>with</c>.</summary>
    private static BoundedExecutorSettings Settings() => new()
    {
        WorkerCount = 1,
        QueueCapacity = 10,
        RejectionPolicy = RejectionPolicy.Abort,
        WaitTimeout = Timeout.InfiniteTimeSpan,
        SlowItemThreshold = Timeout.InfiniteTimeSpan,
        QueueWaitThreshold = Timeout.InfiniteTimeSpan,
    };

    /// <summary>One ask, no wait: the gate asks the limiter (and its kept permits) once and gives up if refused.</summary>
    private static bool TryOnce(PermitGate gate, ref RateLimitLease? lease)
    {
        var asked = 0;
        return gate.TryAcquire(ref lease, _ => asked++ == 0, 0);
    }

    /// <summary>A user's limiter that grants every permit and counts them.</summary>
    private sealed class CountingLimiter : RateLimiter
    {
        private int _granted;

        public int Granted => Volatile.Read(ref _granted);

        public override TimeSpan? IdleDuration => null;

        public override RateLimiterStatistics? GetStatistics() => null;

        protected override RateLimitLease AttemptAcquireCore(int permitCount)
        {
            Interlocked.Increment(ref _granted);
            return new Lease();
        }

        protected override ValueTask<RateLimitLease> AcquireAsyncCore(int permitCount, CancellationToken cancellationToken) =>
            ValueTask.FromResult(AttemptAcquireCore(permitCount));

        private sealed class Lease : RateLimitLease
        {
            public override bool IsAcquired => true;

            public override IEnumerable<string> MetadataNames => [];

            public override bool TryGetMetadata(string metadataName, out object? metadata)
            {
                metadata = null;
                return false;
            }
        }
    }
}
