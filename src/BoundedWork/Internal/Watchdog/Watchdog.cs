namespace BoundedWork.Internal;

/// <summary>
/// The executor's watchdog: a dedicated thread that keeps every deadline of the executor (shutdown deadlines,
/// Wait-policy timeouts and a pause's end) and reports each run that passes the slow-item threshold; and the queue-wait alarm, checked by
/// the worker that takes an item.
/// </summary>
/// <remarks>
/// <para>
/// It needs no ThreadPool thread and no timer: it sleeps on its own event for a quarter of the slow-item threshold, or
/// until the next deadline (looking again at least every 50 ms then, since deadlines are on the executor's clock, which
/// may not be the wall clock), and whoever adds a deadline or changes the threshold wakes it. So deadlines hold and
/// slow items are reported while every worker and every pool thread is blocked. It exits once the executor has
/// completed and no shutdown caller waits.
/// </para>
/// <para>
/// Each slow run is reported once (<see cref="Worker.TryMarkSlowReported"/>, written by this thread only). A shutdown
/// caller with a deadline is completed by whichever comes first: this thread at the deadline (with the items abandoned
/// then), or the last worker to exit (<see cref="ReleaseShutdownWaiters"/>). A caller is added only while the executor
/// has not completed, checked under <see cref="_sync"/>; completion is set before the waiters are taken under the same
/// lock, so none is left behind. Tests: <c>SlowItemTests</c>, <c>ShutdownDeadlineTests</c>, <c>HugeDeadlineTests</c>,
/// <c>WaitPolicyTests</c>.
/// </para>
/// </remarks>
[System.Diagnostics.CodeAnalysis.SuppressMessage(
    "Design",
    "CA1001:Types that own disposable fields should be disposable",
    Justification = "The signal lives as long as the executor: it may be set after the watchdog thread has exited (a late deadline or settings change), so it is never disposed explicitly and is released with the executor.")]
internal sealed class Watchdog(
    BoundedExecutor owner,
    WorkerPool pool,
    WaitingProducers producers,
    ExecutorCallbacks callbacks,
    TimeProvider timeProvider,
    ItemClock itemClock,
    Task completion)
{
    /// <summary>The shortest and longest pause between two looks.</summary>
    private static readonly TimeSpan MinInterval = TimeSpan.FromMilliseconds(5);
    private static readonly TimeSpan MaxInterval = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan MaxDeadlinePoll = TimeSpan.FromMilliseconds(50);

    private readonly AutoResetEvent _signal = new(false);
    private readonly object _sync = new();
    private readonly List<ShutdownWaiter> _shutdownWaiters = [];
    private readonly List<(Worker Worker, RunSnapshot Run)> _runs = [];
    private long _slowItemsReported;
    private long _longQueueWaitsReported;
    private long _passes;

    /// <summary>Gets how many times the watchdog has looked at deadlines and workers.</summary>
    public long Passes => Interlocked.Read(ref _passes);

    public long SlowItemsReported => Interlocked.Read(ref _slowItemsReported);

    public long LongQueueWaitsReported => Interlocked.Read(ref _longQueueWaitsReported);

    public void Start(string executorName)
    {
        var thread = new Thread(static state => ((Watchdog)state!).Main())
        {
            IsBackground = true,
            Name = $"{executorName}.watchdog",
        };
        thread.UnsafeStart(this);
    }

    /// <summary>Makes the watchdog look now: a deadline was added, the threshold changed, or the executor completed.</summary>
    public void Signal() => _signal.Set();

    /// <summary>Adds a shutdown caller whose deadline the watchdog keeps; <see langword="false"/> if the executor has already completed.</summary>
    public bool TryAddShutdownWaiter(ShutdownWaiter waiter)
    {
        lock (_sync)
        {
            if (completion.IsCompleted)
            {
                return false;
            }

            _shutdownWaiters.Add(waiter);
        }

        Signal();
        return true;
    }

    /// <summary>Completes every shutdown caller: the executor has completed (every worker exited). Call after completing it.</summary>
    public void ReleaseShutdownWaiters()
    {
        List<ShutdownWaiter> waiters;
        lock (_sync)
        {
            waiters = [.. _shutdownWaiters];
            _shutdownWaiters.Clear();
        }

        foreach (var waiter in waiters)
        {
            waiter.TrySetResult(new ShutdownResult([], workersExited: true));
        }

        Signal();
    }

    /// <summary>On the worker that took an item: reports it if it waited longer than <paramref name="threshold"/>.</summary>
    public void CheckQueueWait(Worker worker, in QueuedItem item, long startedTimestamp, TimeSpan threshold)
    {
        var waited = itemClock.Elapsed(item.EnqueuedTimestamp, startedTimestamp);
        if (waited > threshold)
        {
            Interlocked.Increment(ref _longQueueWaitsReported);
            callbacks.ItemSlow(item, worker.Name, waited, threshold, SlowItemKind.Queued);
        }
    }

    private void Main()
    {
        try
        {
            while (!completion.IsCompleted || HasShutdownWaiters())
            {
                _signal.WaitOne(NextWait());
                ExpireShutdownDeadlines();
                owner.ResumeIfPauseEnded();
                producers.RejectExpired(timeProvider.GetTimestamp());
                owner.Permits.Replenish();
                var threshold = owner.Settings.SlowItemThreshold;
                if (threshold != Timeout.InfiniteTimeSpan && !completion.IsCompleted)
                {
                    ReportSlowRuns(threshold);
                }

                if (!completion.IsCompleted)
                {
                    owner.Adaptive.Tick();
                }

                Interlocked.Increment(ref _passes);
            }
        }
        catch (Exception ex)
        {
            // Only a defect in the executor can get here (callbacks are guarded); never take the process down.
            System.Diagnostics.Trace.TraceError($"BoundedWork executor '{owner.Name}' watchdog stopped: {ex}");
        }
    }

    /// <summary>A quarter of the slow-item threshold, and no later than the next shutdown deadline or Wait-policy timeout.</summary>
    private TimeSpan NextWait() => owner.Permits.AdjustWait(NextDeadlineWait());

    private TimeSpan NextDeadlineWait()
    {
        var threshold = owner.Settings.SlowItemThreshold;
        var wait = threshold == Timeout.InfiniteTimeSpan
            ? Timeout.InfiniteTimeSpan
            : TimeSpan.FromTicks(Math.Clamp(threshold.Ticks / 4, MinInterval.Ticks, MaxInterval.Ticks));
        if (owner.Settings.AdaptiveMode != AdaptiveMode.Off && (wait == Timeout.InfiniteTimeSpan || owner.Adaptive.LookInterval < wait))
        {
            wait = owner.Adaptive.LookInterval;
        }

        if (owner.PauseEnds is { } pauseEnds)
        {
            // A pause's end is on the executor's clock, which may not be the wall clock: look again at least every 50 ms.
            var untilResume = TimeSpan.FromTicks(Math.Clamp((pauseEnds - timeProvider.GetUtcNow()).Ticks, TimeSpan.TicksPerMillisecond, MaxDeadlinePoll.Ticks));
            wait = wait == Timeout.InfiniteTimeSpan || untilResume < wait ? untilResume : wait;
        }

        var deadline = producers.EarliestDeadline();
        lock (_sync)
        {
            foreach (var waiter in _shutdownWaiters)
            {
                deadline = Math.Min(deadline, waiter.Deadline);
            }
        }

        if (deadline == Deadline.Never)
        {
            return wait;
        }

        var remaining = timeProvider.GetElapsedTime(timeProvider.GetTimestamp(), deadline);
        var untilDeadline = TimeSpan.FromTicks(Math.Clamp(remaining.Ticks, TimeSpan.TicksPerMillisecond, MaxDeadlinePoll.Ticks));
        return wait == Timeout.InfiniteTimeSpan || untilDeadline < wait ? untilDeadline : wait;
    }

    private bool HasShutdownWaiters()
    {
        lock (_sync)
        {
            return _shutdownWaiters.Count > 0;
        }
    }

    /// <summary>At a shutdown deadline: abandons the queued items and hands them to each caller whose deadline passed.</summary>
    private void ExpireShutdownDeadlines()
    {
        var now = timeProvider.GetTimestamp();
        List<ShutdownWaiter>? expired = null;
        lock (_sync)
        {
            for (var i = _shutdownWaiters.Count - 1; i >= 0; i--)
            {
                if (_shutdownWaiters[i].Deadline <= now)
                {
                    (expired ??= []).Add(_shutdownWaiters[i]);
                    _shutdownWaiters.RemoveAt(i);
                }
            }
        }

        if (expired is null)
        {
            return;
        }

        foreach (var waiter in expired)
        {
            var abandoned = owner.AbandonQueuedItems();
            waiter.TrySetResult(new ShutdownResult(abandoned, completion.IsCompleted));
        }
    }

    private void ReportSlowRuns(TimeSpan threshold)
    {
        var now = itemClock.Now();
        _runs.Clear();
        pool.ReadRuns(_runs);
        foreach (var (worker, run) in _runs)
        {
            var elapsed = itemClock.Elapsed(run.StartedTimestamp, now);
            if (elapsed > threshold && worker.TryMarkSlowReported(run.Number))
            {
                Interlocked.Increment(ref _slowItemsReported);
                callbacks.ItemSlow(run.Item, worker.Name, elapsed, threshold, SlowItemKind.Running);
            }
        }

        _runs.Clear();
    }
}
