using System.Diagnostics;
using System.Threading.RateLimiting;

namespace BoundedWork.Internal;

/// <summary>
/// The executor's rate limit: the <see cref="RateLimiter"/> in force, the permits its workers take from it before
/// they start an item, and the counters of the waits for them.
/// </summary>
/// <remarks>
/// <para>
/// <b>Before the claim.</b> A worker that sees work asks for a permit before it claims an item
/// (<see cref="TryAcquire"/>), so while it waits the item stays queued: visible in the queue length, evictable by
/// DiscardOldest, cancellable by its caller, and handed back at a shutdown deadline. A permit is held only while its
/// item runs or is about to start: a worker whose claimed item was cancelled by its caller hands the permit to the next
/// queued item it can claim at once; a worker that finds no item to start (<see cref="Unused"/>) gives a user's
/// limiter its permit back at once (that limiter may be shared with other executors, which an idle executor must not
/// starve) and keeps a permit of the executor's own token bucket for the next asker (nobody else draws on it, and a
/// token given back is wasted), waking the waiters either way. A kept permit serves only the bucket that granted it:
/// a reconfiguration that replaces the bucket gives the kept permits up (<see cref="Apply"/>). So every started item took exactly one permit, and no
/// more items start than the limiter granted. The lease is disposed when the item ends, which gives a
/// concurrency-style limiter its permit back; the kept ones are disposed when the executor completes.
/// </para>
/// <para>
/// <b>Own threads only.</b> A permit is asked for with <see cref="RateLimiter.AttemptAcquire"/>, which never queues
/// and never needs a continuation. A refused worker waits on this gate's monitor, on its own thread, until the
/// watchdog has replenished the limiter (<see cref="Replenish"/>), a lease came back, the limit changed, the worker
/// must retire, the queue was abandoned or the executor completed (<see cref="WakeWaiters"/>), or at most <see cref="PollInterval"/> passed
/// (a limiter the executor does not replenish itself). Lost wake-ups: a waiter reads the generation before it asks,
/// and every waking step bumps it under the monitor, so a wake between the refusal and the wait ends the wait at once.
/// </para>
/// <para>
/// <b>Replenishing.</b> A limiter built from <see cref="BoundedExecutorSettings.PermitsPerSecond"/> is a token bucket
/// with <c>AutoReplenishment = false</c>; the watchdog thread calls <see cref="ReplenishingRateLimiter.TryReplenish"/>
/// on it (and on a user's replenishing limiter that does not replenish itself) while workers wait, so no timer
/// callback, and no ThreadPool thread, is needed. The token bucket accrues permits in proportion to the time elapsed,
/// so calling it more often never grants more.
/// </para>
/// <para>
/// <b>Submitters.</b> A CallerRuns submitter waits here too, until its queue is abandoned or the executor completes:
/// once every worker has exited nobody replenishes or serves the limit (a limiter this gate built is disposed), so
/// its item is rejected as shut down rather than left waiting for good, whether the drain or the deadline came first.
/// </para>
/// <para>Tests: <c>RateLimitTests</c>, <c>RateLimitStarvationTests</c>, <c>RateLimitCallerShutdownTests</c>, <c>RateLimitConservationProperties</c>.</para>
/// </remarks>
internal sealed class PermitGate(TimeProvider timeProvider, Action signalWatchdog)
{
    /// <summary>The longest a refused waiter waits before it asks again, and the watchdog's pause while some wait.</summary>
    public static readonly TimeSpan PollInterval = TimeSpan.FromMilliseconds(50);

    private static readonly TimeSpan MinReplenishInterval = TimeSpan.FromMilliseconds(1);

    /// <summary>
    /// The limit that granted the permit the current thread asked for last (a worker asks and, finding no item, hands
    /// the permit back on the same thread): <see cref="Unused"/> keeps a permit only for the limit that granted it.
    /// </summary>
    [ThreadStatic]
    private static Limit? t_grantedBy;

    private readonly object _sync = new();
    private readonly Stack<(RateLimitLease Lease, Limit GrantedBy)> _kept = new();
    private volatile Limit? _limit;
    private long _generation;
    private int _waiting;
    private int _keptCount;
    private long _acquired;
    private long _refusals;
    private long _waitTicks;

    /// <summary>Gets the limiter in force, or <see langword="null"/>: the one read of the no-limit path.</summary>
    public RateLimiter? Limiter => _limit?.Limiter;

    /// <summary>Gets the number of workers (or submitting threads under CallerRuns) waiting for a permit now.</summary>
    public int Waiting => Volatile.Read(ref _waiting);

    /// <summary>Gets the number of permits the limiter granted.</summary>
    public long Acquired => Interlocked.Read(ref _acquired);

    /// <summary>Gets the number of times a permit was refused at first and the asker had to wait.</summary>
    public long Refusals => Interlocked.Read(ref _refusals);

    /// <summary>Gets the total time spent waiting for permits, by every waiter, finished waits only.</summary>
    public TimeSpan WaitTime => TimeSpan.FromTicks(Interlocked.Read(ref _waitTicks));

    /// <summary>Set by the executor: told each finished wait, for the wait-duration histogram.</summary>
    public Action<TimeSpan>? WaitEnded { get; init; }

    /// <summary>
    /// Puts the limit of <paramref name="settings"/> in force (under the executor's lifecycle lock) and returns the
    /// limiter this gate built and no longer uses, for the caller to dispose after the lock; <see langword="null"/> when
    /// none. A new token bucket takes over the permits the old one had (at most its burst), so a change of rate never
    /// grants a fresh burst.
    /// </summary>
    /// <remarks>
    /// Permits kept from the executor's own token bucket belong to that bucket: when it is replaced they are given up
    /// (a new bucket counts them among the permits it takes over), so no item starts on a permit of a limit no longer
    /// in force, a user's limiter in particular.
    /// </remarks>
    public RateLimiter? Apply(BoundedExecutorSettings settings)
    {
        var previous = _limit;
        if (settings.RateLimiter is { } own)
        {
            if (previous?.Limiter == own)
            {
                return null;
            }

            _limit = new Limit(own, Owned: false, PermitsPerSecond: 0, Burst: 0);
            DropKept();
            return previous is { Owned: true } ? previous.Limiter : null;
        }

        if (settings.PermitsPerSecond == 0)
        {
            _limit = null;
            DropKept();
            return previous is { Owned: true } ? previous.Limiter : null;
        }

        if (previous is { Owned: true } && previous.PermitsPerSecond == settings.PermitsPerSecond && previous.Burst == settings.PermitBurst)
        {
            return null;
        }

        var carried = settings.PermitBurst;
        if (previous is { Owned: true })
        {
            ((ReplenishingRateLimiter)previous.Limiter).TryReplenish();
            var available = (previous.Limiter.GetStatistics()?.CurrentAvailablePermits ?? 0) + Volatile.Read(ref _keptCount);
            carried = (int)Math.Min(available, settings.PermitBurst);
        }

        var bucket = CreateBucket(settings.PermitsPerSecond, settings.PermitBurst);
        if (carried < settings.PermitBurst)
        {
            bucket.AttemptAcquire(settings.PermitBurst - carried).Dispose();
        }

        _limit = new Limit(bucket, Owned: true, settings.PermitsPerSecond, settings.PermitBurst);
        DropKept();
        return previous is { Owned: true } ? previous.Limiter : null;
    }

    /// <summary>Gives up the permits kept from a limit no longer in force (after <see cref="_limit"/> was replaced).</summary>
    private void DropKept()
    {
        if (Volatile.Read(ref _keptCount) == 0)
        {
            return;
        }

        lock (_sync)
        {
            while (_kept.TryPop(out var kept))
            {
                kept.Lease.Dispose();
            }

            _keptCount = 0;
            _generation++;
            Monitor.PulseAll(_sync);
        }
    }

    /// <summary>The token bucket a permits-per-second setting stands for: replenished by the watchdog, never queuing.</summary>
    public static TokenBucketRateLimiter CreateBucket(int permitsPerSecond, int burst) => new(new TokenBucketRateLimiterOptions
    {
        TokenLimit = burst,
        TokensPerPeriod = permitsPerSecond,
        ReplenishmentPeriod = TimeSpan.FromSeconds(1),
        AutoReplenishment = false,
        QueueLimit = 0,
    });

    /// <summary>
    /// Makes sure the caller holds a permit, asking the limiter and waiting on this thread while it refuses and
    /// <paramref name="keepWaiting"/> says so. Returns <see langword="true"/> when <paramref name="lease"/> holds a
    /// permit (or no limit is in force any more), <see langword="false"/> when the wait was given up.
    /// </summary>
    public bool TryAcquire<TState>(ref RateLimitLease? lease, Func<TState, bool> keepWaiting, TState state)
    {
        if (lease is not null)
        {
            return true;
        }

        if (!keepWaiting(state))
        {
            return false; // nothing to ask a permit for (a worker woken with the queue empty)
        }

        long started = 0;
        try
        {
            while (true)
            {
                var generation = Volatile.Read(ref _generation);
                var limit = _limit;
                if (limit is null)
                {
                    return true;
                }

                if (limit.Owned && TakeKept(limit) is { } kept)
                {
                    lease = kept;
                    t_grantedBy = limit;
                    return true;
                }

                var granted = Attempt(limit.Limiter);
                if (granted is not null)
                {
                    lease = granted;
                    t_grantedBy = limit;
                    Interlocked.Increment(ref _acquired);
                    return true;
                }

                if (started == 0)
                {
                    started = timeProvider.GetTimestamp();
                    Interlocked.Increment(ref _refusals);
                    Interlocked.Increment(ref _waiting);
                    signalWatchdog(); // the watchdog now replenishes at the limiter's pace
                }

                if (!keepWaiting(state))
                {
                    return false;
                }

                lock (_sync)
                {
                    if (_generation == generation)
                    {
                        Monitor.Wait(_sync, PollInterval);
                    }
                }
            }
        }
        finally
        {
            if (started != 0)
            {
                // Counted before the waiter leaves: whoever sees it gone sees its wait time too.
                var waited = timeProvider.GetElapsedTime(started);
                Interlocked.Add(ref _waitTicks, waited.Ticks);
                WaitEnded?.Invoke(waited);
                Interlocked.Decrement(ref _waiting);
            }
        }
    }

    /// <summary>
    /// Disposes of a permit whose worker found no item to start (another worker took it, or its caller cancelled it),
    /// and wakes the waiters. A permit of the executor's own token bucket is kept for the next asker: nobody else draws
    /// on that bucket, so keeping it holds nothing back, and disposing it would waste it. A permit of a user's limiter,
    /// which other executors may share, is given back at once (a concurrency limiter gets it back): an idle worker never
    /// holds one.
    /// </summary>
    public void Unused(RateLimitLease? lease)
    {
        if (lease is null)
        {
            return;
        }

        var grantedBy = t_grantedBy;
        t_grantedBy = null;
        if (grantedBy is { Owned: true } && Keep(lease, grantedBy))
        {
            return;
        }

        lease.Dispose();
        WakeWaiters();
    }

    /// <summary>
    /// Keeps a permit of the executor's own token bucket that found no item to start, for the next asker, and wakes the
    /// waiters; returns <see langword="false"/> (keeping nothing) when that bucket is no longer the limit in force.
    /// </summary>
    private bool Keep(RateLimitLease lease, Limit grantedBy)
    {
        lock (_sync)
        {
            // Checked under the monitor: Apply replaces the limit before DropKept takes it, so a permit is either
            // refused here or dropped there, never kept for a limit no longer in force.
            if (!ReferenceEquals(_limit, grantedBy))
            {
                return false;
            }

            _kept.Push((lease, grantedBy));
            _keptCount = _kept.Count;
            _generation++;
            Monitor.PulseAll(_sync);
            return true;
        }
    }

    /// <summary>Gives a permit back (a concurrency-style limiter's) after its item ran, and wakes a waiter if any.</summary>
    public void Release(RateLimitLease lease)
    {
        lease.Dispose();
        if (Volatile.Read(ref _waiting) != 0 && _limit is { Owned: false })
        {
            WakeWaiters();
        }
    }

    /// <summary>Wakes every waiter to ask again or give up: a replenishment, a limit change, a shrink, an abandon.</summary>
    public void WakeWaiters()
    {
        lock (_sync)
        {
            _generation++;
            Monitor.PulseAll(_sync);
        }
    }

    /// <summary>
    /// On the watchdog thread, each pass: replenishes the limiter in force if it is one the executor must replenish,
    /// and wakes the waiters.
    /// </summary>
    public void Replenish()
    {
        if (_limit is not { } limit || Volatile.Read(ref _waiting) == 0)
        {
            return;
        }

        if (limit.Limiter is ReplenishingRateLimiter { IsAutoReplenishing: false } replenishing)
        {
            try
            {
                replenishing.TryReplenish();
            }
            catch (ObjectDisposedException)
            {
                // Replaced by a reconfiguration meanwhile: the next pass replenishes the new one.
            }
            catch (Exception ex)
            {
                // A user's limiter that throws must not stop the watchdog.
                Trace.TraceError($"BoundedWork rate limiter threw on TryReplenish: {ex}");
            }
        }

        WakeWaiters();
    }

    /// <summary>
    /// The watchdog's pause, shortened while someone waits for a permit: the time one permit takes to accrue (at least
    /// 1 ms) for a limiter the executor replenishes, <see cref="PollInterval"/> otherwise.
    /// </summary>
    public TimeSpan AdjustWait(TimeSpan wait)
    {
        if (Volatile.Read(ref _waiting) == 0 || _limit is not { } limit)
        {
            return wait;
        }

        var pace = limit.Limiter switch
        {
            _ when limit.Owned => TimeSpan.FromTicks(Math.Max(TimeSpan.TicksPerSecond / limit.PermitsPerSecond, MinReplenishInterval.Ticks)),
            ReplenishingRateLimiter { IsAutoReplenishing: false } user when user.ReplenishmentPeriod > TimeSpan.Zero =>
                TimeSpan.FromTicks(Math.Clamp(user.ReplenishmentPeriod.Ticks, MinReplenishInterval.Ticks, PollInterval.Ticks)),
            _ => PollInterval,
        };
        return wait == Timeout.InfiniteTimeSpan || pace < wait ? pace : wait;
    }

    /// <summary>Disposes the permits kept unused and the limiter this gate built, once the executor has completed.</summary>
    public void DisposeOwned()
    {
        lock (_sync)
        {
            while (_kept.TryPop(out var kept))
            {
                kept.Lease.Dispose();
            }

            _keptCount = 0;
        }

        var limit = _limit;
        if (limit is { Owned: true })
        {
            limit.Limiter.Dispose();
        }
    }

    private RateLimitLease? TakeKept(Limit limit)
    {
        if (Volatile.Read(ref _keptCount) == 0)
        {
            return null;
        }

        lock (_sync)
        {
            // Only a permit of the limit in force: one kept for a limit replaced a moment ago waits for DropKept.
            if (_kept.TryPeek(out var kept) && ReferenceEquals(kept.GrantedBy, limit))
            {
                _kept.Pop();
                _keptCount = _kept.Count;
                return kept.Lease;
            }

            return null;
        }
    }

    private static RateLimitLease? Attempt(RateLimiter limiter)
    {
        RateLimitLease lease;
        try
        {
            lease = limiter.AttemptAcquire(1);
        }
        catch (ObjectDisposedException)
        {
            return null; // replaced by a reconfiguration: the next look reads the new limiter
        }
        catch (Exception ex)
        {
            // A user's limiter that throws is treated as refusing: the item waits, it is never run unlimited.
            Trace.TraceError($"BoundedWork rate limiter threw on AttemptAcquire: {ex}");
            return null;
        }

        if (lease.IsAcquired)
        {
            return lease;
        }

        lease.Dispose();
        return null;
    }

    /// <summary>One limit in force: the limiter, whether this gate built it (and so replenishes and disposes it), and the shape it was built from.</summary>
    private sealed record Limit(RateLimiter Limiter, bool Owned, int PermitsPerSecond, int Burst);
}
