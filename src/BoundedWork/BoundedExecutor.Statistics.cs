using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    /// <summary>
    /// Takes one consistent snapshot of the executor's state and counters: every item submitted so far is in exactly
    /// one of queued, running or an outcome, so <see cref="BoundedExecutorStatistics.Submitted"/> always equals their sum.
    /// </summary>
    /// <returns>The snapshot.</returns>
    public BoundedExecutorStatistics GetStatistics()
    {
        // Read order is what makes the snapshot consistent. An item moves through three stages, each entered by a
        // single increment of a counter that only grows: admitted, claimed, finished (one outcome counter). Reading
        // the finished counters first, then the claims, then the admissions puts an item that moves meanwhile in an
        // earlier stage than it has reached, never in two stages or in none.
        long workerCompleted, workerFailed, workerCancelled;
        int target, live, busy, peak, slowWorkers;
        var now = _itemClock.Now();
        lock (LifecycleLock)
        {
            workerCompleted = _retiredCompleted;
            workerFailed = _retiredFailed;
            workerCancelled = _retiredCancelled;
            busy = 0;
            foreach (var worker in _workers)
            {
                workerCompleted += worker.Completed;
                workerFailed += worker.Failed;
                workerCancelled += worker.Cancelled;
                busy += worker.Busy ? 1 : 0;
            }

            slowWorkers = CountSlowWorkersUnsynchronized(now);
            target = _targetWorkers;
            live = _liveWorkers;
            peak = _peakWorkers;
        }

        var evicted = Interlocked.Read(ref _evicted);
        var abandoned = Interlocked.Read(ref _abandoned);
        var cancelledAfterClaim = Interlocked.Read(ref _cancelledAfterClaim);
        var callerCompleted = Interlocked.Read(ref _callerCompleted);
        var callerFailed = Interlocked.Read(ref _callerFailed);
        var callerCancelled = Interlocked.Read(ref _callerCancelled);
        var callerStarted = Interlocked.Read(ref _callerStarted);
        var rejected = Interlocked.Read(ref _rejected);
        var droppedNew = Interlocked.Read(ref _droppedNew);
        var cancelledBeforeQueue = Interlocked.Read(ref _cancelledBeforeQueue);
        var claims = _queue.Claims;
        var admissions = _queue.Admissions;

        var claimOutcomes = workerCompleted + workerFailed + workerCancelled + evicted + abandoned + cancelledAfterClaim;
        var runningClaimed = claims - claimOutcomes;
        var runningOnCallers = callerStarted - (callerCompleted + callerFailed + callerCancelled);
        var queued = (int)(admissions - claims);
        var completed = workerCompleted + callerCompleted;
        var failed = workerFailed + callerFailed;
        var cancelled = workerCancelled + callerCancelled + cancelledBeforeQueue + cancelledAfterClaim;
        var discarded = droppedNew + evicted;
        var running = runningClaimed + runningOnCallers;
        var oldestAge = queued != 0 && _queue.TryReadOldestStamp(claims, out var oldestEnqueued)
            ? _itemClock.Elapsed(oldestEnqueued, now)
            : TimeSpan.Zero;

        return new BoundedExecutorStatistics
        {
            Name = Name,
            TargetWorkerCount = target,
            LiveWorkerCount = live,
            BusyWorkerCount = busy,
            PeakWorkerCount = peak,
            MaxWorkerCount = MaxWorkerCount,
            QueueLength = queued,
            QueueCapacity = _queueCapacity,
            OldestQueuedItemAge = oldestAge < TimeSpan.Zero ? TimeSpan.Zero : oldestAge,
            RejectionPolicy = _policy,
            WaitTimeout = WaitTimeout,
            WaitingProducers = _roomWaiters.Count,
            Submitted = queued + running + completed + failed + cancelled + rejected + discarded + abandoned,
            Running = running,
            Completed = completed,
            Failed = failed,
            Cancelled = cancelled,
            Rejected = rejected,
            Discarded = discarded,
            Abandoned = abandoned,
            CallerRuns = callerStarted,
            CallbackFailures = Interlocked.Read(ref _callbackFailures),
            ThreadPoolBlockingWaits = Interlocked.Read(ref _threadPoolBlockingWaits),
            WorkersReplaced = Volatile.Read(ref _workersReplaced),
            SlowWorkerCount = slowWorkers,
            SlowItemsReported = Interlocked.Read(ref _slowItemsReported),
            LongQueueWaitsReported = Interlocked.Read(ref _longQueueWaitsReported),
            SlowItemThreshold = SlowItemThreshold,
            QueueWaitThreshold = QueueWaitThreshold,
            IsShutdown = _queue.IsShutdown,
        };
    }
}
