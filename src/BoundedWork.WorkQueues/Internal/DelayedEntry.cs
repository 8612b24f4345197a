namespace BoundedWork.Hosting.Internal;

/// <summary>Enqueues a delayed item; implemented by the in-memory queue and by durable storages.</summary>
internal interface IDelayedEnqueue<T>
{
    /// <summary>Enqueues <paramref name="item"/> to run after <paramref name="delay"/>, or at <paramref name="runAt"/> (exactly one is set, validated).</summary>
    ValueTask EnqueueDelayedAsync(T item, TimeSpan? delay, DateTimeOffset? runAt, CancellationToken cancellationToken);
}

/// <summary>
/// An in-memory item waiting for its time on the <see cref="RetryClock"/> (no worker, no executor slot). It ends once:
/// when its timer fires (the queue admits it then) or when the queue stops first (a dead letter). Both may race; the
/// first to claim <see cref="_done"/> decides, the other does nothing.
/// </summary>
internal sealed class DelayedEntry<T>
{
    private readonly WorkQueue<T> _queue;
    private readonly WorkQueueEntry<T> _entry;
    private ITimer? _timer;
    private CancellationTokenRegistration _stopping;
    private int _done;

    private DelayedEntry(WorkQueue<T> queue, WorkQueueEntry<T> entry)
    {
        _queue = queue;
        _entry = entry;
    }

    /// <summary>Holds <paramref name="entry"/> until <paramref name="wait"/> has passed on <paramref name="clock"/>, or <paramref name="stopped"/> fires.</summary>
    public static void Start(WorkQueue<T> queue, WorkQueueEntry<T> entry, TimeProvider clock, TimeSpan wait, CancellationToken stopped)
    {
        var delayed = new DelayedEntry<T>(queue, entry);
        Volatile.Write(ref delayed._timer, clock.CreateTimer(static state => ((DelayedEntry<T>)state!).Due(), delayed, wait, Timeout.InfiniteTimeSpan));

        // Runs at once, on this thread, if the queue stopped meanwhile.
        delayed._stopping = stopped.Register(static state => ((DelayedEntry<T>)state!).Abandon(), delayed);
        if (Volatile.Read(ref delayed._done) != 0)
        {
            delayed._stopping.Dispose(); // it was due already: nothing left to stop
        }
    }

    /// <summary>On the clock's thread: the item's time has come.</summary>
    private void Due()
    {
        if (Interlocked.Exchange(ref _done, 1) != 0)
        {
            return;
        }

        Volatile.Read(ref _timer)?.Dispose();
        _stopping.Dispose();
        _queue.StartDelayed(_entry);
    }

    /// <summary>The queue stops before the item's time: it becomes a dead letter.</summary>
    private void Abandon()
    {
        if (Interlocked.Exchange(ref _done, 1) != 0)
        {
            return;
        }

        Volatile.Read(ref _timer)?.Dispose();
        _queue.AbandonDelayed(_entry);
    }
}
