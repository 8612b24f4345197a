using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace BoundedWork.Internal;

/// <summary>
/// Runs items: on a worker thread, measured and followed by the worker's clean-up, or on the submitting thread (the
/// CallerRuns policy, or a Wait-policy submit from one of the executor's own workers).
/// </summary>
/// <remarks>
/// Invariants: an item runs in its own execution context, traced by its own activity; running it never throws (a
/// fire-and-forget item's exception goes to <see cref="BoundedExecutorOptions.OnError"/>, an awaited item's to its
/// task); and <b>workers are clean rooms</b>: nothing an item set on the thread (AsyncLocals, a
/// SynchronizationContext) reaches the next item or, on the submitting thread, the submitter. Tests:
/// <c>CleanRoomTests</c>, <c>ExecutionContextTests</c>, <c>FailureTests</c>.
/// </remarks>
internal sealed class ItemRunner(ExecutorCallbacks callbacks, ExecutorInstruments instruments, OutcomeCounters outcomes)
{
    /// <summary>
    /// How deeply items may nest when a full queue makes the submitting thread run them. Deeper than this, or with too
    /// little stack left, the item is rejected with <see cref="RejectionReason.CallerRunsTooDeep"/> instead of
    /// overflowing the stack.
    /// </summary>
    private const int MaxInlineDepth = 32;

    [ThreadStatic]
    private static int t_inlineDepth;

    private static readonly Func<Func<bool>, bool> s_ask = static mayWait => mayWait();

    /// <summary>Gets the executor's rate limit, which items run on the submitting thread obey as well.</summary>
    public PermitGate? Permits { get; init; }

    /// <summary>
    /// Gets whether a submitting thread may keep waiting for a permit: the executor was neither abandoned nor completed
    /// (after its drain nothing replenishes the limit, so the wait could never end).
    /// </summary>
    public Func<bool> CallerMayWaitForPermit { get; init; } = static () => true;

    /// <summary>Runs an item a worker claimed and published with <see cref="Worker.BeginRun"/>, and counts its outcome.</summary>
    public ItemOutcome RunOnWorker(Worker worker, in QueuedItem item)
    {
        var measureWait = item.PreciseEnqueuedTimestamp != 0 && instruments.WaitDurationEnabled;
        var preciseStart = instruments.RunDurationEnabled || measureWait ? Stopwatch.GetTimestamp() : 0;
        if (measureWait)
        {
            callbacks.RecordWait(Stopwatch.GetElapsedTime(item.PreciseEnqueuedTimestamp, preciseStart));
        }

        var outcome = Invoke(item);
        worker.Count(outcome);
        worker.EndRun();
        if (preciseStart != 0 && instruments.RunDurationEnabled)
        {
            callbacks.RecordRun(Stopwatch.GetElapsedTime(preciseStart));
        }

        // The clean room: nothing the item set reaches the next one.
        if (SynchronizationContext.Current is not null)
        {
            SynchronizationContext.SetSynchronizationContext(null);
        }

        if (ExecutionContext.Capture() != worker.CleanContext && worker.CleanContext is not null)
        {
            ExecutionContext.Restore(worker.CleanContext);
        }

        return outcome;
    }

    /// <summary>
    /// Runs an item on the submitting thread, leaving the caller's execution and synchronization contexts as they
    /// were. Returns false (with the rejection) when the thread is already nested too deeply in such runs.
    /// </summary>
    public bool RunOnCaller(in QueuedItem item, out RejectedExecutionException? rejection)
    {
        rejection = null;
        if (t_inlineDepth >= MaxInlineDepth || !RuntimeHelpers.TryEnsureSufficientExecutionStack())
        {
            rejection = outcomes.NotRun(item, RejectionReason.CallerRunsTooDeep);
            return false;
        }

        System.Threading.RateLimiting.RateLimitLease? permit = null;
        if (Permits is { Limiter: not null } permits && !permits.TryAcquire(ref permit, s_ask, CallerMayWaitForPermit))
        {
            rejection = outcomes.NotRun(item, RejectionReason.ShutDown);
            return false;
        }

        try
        {
            return RunOnCallerWithPermit(item);
        }
        finally
        {
            if (permit is not null)
            {
                Permits!.Release(permit);
            }
        }
    }

    private bool RunOnCallerWithPermit(in QueuedItem item)
    {
        if (item.Awaited is { } awaited && !awaited.TryClaim())
        {
            outcomes.CancelledBeforeQueue();
            return true;
        }

        outcomes.CallerStarted();
        var context = ExecutionContext.Capture();
        var synchronizationContext = SynchronizationContext.Current;
        t_inlineDepth++;
        ItemOutcome outcome;
        try
        {
            outcome = Invoke(item);
        }
        finally
        {
            t_inlineDepth--;
            if (context is not null && ExecutionContext.Capture() != context)
            {
                ExecutionContext.Restore(context);
            }

            if (SynchronizationContext.Current != synchronizationContext)
            {
                SynchronizationContext.SetSynchronizationContext(synchronizationContext);
            }
        }

        outcomes.CallerFinished(outcome);
        return true;
    }

    /// <summary>Runs an item in its own execution context and traces it; returns its outcome. Never throws.</summary>
    private ItemOutcome Invoke(in QueuedItem item)
    {
        if (item.Awaited is { } awaited)
        {
            return awaited.Run(callbacks);
        }

        if (item.Context is not null)
        {
            ExecutionContext.Restore(item.Context);
        }

        var activity = callbacks.StartRun();
        ItemOutcome outcome;
        try
        {
            item.Invoker!(item.Callback, item.State);
            outcome = ItemOutcome.Completed;
        }
        catch (Exception ex)
        {
            outcome = ItemOutcome.Failed;
            callbacks.MarkRunFailed(activity, ex);
            callbacks.ItemFailed(item, ex);
        }

        callbacks.StopRun(activity);
        return outcome;
    }
}
