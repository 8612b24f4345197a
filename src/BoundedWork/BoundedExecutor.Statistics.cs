using System.Diagnostics;
using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    /// <summary>How many times a snapshot is read again when items were taken from the queue while it was read.</summary>
    private const int SnapshotRetries = 2;

    /// <summary>
    /// Takes one consistent snapshot of the executor's state and counters: every item submitted so far is in exactly
    /// one of queued, starting, running or an outcome, so <see cref="BoundedExecutorStatistics.Submitted"/> always
    /// equals their sum; and the running items are exactly those of the busy workers and of submitting threads.
    /// </summary>
    /// <returns>The snapshot.</returns>
    public BoundedExecutorStatistics GetStatistics()
    {
        // Read order is what makes the snapshot consistent. An item moves through three stages, each entered by a
        // single increment of a counter that only grows: admitted, claimed, finished (one outcome counter). Reading
        // the finished counters first, then the claims, then the admissions puts an item that moves meanwhile in an
        // earlier stage than it has reached, never in two stages or in none.
        //
        // A worker's claims are not read from the queue's shared claim counter but from the worker itself, together
        // with its outcomes (Worker.ReadProgress): what it has finished and whether it runs an item whose outcome is
        // not counted yet. That is what makes the busy workers and the running items one and the same count. The
        // queue's claim counter, read after every worker, holds in addition the items taken but not attributed to
        // anyone yet: taken by a worker in the instant before it marks itself busy (or after this snapshot read that
        // worker), or taken by an eviction or a shutdown deadline that has not counted them yet. Those are Starting.
        // While items are taken during the reading it is read again (a few times at most), so a quiet executor's
        // snapshot shows Starting as 0 unless an item really is changing hands at that instant.
        var now = _itemClock.Now();
        Progress progress;
        long evicted, abandoned, cancelledAfterClaim, callerStarted, callerCompleted, callerFailed, callerCancelled;
        long rejected, droppedNew, cancelledBeforeQueue, claims, admissions;
        var attempt = 0;
        while (true)
        {
            var claimsBefore = _queue.Claims;
            progress = ReadWorkerProgress(now);
            evicted = Interlocked.Read(ref _evicted);
            abandoned = Interlocked.Read(ref _abandoned);
            cancelledAfterClaim = Interlocked.Read(ref _cancelledAfterClaim);
            callerCompleted = Interlocked.Read(ref _callerCompleted);
            callerFailed = Interlocked.Read(ref _callerFailed);
            callerCancelled = Interlocked.Read(ref _callerCancelled);
            callerStarted = Interlocked.Read(ref _callerStarted);
            rejected = Interlocked.Read(ref _rejected);
            droppedNew = Interlocked.Read(ref _droppedNew);
            cancelledBeforeQueue = Interlocked.Read(ref _cancelledBeforeQueue);
            claims = _queue.Claims;
            admissions = _queue.Admissions;
            if (claims == claimsBefore || ++attempt > SnapshotRetries)
            {
                break;
            }
        }

        var workerClaims = progress.Completed + progress.Failed + progress.Cancelled + progress.Busy;
        var starting = claims - (workerClaims + evicted + abandoned + cancelledAfterClaim);
        Debug.Assert(starting >= 0, "Every claim a worker or another party has counted was made before the claims were read.");
        var runningOnCallers = callerStarted - (callerCompleted + callerFailed + callerCancelled);
        var queued = (int)(admissions - claims);
        var completed = progress.Completed + callerCompleted;
        var failed = progress.Failed + callerFailed;
        var cancelled = progress.Cancelled + callerCancelled + cancelledBeforeQueue + cancelledAfterClaim;
        var discarded = droppedNew + evicted;
        var running = progress.Busy + runningOnCallers;
        var oldestAge = queued != 0 && _queue.TryReadOldestStamp(claims, out var oldestEnqueued)
            ? _itemClock.Elapsed(oldestEnqueued, now)
            : TimeSpan.Zero;

        return new BoundedExecutorStatistics
        {
            Name = Name,
            TargetWorkerCount = progress.Target,
            LiveWorkerCount = progress.Live,
            BusyWorkerCount = progress.Busy,
            PeakWorkerCount = progress.Peak,
            MaxWorkerCount = MaxWorkerCount,
            QueueLength = queued,
            QueueCapacity = _queueCapacity,
            OldestQueuedItemAge = oldestAge < TimeSpan.Zero ? TimeSpan.Zero : oldestAge,
            RejectionPolicy = _policy,
            WaitTimeout = WaitTimeout,
            WaitingProducers = _producers.Count,
            Submitted = queued + starting + running + completed + failed + cancelled + rejected + discarded + abandoned,
            Starting = starting,
            Running = running,
            RunningOnCallers = runningOnCallers,
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
            SlowWorkerCount = progress.Slow,
            SlowItemsReported = Interlocked.Read(ref _slowItemsReported),
            LongQueueWaitsReported = Interlocked.Read(ref _longQueueWaitsReported),
            SlowItemThreshold = SlowItemThreshold,
            QueueWaitThreshold = QueueWaitThreshold,
            IsShutdown = _queue.IsShutdown,
        };
    }

    /// <summary>Reads every worker's outcomes and busy state, and the worker counts, under the lifecycle lock.</summary>
    private Progress ReadWorkerProgress(long now)
    {
        lock (LifecycleLock)
        {
            var progress = new Progress
            {
                Completed = _retiredCompleted,
                Failed = _retiredFailed,
                Cancelled = _retiredCancelled,
                Slow = CountSlowWorkersUnsynchronized(now),
                Target = _targetWorkers,
                Live = _liveWorkers,
                Peak = _peakWorkers,
            };
            foreach (var worker in _workers)
            {
                worker.ReadProgress(out var completed, out var failed, out var cancelled, out var busy);
                progress.Completed += completed;
                progress.Failed += failed;
                progress.Cancelled += cancelled;
                progress.Busy += busy ? 1 : 0;
            }

            return progress;
        }
    }

    /// <summary>The workers' part of a snapshot.</summary>
    private struct Progress
    {
        public long Completed;
        public long Failed;
        public long Cancelled;
        public int Busy;
        public int Slow;
        public int Target;
        public int Live;
        public int Peak;
    }
}
