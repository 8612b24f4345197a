using System.Diagnostics;
using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    // _state packs the number of queued, unclaimed items (low 32 bits) with the lifecycle flags, so that
    // admission, claiming and shutdown are each a single atomic step: no item can slip in after shutdown,
    // and a shutdown deadline can take every unclaimed item at once.
    private const long CountMask = 0xFFFF_FFFFL;
    private const long ShutdownBit = 1L << 40;
    private const long AbandonBit = 1L << 41;

    private PaddedInt64 _state;

    private enum Admission
    {
        Admitted,
        Full,
        ShutDown,
        TimedOut,
    }

    /// <summary>Reserves a queue slot; <paramref name="wasEmpty"/> tells whether the queue was empty before.</summary>
    private Admission TryAdmit(out bool wasEmpty) => TryAdmit(out wasEmpty, _queueCapacity);

    /// <summary>Admits one item if fewer than <paramref name="capacity"/> are queued.</summary>
    private Admission TryAdmit(out bool wasEmpty, int capacity)
    {
        var state = Volatile.Read(ref _state.Value);
        while (true)
        {
            wasEmpty = false;
            if ((state & ShutdownBit) != 0)
            {
                return Admission.ShutDown;
            }

            var count = state & CountMask;
            if (count >= capacity)
            {
                return Admission.Full;
            }

            var previous = Interlocked.CompareExchange(ref _state.Value, state + 1, state);
            if (previous == state)
            {
                wasEmpty = count == 0;
                return Admission.Admitted;
            }

            state = previous;
        }
    }

    /// <summary>Writes an admitted item and wakes a parked worker when the queue just became non-empty.</summary>
    private void Publish(in QueuedItem item, bool wasEmpty)
    {
        var written = _writer.TryWrite(item);
        Debug.Assert(written, "The channel is never completed, so writing to it cannot fail.");
        if (wasEmpty)
        {
            // Workers that find more work after claiming wake the next parked worker, so one wake-up per
            // empty-to-non-empty transition is enough (see AfterClaim).
            WakeOneWorker();
        }
    }

    private bool TryExecuteCore(object callback, object? state, Action<object, object?> invoker)
    {
        Interlocked.Increment(ref _submitted.Value);
        var admission = TryAdmit(out var wasEmpty);
        var item = new QueuedItem(callback, state, invoker, CaptureContext(), Timestamp());
        if (admission == Admission.Admitted)
        {
            Publish(item, wasEmpty);
            return true;
        }

        Reject(item, admission == Admission.ShutDown ? RejectionReason.ShutDown : RejectionReason.QueueFull);
        return false;
    }

    private void ExecuteCore(object callback, object? state, Action<object, object?> invoker, CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _submitted.Value);
        var item = new QueuedItem(callback, state, invoker, CaptureContext(), Timestamp());
        while (true)
        {
            var admission = TryAdmit(out var wasEmpty);
            switch (admission)
            {
                case Admission.Admitted:
                    Publish(item, wasEmpty);
                    return;
                case Admission.ShutDown:
                    throw Reject(item, RejectionReason.ShutDown);
            }

            switch (_policy)
            {
                case RejectionPolicy.CallerRuns:
                    RunOnCaller(item);
                    return;
                case RejectionPolicy.Discard:
                    Discard(item, RejectionReason.Discarded);
                    return;
                case RejectionPolicy.DiscardOldest when EvictOldest():
                    // The new item takes the evicted one's place, even while the queue is above a capacity
                    // that was just lowered: one eviction per admission, never more.
                    admission = TryAdmit(out wasEmpty, int.MaxValue);
                    if (admission == Admission.Admitted)
                    {
                        Publish(item, wasEmpty);
                        return;
                    }

                    continue;
                case RejectionPolicy.DiscardOldest:
                    continue;
                case RejectionPolicy.Wait when IsWorkerThread:
                    // Blocking a worker on its own full queue could deadlock the executor: run inline instead.
                    RunOnCaller(item);
                    return;
                case RejectionPolicy.Wait:
                    NoteBlockingWait(BlockingWaitKind.WaitForRoom);
                    admission = WaitForRoom(item, out wasEmpty, cancellationToken);
                    if (admission == Admission.Admitted)
                    {
                        Publish(item, wasEmpty);
                        return;
                    }

                    throw Reject(item, admission == Admission.ShutDown ? RejectionReason.ShutDown : RejectionReason.WaitTimedOut);
                default:
                    throw Reject(item, RejectionReason.QueueFull);
            }
        }
    }

    private ValueTask ExecuteAsyncCore(object callback, object? state, Action<object, object?> invoker, CancellationToken cancellationToken)
    {
        if (_policy != RejectionPolicy.Wait || IsWorkerThread)
        {
            try
            {
                ExecuteCore(callback, state, invoker, cancellationToken);
                return ValueTask.CompletedTask;
            }
            catch (Exception ex)
            {
                return ValueTask.FromException(ex);
            }
        }

        Interlocked.Increment(ref _submitted.Value);
        var item = new QueuedItem(callback, state, invoker, CaptureContext(), Timestamp());
        var admission = TryAdmit(out var wasEmpty);
        if (admission == Admission.Admitted)
        {
            Publish(item, wasEmpty);
            return ValueTask.CompletedTask;
        }

        if (admission == Admission.ShutDown)
        {
            return ValueTask.FromException(Reject(item, RejectionReason.ShutDown));
        }

        return new ValueTask(WaitAndPublishAsync(item, cancellationToken));
    }

    private async Task WaitAndPublishAsync(QueuedItem item, CancellationToken cancellationToken)
    {
        var (admission, wasEmpty) = await WaitForRoomAsync(item, cancellationToken).ConfigureAwait(false);
        if (admission != Admission.Admitted)
        {
            throw Reject(item, admission == Admission.ShutDown ? RejectionReason.ShutDown : RejectionReason.WaitTimedOut);
        }

        Publish(item, wasEmpty);
    }

    private Task<TResult> RunCore<TResult>(Delegate work, CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _submitted.Value);
        if (cancellationToken.IsCancellationRequested)
        {
            Interlocked.Increment(ref _cancelled);
            return Task.FromCanceled<TResult>(cancellationToken);
        }

        var runItem = new RunItem<TResult>(this, work, CaptureContext());
        runItem.RegisterCancellation(cancellationToken);
        var item = new QueuedItem(runItem, null, null, null, Timestamp());
        while (true)
        {
            var admission = TryAdmit(out var wasEmpty);
            switch (admission)
            {
                case Admission.Admitted:
                    Publish(item, wasEmpty);
                    return runItem.Task;
                case Admission.ShutDown:
                    Reject(item, RejectionReason.ShutDown);
                    return runItem.Task;
            }

            switch (_policy)
            {
                case RejectionPolicy.CallerRuns:
                    RunOnCaller(item);
                    return runItem.Task;
                case RejectionPolicy.Discard:
                    Discard(item, RejectionReason.Discarded);
                    return runItem.Task;
                case RejectionPolicy.DiscardOldest when EvictOldest():
                    // The new item takes the evicted one's place, even while the queue is above a capacity
                    // that was just lowered: one eviction per admission, never more.
                    admission = TryAdmit(out wasEmpty, int.MaxValue);
                    if (admission == Admission.Admitted)
                    {
                        Publish(item, wasEmpty);
                        return runItem.Task;
                    }

                    continue;
                case RejectionPolicy.DiscardOldest:
                    continue;
                case RejectionPolicy.Wait when IsWorkerThread:
                    RunOnCaller(item);
                    return runItem.Task;
                case RejectionPolicy.Wait:
                    return WaitAndRunAsync(item, runItem, cancellationToken);
                default:
                    Reject(item, RejectionReason.QueueFull);
                    return runItem.Task;
            }
        }
    }

    private async Task<TResult> WaitAndRunAsync<TResult>(QueuedItem item, RunItem<TResult> runItem, CancellationToken cancellationToken)
    {
        Admission admission;
        bool wasEmpty;
        try
        {
            (admission, wasEmpty) = await WaitForRoomAsync(item, cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The item's own cancellation registration has cancelled its task and counted it.
            return await runItem.Task.ConfigureAwait(false);
        }

        if (admission == Admission.Admitted)
        {
            Publish(item, wasEmpty);
        }
        else
        {
            Reject(item, admission == Admission.ShutDown ? RejectionReason.ShutDown : RejectionReason.WaitTimedOut);
        }

        return await runItem.Task.ConfigureAwait(false);
    }

    /// <summary>Counts an item as rejected and reports it; returns the exception for callers that throw it.</summary>
    private RejectedExecutionException Reject(in QueuedItem item, RejectionReason reason) => ReportNotRun(item, reason, ref _rejected);

    /// <summary>Counts an item as discarded (dropped or evicted) and reports it.</summary>
    private void Discard(in QueuedItem item, RejectionReason reason) => ReportNotRun(item, reason, ref _discarded);

    /// <summary>
    /// Counts an item that will not run in <paramref name="counter"/>, faults its task if it is awaited, and tells
    /// <see cref="BoundedExecutorOptions.OnRejected"/>. An awaited item its caller cancelled meanwhile is already
    /// counted as cancelled and is left alone.
    /// </summary>
    private RejectedExecutionException ReportNotRun(in QueuedItem item, RejectionReason reason, ref long counter)
    {
        var exception = new RejectedExecutionException(Name, reason);
        if (item.Awaited is { } awaited && !awaited.TryClaim())
        {
            return exception;
        }

        Interlocked.Increment(ref counter);
        item.Awaited?.Reject(exception);
        InvokeOnRejected(item, reason);
        return exception;
    }

    /// <summary>Takes the oldest unclaimed item out of a full queue and reports it as evicted; false if there was none.</summary>
    private bool EvictOldest()
    {
        if (!TryClaim(out _))
        {
            // The queue drained or shut down meanwhile: the caller retries admission.
            return false;
        }

        var victim = ReadClaimed();
        Discard(victim, RejectionReason.Evicted);
        return true;
    }

    /// <summary>Runs an item on the submitting thread (CallerRuns, or Wait from a worker of this executor).</summary>
    private void RunOnCaller(in QueuedItem item)
    {
        if (item.Awaited is { } awaited)
        {
            if (!awaited.TryClaim())
            {
                return;
            }

            Interlocked.Increment(ref _callerRuns);
            var outcome = awaited.Run(ExecutionContext.Capture());
            CountCallerOutcome(outcome);
            return;
        }

        Interlocked.Increment(ref _callerRuns);
        try
        {
            item.Invoker!(item.Callback, item.State);
            Interlocked.Increment(ref _callerCompleted);
        }
        catch (Exception ex)
        {
            Interlocked.Increment(ref _callerFailed);
            InvokeOnError(item, ex);
        }
    }

    private void CountCallerOutcome(ItemOutcome outcome)
    {
        switch (outcome)
        {
            case ItemOutcome.Completed:
                Interlocked.Increment(ref _callerCompleted);
                break;
            case ItemOutcome.Failed:
                Interlocked.Increment(ref _callerFailed);
                break;
            default:
                Interlocked.Increment(ref _cancelled);
                break;
        }
    }

    /// <summary>Blocks until there is room, the wait times out or the token is cancelled.</summary>
    private Admission WaitForRoom(in QueuedItem item, out bool wasEmpty, CancellationToken cancellationToken)
    {
        var started = _timeProvider.GetTimestamp();
        while (true)
        {
            var admission = TryAdmit(out wasEmpty);
            if (admission != Admission.Full)
            {
                return admission;
            }

            var waiter = _spaceWaiters.Register();
            admission = TryAdmit(out wasEmpty);
            if (admission != Admission.Full)
            {
                _spaceWaiters.Unregister(waiter);
                return admission;
            }

            var remaining = RemainingWait(started);
            if (remaining == TimeSpan.Zero)
            {
                _spaceWaiters.Unregister(waiter);
                return Admission.TimedOut;
            }

            bool woken;
            try
            {
                woken = BlockUntilWoken(waiter.Value.Task, remaining, cancellationToken);
            }
            catch (OperationCanceledException)
            {
                _spaceWaiters.Unregister(waiter);
                CountCancelledWait(item);
                throw;
            }

            if (!woken)
            {
                _spaceWaiters.Unregister(waiter);
            }
        }
    }

    private async Task<(Admission Admission, bool WasEmpty)> WaitForRoomAsync(QueuedItem item, CancellationToken cancellationToken)
    {
        var started = _timeProvider.GetTimestamp();
        while (true)
        {
            var admission = TryAdmit(out var wasEmpty);
            if (admission != Admission.Full)
            {
                return (admission, wasEmpty);
            }

            var waiter = _spaceWaiters.Register();
            admission = TryAdmit(out wasEmpty);
            if (admission != Admission.Full)
            {
                _spaceWaiters.Unregister(waiter);
                return (admission, wasEmpty);
            }

            var remaining = RemainingWait(started);
            if (remaining == TimeSpan.Zero)
            {
                _spaceWaiters.Unregister(waiter);
                return (Admission.TimedOut, false);
            }

            try
            {
                await waiter.Value.Task.WaitAsync(remaining, _timeProvider, cancellationToken).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                _spaceWaiters.Unregister(waiter);
            }
            catch (OperationCanceledException)
            {
                _spaceWaiters.Unregister(waiter);
                CountCancelledWait(item);
                throw;
            }
        }
    }

    private void CountCancelledWait(in QueuedItem item)
    {
        // An awaited item's own cancellation registration counts it; a fire-and-forget item is counted here.
        if (item.Awaited is null)
        {
            Interlocked.Increment(ref _cancelled);
        }
    }

    private TimeSpan RemainingWait(long started)
    {
        var waitTimeout = WaitTimeout;
        if (waitTimeout == Timeout.InfiniteTimeSpan)
        {
            return Timeout.InfiniteTimeSpan;
        }

        var remaining = waitTimeout - _timeProvider.GetElapsedTime(started);
        return remaining > TimeSpan.Zero ? remaining : TimeSpan.Zero;
    }

    private bool BlockUntilWoken(Task wakeUp, TimeSpan timeout, CancellationToken cancellationToken)
    {
        if (_timeProvider == TimeProvider.System)
        {
            // A kernel wait: needs no timer callback and so no ThreadPool thread.
            return wakeUp.Wait(timeout, cancellationToken);
        }

        try
        {
            wakeUp.WaitAsync(timeout, _timeProvider, cancellationToken).GetAwaiter().GetResult();
            return true;
        }
        catch (TimeoutException)
        {
            return false;
        }
    }
}
