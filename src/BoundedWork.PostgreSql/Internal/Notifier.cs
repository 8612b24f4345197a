namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Wakes the consumers of one queue on every node after this node committed something they may claim (an enqueue in
/// the node's own transaction, a released claim, the end of an ordered item), coalescing: any number of
/// <see cref="Signal"/> calls while a notification is being sent make exactly one more, so the node sends at most one
/// notification per round trip to the database, however many enqueues it commits.
/// </summary>
/// <remarks>
/// <para>
/// Why not notify inside the enqueuing transaction: PostgreSQL makes every transaction that has sent a notification
/// take one cluster-wide lock at commit and hold it until the commit is durable (so notifications are delivered in
/// commit order). Committers that notify are therefore serialized, each waiting for the previous one's WAL flush,
/// instead of sharing flushes (group commit); and every notification of a distinct transaction is queued and delivered
/// separately. Here the enqueuing transactions take no such lock; this thread's own statements do, one at a time.
/// </para>
/// <para>
/// No wake-up is lost: a signal that arrives while a notification is in flight is kept (an auto-reset event), and the
/// notification sent for it starts after the signal, so after the commit that caused it. What it costs: a consumer
/// learns of a commit one round trip later than from a notification sent by the commit itself, two round trips when a
/// notification was already in flight. A signal that cannot be sent (the database unreachable) is retried with the
/// node's backoff; meanwhile the consumers' polling (<c>PollInterval</c>) finds the items. A node that dies between a
/// commit and its notification leaves those items to the polling too.
/// </para>
/// <para>Runs on a dedicated thread with synchronous I/O, so it goes on while the ThreadPool is starved.</para>
/// </remarks>
internal sealed class Notifier(Func<bool> trySend, TimeSpan maxDelay) : IDisposable
{
    private readonly AutoResetEvent _pending = new(false);
    private long _sent;

    /// <summary>Gets how many notifications this notifier has sent.</summary>
    public long Sent => Interlocked.Read(ref _sent);

    /// <summary>Asks for one notification after this call; never blocks and needs no ThreadPool thread.</summary>
    public void Signal() => _pending.Set();

    /// <summary>
    /// Sends a notification for each batch of signals until <paramref name="stop"/> fires; then one last one if a
    /// signal is pending. A send that fails is tried again, after 100 ms doubling up to the maximum delay.
    /// </summary>
    public void Run(CancellationToken stop)
    {
        var delay = TimeSpan.FromMilliseconds(100);
        WaitHandle[] handles = [_pending, stop.WaitHandle];
        while (true)
        {
            if (WaitHandle.WaitAny(handles) != 0)
            {
                // Stopping: what was committed before the stop still wakes the consumers (once, best effort).
                if (_pending.WaitOne(0))
                {
                    Send();
                }

                return;
            }

            while (!Send())
            {
                if (stop.WaitHandle.WaitOne(delay))
                {
                    return;
                }

                delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, maxDelay.Ticks));
            }

            delay = TimeSpan.FromMilliseconds(100);
        }
    }

    public void Dispose() => _pending.Dispose();

    private bool Send()
    {
        if (!trySend())
        {
            return false;
        }

        Interlocked.Increment(ref _sent);
        return true;
    }
}
