namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// One node's view of its queue's cluster limits (the <c>queue_settings</c> row: <c>max_running</c>,
/// <c>max_running_per_key</c>, <c>starts_per_second</c> with <c>start_burst</c>): which claim the node runs, and what its
/// last claim held back. Written by the claim loop only; read by metrics, the health check and the node's heartbeat.
/// </summary>
/// <remarks>
/// <para>
/// <b>The rules</b>, enforced by the claim statement (<see cref="StorageSql.ClaimLimited"/>), never by the node:
/// a claim takes at most <c>max_running - (rows in state running)</c> items, at most <c>floor(tokens)</c> of the
/// bucket refilled at <c>starts_per_second</c> up to <c>start_burst</c>, and an item <c>c</c> of key <c>k</c> only
/// while (items of <c>k</c> older than <c>c</c> in states ready, running, scheduled) + (items of <c>k</c> running and
/// newer than <c>c</c>) &lt; <c>max_running_per_key</c>; of a key's claimable items, older ones are taken first.
/// </para>
/// <para>
/// <b>Why they hold across nodes.</b> The claim transaction first locks the settings row (<see cref="StorageSql.LockSettings"/>),
/// then claims in a second statement, whose snapshot is taken after the lock: so the claims of a limited queue take
/// turns, and each sees every earlier claim committed. Rows leave state running only by their outcome, or when a
/// reaper returns an expired lease, so the running count a claim reads can only be too high, never too low: the
/// global limit holds, and a dead node's share comes back once its leases expire and are reaped, no sooner. For a key,
/// every item taken by one statement counts the older ones it takes with it (they are unfinished), so the running items
/// of the key after the claim are at most the count that admitted its newest item, plus one: at most M. The bucket's
/// clock is the claim statement's start, which grows from claim to claim; the bucket never holds more than the burst
/// B, so over any window of length L the claims take at most B + R·L tokens (B + R in any one second).
/// </para>
/// <para>
/// While a limit binds (it held items back at the node's last claim), or the queue has a rate limit, the node claims
/// only for its idle workers (held items at most its worker count), so a claimed item starts at once and a running row
/// is an item really running: no permit is spent on an item waiting in a node's local queue. While no limit binds, the
/// node claims ahead as an unlimited queue does (up to <c>ClaimsPerWorker</c> per worker): those items count as running
/// too, so the limits hold all the same, and the claims are as few as without limits. A queue without limits keeps the
/// single-statement claim; that statement claims nothing once the queue has a limit and says so, and the limited claim
/// says when the limits are gone: each claim learns of a change committed before it started.
/// </para>
/// </remarks>
internal sealed class ClusterPermits(TimeProvider time)
{
    private readonly Lock _sync = new();
    private readonly Queue<(long Timestamp, int Count)> _starts = new();
    private volatile bool _limited;
    private volatile bool _mayClaimAhead;
    private long _waiting;
    private double _oldestWaitSeconds;
    private long _measuredAt;

    /// <summary>Gets a value indicating whether the queue had cluster limits at this node's last claim.</summary>
    public bool IsLimited => _limited;

    /// <summary>
    /// Gets a value indicating whether the node may claim ahead of its idle workers (as an unlimited queue does) under
    /// the limits: the queue has no rate limit, and no limit held anything back at the last claim. Items claimed ahead
    /// count as running, so the limits hold all the same; once one binds, the node claims for idle workers only.
    /// </summary>
    public bool MayClaimAhead => _mayClaimAhead;

    /// <summary>Gets the ready items this node had idle workers for that its last claim left to wait for a cluster permit.</summary>
    public long Waiting => Interlocked.Read(ref _waiting);

    /// <summary>Gets how long the oldest of <see cref="Waiting"/> has waited since it became due; zero when none waits.</summary>
    public TimeSpan OldestWait
    {
        get
        {
            lock (_sync)
            {
                return _waiting == 0 ? TimeSpan.Zero : TimeSpan.FromSeconds(_oldestWaitSeconds) + time.GetElapsedTime(_measuredAt);
            }
        }
    }

    /// <summary>Gets the items this node claimed (and so started, on idle workers) during the last second.</summary>
    public double StartsLastSecond
    {
        get
        {
            lock (_sync)
            {
                Prune();
                var sum = 0;
                foreach (var (_, count) in _starts)
                {
                    sum += count;
                }

                return sum;
            }
        }
    }

    /// <summary>The queue has cluster limits now (<see langword="true"/>) or not; returns whether that changed.</summary>
    public bool SetLimited(bool limited)
    {
        var changed = _limited != limited;
        _limited = limited;
        if (!limited)
        {
            Held(0, 0);
        }

        return changed;
    }

    /// <summary>A claim took <paramref name="claimed"/> items and left <paramref name="waiting"/> waiting for a permit, the oldest for <paramref name="oldestWaitSeconds"/>.</summary>
    public void Claimed(int claimed, long waiting, double oldestWaitSeconds, bool mayClaimAhead = false)
    {
        _mayClaimAhead = mayClaimAhead;
        lock (_sync)
        {
            if (claimed > 0)
            {
                _starts.Enqueue((time.GetTimestamp(), claimed));
                Prune();
            }
        }

        Held(waiting, oldestWaitSeconds);
    }

    /// <summary>The node had no idle worker, so nothing of its waits for a cluster permit.</summary>
    public void NothingRequested() => Held(0, 0);

    private void Held(long waiting, double oldestWaitSeconds)
    {
        lock (_sync)
        {
            _oldestWaitSeconds = oldestWaitSeconds;
            _measuredAt = time.GetTimestamp();
            Interlocked.Exchange(ref _waiting, waiting);
        }
    }

    private void Prune()
    {
        while (_starts.TryPeek(out var start) && time.GetElapsedTime(start.Timestamp) > TimeSpan.FromSeconds(1))
        {
            _starts.Dequeue();
        }
    }
}
