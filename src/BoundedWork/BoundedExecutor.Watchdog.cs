using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    /// <summary>The shortest and longest pause between two looks of the watchdog.</summary>
    private static readonly TimeSpan MinWatchdogInterval = TimeSpan.FromMilliseconds(5);
    private static readonly TimeSpan MaxWatchdogInterval = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan MaxDeadlinePoll = TimeSpan.FromMilliseconds(50);

    private readonly AutoResetEvent _watchdogSignal = new(false);
    private readonly List<RunSnapshot> _watchdogScratch = [];
    private readonly List<string> _watchdogNames = [];
    private readonly Action<SlowItemArguments>? _onSlowItem;
    private long _slowItemThresholdTicks;
    private long _queueWaitThresholdTicks;
    private long _slowItemsReported;
    private long _longQueueWaitsReported;
    private long _watchdogPasses;

    /// <summary>Gets how long an item may run before it is reported as slow.</summary>
    public TimeSpan SlowItemThreshold => TimeSpan.FromTicks(Volatile.Read(ref _slowItemThresholdTicks));

    /// <summary>Gets how long an item may wait in the queue before it is reported.</summary>
    public TimeSpan QueueWaitThreshold => TimeSpan.FromTicks(Volatile.Read(ref _queueWaitThresholdTicks));

    /// <summary>Gets how many times the watchdog has looked at deadlines and workers; for tests that must know it looked.</summary>
    internal long WatchdogPasses => Interlocked.Read(ref _watchdogPasses);

    /// <summary>Lists the items running on worker threads now, with how long each has been running.</summary>
    /// <returns>One entry per busy worker; empty when every worker is idle.</returns>
    public IReadOnlyList<RunningWorkItem> GetRunningItems()
    {
        var now = _itemClock.Now();
        var running = new List<RunningWorkItem>();
        lock (LifecycleLock)
        {
            foreach (var worker in _workers)
            {
                if (worker.TryReadRun(out var run))
                {
                    running.Add(new RunningWorkItem
                    {
                        Item = run.Item.ToWorkItem(),
                        WorkerName = worker.Name,
                        Elapsed = _itemClock.Elapsed(run.StartedTimestamp, now),
                    });
                }
            }
        }

        return running;
    }

    private void StartWatchdog()
    {
        var thread = new Thread(static state => ((BoundedExecutor)state!).WatchdogMain())
        {
            IsBackground = true,
            Name = $"{Name}.watchdog",
        };
        thread.UnsafeStart(this);
    }

    /// <summary>
    /// The watchdog: a dedicated thread that looks at the workers a few times per threshold and reports each run
    /// that passed the slow-item threshold once, and keeps every deadline of the executor (shutdown deadlines and
    /// Wait-policy timeouts). It needs no ThreadPool thread, so it works while every worker and every pool thread is
    /// blocked.
    /// </summary>
    private void WatchdogMain()
    {
        try
        {
            while (!_completion.Task.IsCompleted || HasShutdownWaiters())
            {
                _watchdogSignal.WaitOne(NextWatchdogWait());
                ExpireShutdownDeadlines();
                RejectExpiredWaiters(_timeProvider.GetTimestamp());
                var threshold = SlowItemThreshold;
                if (threshold != Timeout.InfiniteTimeSpan && !_completion.Task.IsCompleted)
                {
                    ReportSlowRuns(threshold);
                }

                Interlocked.Increment(ref _watchdogPasses);
            }
        }
        catch (Exception ex)
        {
            // Only a defect in the executor can get here (callbacks are guarded); never take the process down.
            System.Diagnostics.Trace.TraceError($"BoundedWork executor '{Name}' watchdog stopped: {ex}");
        }
    }

    /// <summary>
    /// How long the watchdog may sleep: a quarter of the slow-item threshold, and no later than the next shutdown
    /// deadline or Wait-policy timeout.
    /// </summary>
    private TimeSpan NextWatchdogWait()
    {
        var threshold = SlowItemThreshold;
        var wait = threshold == Timeout.InfiniteTimeSpan
            ? Timeout.InfiniteTimeSpan
            : TimeSpan.FromTicks(Math.Clamp(threshold.Ticks / 4, MinWatchdogInterval.Ticks, MaxWatchdogInterval.Ticks));
        var deadline = _producers.EarliestDeadline();
        lock (LifecycleLock)
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

        // The deadline is on the executor's clock, which may not be the wall clock: look again at least every
        // MaxDeadlinePoll until it has passed.
        var remaining = _timeProvider.GetElapsedTime(_timeProvider.GetTimestamp(), deadline);
        var untilDeadline = TimeSpan.FromTicks(Math.Clamp(remaining.Ticks, TimeSpan.TicksPerMillisecond, MaxDeadlinePoll.Ticks));
        return wait == Timeout.InfiniteTimeSpan || untilDeadline < wait ? untilDeadline : wait;
    }

    private bool HasShutdownWaiters()
    {
        lock (LifecycleLock)
        {
            return _shutdownWaiters.Count > 0;
        }
    }

    /// <summary>At a shutdown deadline: hands the queued items back to each waiter whose deadline passed.</summary>
    private void ExpireShutdownDeadlines()
    {
        var now = _timeProvider.GetTimestamp();
        List<ShutdownWaiter>? expired = null;
        lock (LifecycleLock)
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
            var abandoned = AbandonQueuedItems();
            waiter.TrySetResult(new ShutdownResult(abandoned, _completion.Task.IsCompleted));
        }
    }

    private void ReportSlowRuns(TimeSpan threshold)
    {
        var now = _itemClock.Now();
        var slow = _watchdogScratch;
        slow.Clear();
        lock (LifecycleLock)
        {
            foreach (var worker in _workers)
            {
                if (worker.TryReadRun(out var run) && _itemClock.Elapsed(run.StartedTimestamp, now) > threshold && worker.TryMarkSlowReported(run.Number))
                {
                    slow.Add(run);
                    _watchdogNames.Add(worker.Name);
                }
            }
        }

        for (var i = 0; i < slow.Count; i++)
        {
            Interlocked.Increment(ref _slowItemsReported);
            MeasureSlowItem(SlowItemKind.Running);
            InvokeOnSlowItem(slow[i].Item, _watchdogNames[i], _itemClock.Elapsed(slow[i].StartedTimestamp, now), threshold, SlowItemKind.Running);
        }

        slow.Clear();
        _watchdogNames.Clear();
    }

    /// <summary>On the worker that took an item: reports it if it waited longer than the queue-wait threshold.</summary>
    private void CheckQueueWait(Worker worker, in QueuedItem item, long startedTimestamp)
    {
        var thresholdTicks = Volatile.Read(ref _queueWaitThresholdTicks);
        if (thresholdTicks < 0)
        {
            return; // off
        }

        var waited = _itemClock.Elapsed(item.EnqueuedTimestamp, startedTimestamp);
        if (waited.Ticks > thresholdTicks)
        {
            Interlocked.Increment(ref _longQueueWaitsReported);
            MeasureSlowItem(SlowItemKind.Queued);
            InvokeOnSlowItem(item, worker.Name, waited, TimeSpan.FromTicks(thresholdTicks), SlowItemKind.Queued);
        }
    }

    private void MeasureSlowItem(SlowItemKind kind)
    {
        try
        {
            _instruments.RecordSlowItem(kind);
        }
        catch (Exception)
        {
            CountCallbackFailure();
        }
    }

    private void InvokeOnSlowItem(in QueuedItem item, string workerName, TimeSpan elapsed, TimeSpan threshold, SlowItemKind kind)
    {
        InvokeGuarded(_onSlowItem, new SlowItemArguments(Name, item.ToWorkItem(), workerName, elapsed, threshold, kind));
    }

    /// <summary>Counts the workers running an item for longer than the slow-item threshold. Call under the lifecycle lock.</summary>
    private int CountSlowWorkersUnsynchronized(long now)
    {
        var threshold = SlowItemThreshold;
        if (threshold == Timeout.InfiniteTimeSpan)
        {
            return 0;
        }

        var slow = 0;
        foreach (var worker in _workers)
        {
            if (worker.TryReadRun(out var run) && _itemClock.Elapsed(run.StartedTimestamp, now) > threshold)
            {
                slow++;
            }
        }

        return slow;
    }
}
