using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// The counters of what became of the executor's items, and the one consistent snapshot of them that
/// <see cref="BoundedExecutor.GetStatistics"/> reports.
/// </summary>
/// <remarks>
/// <para>
/// <b>One item, one outcome.</b> Every submitted item ends in exactly one outcome (completed, failed, cancelled,
/// rejected, discarded or abandoned) and is counted exactly once, by the one party that decides it:
/// </para>
/// <list type="bullet">
/// <item><description>an item that never reaches the queue, by its submitting thread: rejected, dropped by the Discard
/// policy, or cancelled before it was queued (<c>_rejected</c>, <c>_droppedNew</c>, <c>_cancelledBeforeQueue</c>);
/// a producer waiting for room is not submitted yet, and whoever ends its wait (a worker admitting it, the watchdog at
/// its timeout, its cancellation, shutdown) decides;</description></item>
/// <item><description>an item claimed from the queue, by the party that claimed it: the worker that runs it (the
/// worker's own counters, <see cref="Worker"/>), an eviction (<c>_evicted</c>) or a shutdown deadline
/// (<c>_abandoned</c>);</description></item>
/// <item><description>an item run on the submitting thread (CallerRuns, or Wait from a worker of this executor):
/// <c>_callerStarted</c> when it starts, then exactly one of <c>_callerCompleted</c>, <c>_callerFailed</c>,
/// <c>_callerCancelled</c>.</description></item>
/// </list>
/// <para>
/// An awaited item (<c>RunAsync</c>) can also be decided by its caller's cancellation. Exactly one party wins its
/// claim (<see cref="IAwaitedItem.TryClaim"/>); a party that loses it to the cancellation counts the item as cancelled
/// (<c>_cancelledBeforeQueue</c>, or <c>_cancelledAfterClaim</c> once claimed from the queue) and reports nothing.
/// </para>
/// <para>
/// <b>The snapshot's read order.</b> An item moves through three stages, each entered by one increment of a counter
/// that only grows: admitted (the queue's admissions), claimed (its claims), finished (one outcome counter).
/// <see cref="Read"/> reads the finished counters first, then the claims, then the admissions, so an item that moves
/// meanwhile is seen in an earlier stage than it has reached, never in two stages or in none; and
/// submitted = queued + starting + running + every outcome holds in every snapshot. A worker's claims are read from the
/// worker itself, together with its outcomes (<see cref="Worker.ReadProgress"/>), which is what makes the busy workers
/// and the running items one and the same count. The queue's claim counter, read after every worker, holds in addition
/// the items taken but not attributed to anyone yet (a worker in the instant before it marks itself busy, or after the
/// snapshot read that worker; an eviction or a shutdown deadline that has not counted them yet): those are Starting.
/// While items are taken during the reading it is read again, a few times at most, so a quiet executor's snapshot shows
/// Starting as 0 unless an item really is changing hands at that instant. Tests: <c>ConservationProperties</c>,
/// <c>SnapshotConsistencyTests</c>, <c>BusyAndRunningTests</c>.
/// </para>
/// </remarks>
internal sealed class OutcomeCounters(string executorName, ExecutorCallbacks callbacks)
{
    /// <summary>How many times a snapshot is read again when items were taken from the queue while it was read.</summary>
    private const int SnapshotRetries = 2;

    // Items that never reached the queue.
    private long _rejected;
    private long _droppedNew;
    private long _cancelledBeforeQueue;

    // Items claimed from the queue by a party other than a worker.
    private long _evicted;
    private long _abandoned;
    private long _cancelledAfterClaim;

    // Items run on the submitting thread.
    private long _callerStarted;
    private long _callerCompleted;
    private long _callerFailed;
    private long _callerCancelled;

    /// <summary>
    /// Counts an item that will not run (rejected for <paramref name="reason"/>, dropped by the Discard policy or
    /// evicted by DiscardOldest), tells <see cref="BoundedExecutorOptions.OnRejected"/> and then faults its task if it
    /// is awaited. An awaited item its caller cancelled meanwhile is counted as
    /// cancelled instead and not reported. Returns the exception for callers that throw it.
    /// </summary>
    /// <param name="item">The item.</param>
    /// <param name="reason">Why it does not run.</param>
    /// <param name="claimed">
    /// <see langword="false"/> for an item evicted from a tenant's lane without a claim from the queue (fair share
    /// swaps it for the new item, whose slot it keeps): counted as a new item dropped, so the ledger stays exact.
    /// </param>
    public RejectedExecutionException NotRun(in QueuedItem item, RejectionReason reason, bool claimed = true)
    {
        Debug.Assert(reason != RejectionReason.Abandoned, "Abandoned items are handed back by Abandoned(), not rejected.");
        var exception = new RejectedExecutionException(executorName, reason);
        var evicted = reason == RejectionReason.Evicted && claimed;
        if (reason == RejectionReason.Evicted && !claimed)
        {
            reason = RejectionReason.Discarded; // counted as a drop; reported below as the eviction it is
        }

        if (item.Awaited is { } awaited && !awaited.TryClaim())
        {
            Interlocked.Increment(ref evicted ? ref _cancelledAfterClaim : ref _cancelledBeforeQueue);
            return exception;
        }

        Interlocked.Increment(ref evicted ? ref _evicted : ref reason == RejectionReason.Discarded ? ref _droppedNew : ref _rejected);
        // Reported before the task faults, as a fire-and-forget item is reported before its producer hears: whoever
        // awaits the task then finds OnRejected already told (RejectionPolicyTests.RunAsync_RejectedAfterWaitingForRoom_...).
        callbacks.ItemRejected(item, exception.Reason);
        item.Awaited?.Reject(exception);
        return exception;
    }

    /// <summary>Counts an item cancelled before it was queued (its token was already cancelled, or lost its claim to it).</summary>
    public void CancelledBeforeQueue() => Interlocked.Increment(ref _cancelledBeforeQueue);

    /// <summary>Counts an item whose producer stopped waiting for room (cancelled): cancels its task if it is awaited.</summary>
    public void CancelledWhileWaiting(in QueuedItem item)
    {
        if (item.Awaited is { } awaited && awaited.TryClaim())
        {
            awaited.Cancel();
        }

        Interlocked.Increment(ref _cancelledBeforeQueue);
    }

    /// <summary>
    /// Counts an item claimed from the queue at a shutdown deadline: cancels its task if it is awaited. Returns
    /// <see langword="false"/> (and counts it as cancelled) if its caller had cancelled it while it was queued.
    /// </summary>
    public bool Abandoned(in QueuedItem item)
    {
        if (item.Awaited is { } awaited)
        {
            if (!awaited.TryClaim())
            {
                Interlocked.Increment(ref _cancelledAfterClaim);
                return false;
            }

            awaited.Cancel();
        }

        Interlocked.Increment(ref _abandoned);
        return true;
    }

    /// <summary>Counts an item that starts on the submitting thread; <see cref="CallerFinished"/> follows.</summary>
    public void CallerStarted() => Interlocked.Increment(ref _callerStarted);

    /// <summary>Counts the outcome of an item that ran on the submitting thread.</summary>
    public void CallerFinished(ItemOutcome outcome) =>
        Interlocked.Increment(ref outcome == ItemOutcome.Completed ? ref _callerCompleted : ref outcome == ItemOutcome.Failed ? ref _callerFailed : ref _callerCancelled);

    /// <summary>Reads every counter in the order that makes the snapshot consistent (see the remarks).</summary>
    public OutcomeSnapshot Read(TicketQueue queue, WorkerPool pool, long now, TimeSpan slowThreshold, ItemClock clock)
    {
        WorkerProgress workers;
        long evicted, abandoned, cancelledAfterClaim, callerStarted, callerCompleted, callerFailed, callerCancelled;
        long rejected, droppedNew, cancelledBeforeQueue, claims, admissions;
        var attempt = 0;
        while (true)
        {
            var claimsBefore = queue.Claims;
            workers = pool.ReadProgress(now, slowThreshold, clock);
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
            claims = queue.Claims;
            admissions = queue.Admissions;
            if (claims == claimsBefore || ++attempt > SnapshotRetries)
            {
                break;
            }
        }

        var workerClaims = workers.Completed + workers.Failed + workers.Cancelled + workers.Busy;
        var starting = claims - (workerClaims + evicted + abandoned + cancelledAfterClaim);
        Debug.Assert(starting >= 0, "Every claim a worker or another party has counted was made before the claims were read.");
        var runningOnCallers = callerStarted - (callerCompleted + callerFailed + callerCancelled);
        var snapshot = new OutcomeSnapshot
        {
            Workers = workers,
            Claims = claims,
            Queued = (int)(admissions - claims),
            Starting = starting,
            Running = workers.Busy + runningOnCallers,
            RunningOnCallers = runningOnCallers,
            Completed = workers.Completed + callerCompleted,
            Failed = workers.Failed + callerFailed,
            Cancelled = workers.Cancelled + callerCancelled + cancelledBeforeQueue + cancelledAfterClaim,
            Rejected = rejected,
            Discarded = droppedNew + evicted,
            Abandoned = abandoned,
            CallerRuns = callerStarted,
        };
        return snapshot;
    }
}

/// <summary>One consistent reading of <see cref="OutcomeCounters"/> and the workers (see its remarks).</summary>
internal readonly struct OutcomeSnapshot
{
    public WorkerProgress Workers { get; init; }

    /// <summary>Gets the queue's claim count the snapshot was read at (where the oldest queued item is).</summary>
    public long Claims { get; init; }

    public int Queued { get; init; }

    public long Starting { get; init; }

    public long Running { get; init; }

    public long RunningOnCallers { get; init; }

    public long Completed { get; init; }

    public long Failed { get; init; }

    public long Cancelled { get; init; }

    public long Rejected { get; init; }

    public long Discarded { get; init; }

    public long Abandoned { get; init; }

    public long CallerRuns { get; init; }

    /// <summary>Gets every item submitted so far: always the sum of the stages and the outcomes.</summary>
    public long Submitted => Queued + Starting + Running + Completed + Failed + Cancelled + Rejected + Discarded + Abandoned;
}
