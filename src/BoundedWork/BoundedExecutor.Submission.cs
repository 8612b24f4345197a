using System.Runtime.CompilerServices;
using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    /// <summary>
    /// How deeply items may nest when a full queue makes the submitting thread run them (CallerRuns, or a Wait-policy
    /// submit from one of the executor's own workers). Deeper than this, or with too little stack left, the item is
    /// rejected with <see cref="RejectionReason.CallerRunsTooDeep"/> instead of overflowing the stack.
    /// </summary>
    private const int MaxInlineDepth = 32;

    /// <summary>How many times a Wait-policy producer retries for room before it registers and blocks.</summary>
    private const int SpinsForRoom = 16;

    /// <summary>The most free slots a retrying Wait-policy producer waits for (see <see cref="SpinForRoom"/>).</summary>
    private const int MaxRoomBatch = 64;

    [ThreadStatic]
    private static int t_inlineDepth;

    private enum SubmitStatus
    {
        /// <summary>The item is queued, ran on the caller, or was discarded (and reported).</summary>
        Done,

        /// <summary>The item was rejected; the exception is for the caller.</summary>
        Rejected,

        /// <summary>The item waits for room with a registered <see cref="ProducerWaiter"/>.</summary>
        Waiting,
    }

    private bool TryExecuteCore(in QueuedItem item)
    {
        var admission = _queue.TryAdmit(_queueCapacity, out var ticket);
        if (admission == Admission.Admitted)
        {
            Publish(ticket, item);
            return true;
        }

        Reject(item, admission == Admission.ShutDown ? RejectionReason.ShutDown : RejectionReason.QueueFull);
        return false;
    }

    private void ExecuteCore(in QueuedItem item, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            Interlocked.Increment(ref _cancelledBeforeQueue);
            cancellationToken.ThrowIfCancellationRequested();
        }

        switch (Submit(item, blocking: true, cancellationToken, out var waiter, out var rejection))
        {
            case SubmitStatus.Rejected:
                throw rejection!;
            case SubmitStatus.Waiting:
                AwaitAdmission(waiter!, cancellationToken);
                break;
        }
    }

    private ValueTask ExecuteAsyncCore(in QueuedItem item, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            Interlocked.Increment(ref _cancelledBeforeQueue);
            return ValueTask.FromCanceled(cancellationToken);
        }

        return Submit(item, blocking: false, cancellationToken, out var waiter, out var rejection) switch
        {
            SubmitStatus.Rejected => ValueTask.FromException(rejection!),
            SubmitStatus.Waiting => new ValueTask(waiter!.Task!),
            _ => ValueTask.CompletedTask,
        };
    }

    private Task<TResult> RunCore<TResult>(Delegate work, CancellationToken cancellationToken, object? describedBy = null)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            Interlocked.Increment(ref _cancelledBeforeQueue);
            return Task.FromCanceled<TResult>(cancellationToken);
        }

        var runItem = new RunItem<TResult>(work, _flowExecutionContext ? ExecutionContext.Capture() : null, describedBy);
        runItem.RegisterCancellation(cancellationToken);

        // Whatever Submit decides, the outcome reaches the caller through the item's own task.
        _ = Submit(new QueuedItem(runItem, null, null, null, _itemClock.Now(), PreciseStamp()), blocking: false, cancellationToken, out _, out _);
        return runItem.Task;
    }

    /// <summary>
    /// Admits the item, or applies the rejection policy when the queue is full. Every path counts and reports the
    /// item; an awaited item's task carries its fate.
    /// </summary>
    private SubmitStatus Submit(in QueuedItem item, bool blocking, CancellationToken cancellationToken, out ProducerWaiter? waiter, out RejectedExecutionException? rejection)
    {
        waiter = null;
        rejection = null;
        var policy = _policy;
        if (policy == RejectionPolicy.Wait && _producers.Any && !IsWorkerThread)
        {
            // Producers wait already: line up behind them instead of taking a slot freed for the oldest of them.
            waiter = RegisterWaiter(item, blocking, cancellationToken);
            return SubmitStatus.Waiting;
        }

        while (true)
        {
            var admission = _queue.TryAdmit(_queueCapacity, out var ticket);
            if (admission == Admission.Admitted)
            {
                Publish(ticket, item);
                return SubmitStatus.Done;
            }

            if (admission == Admission.ShutDown)
            {
                rejection = Reject(item, RejectionReason.ShutDown);
                return SubmitStatus.Rejected;
            }

            switch (policy)
            {
                case RejectionPolicy.Discard:
                    Discard(item);
                    return SubmitStatus.Done;
                case RejectionPolicy.DiscardOldest:
                    if (EvictOldest())
                    {
                        // The new item takes the evicted one's place, even while the queue is above a capacity that
                        // was just lowered: one eviction per admission, never more.
                        admission = _queue.TryAdmit(int.MaxValue, out ticket);
                        if (admission == Admission.Admitted)
                        {
                            Publish(ticket, item);
                            return SubmitStatus.Done;
                        }
                    }

                    continue;
                case RejectionPolicy.CallerRuns:
                case RejectionPolicy.Wait when IsWorkerThread:
                    // Blocking a worker on its own full queue could deadlock the executor: run inline instead.
                    return RunOnCaller(item, out rejection) ? SubmitStatus.Done : SubmitStatus.Rejected;
                case RejectionPolicy.Wait:
                    if (SpinForRoom(item))
                    {
                        return SubmitStatus.Done;
                    }

                    waiter = RegisterWaiter(item, blocking, cancellationToken);
                    return SubmitStatus.Waiting;
                default:
                    rejection = Reject(item, RejectionReason.QueueFull);
                    return SubmitStatus.Rejected;
            }
        }
    }

    /// <summary>
    /// Before a Wait-policy producer registers and blocks, it retries for a few microseconds: with short items a
    /// slot frees up within that time, and a producer that gets it this way costs no allocation and no kernel
    /// wait for itself or for the worker that would otherwise have to release it. Nobody waits in line meanwhile
    /// (that was checked first), so taking the slot barges past no one.
    /// </summary>
    /// <remarks>
    /// While it retries, the producer waits for a batch of free slots (<see cref="RoomBatch"/>), not for the first
    /// one; only its last retry takes any free slot. A producer that outpaces the workers would otherwise take each
    /// slot the moment a worker frees it, and so read the workers' claim counter once per item: every claim would
    /// then find that cache line pulled away to the producer's core. Waiting for a batch lets the workers claim a
    /// run of items undisturbed, and the producer then fills the batch reading only its own side's counter (see
    /// <see cref="TicketQueue.TryAdmit"/>). The queue stays nearly full meanwhile, so the workers never run dry.
    /// benchmarks/compare-java.sh measures the difference in its one-producer, one-worker shape.
    /// </remarks>
    private bool SpinForRoom(in QueuedItem item)
    {
        var spinner = default(SpinWait);
        var batch = RoomBatch;
        for (var i = 0; i < SpinsForRoom; i++)
        {
            spinner.SpinOnce(sleep1Threshold: -1);
            if (_producers.Any)
            {
                return false;
            }

            if (i < SpinsForRoom - 1 && !_queue.HasRoomFor(_queueCapacity, batch))
            {
                continue;
            }

            var admission = _queue.TryAdmit(_queueCapacity, out var ticket);
            if (admission == Admission.Admitted)
            {
                Publish(ticket, item);
                return true;
            }

            if (admission == Admission.ShutDown)
            {
                return false; // registering will reject it
            }
        }

        return false;
    }

    /// <summary>How many free slots a retrying Wait-policy producer waits for: a quarter of the capacity, 1 to <see cref="MaxRoomBatch"/>.</summary>
    private int RoomBatch => Math.Clamp(_queueCapacity / 4, 1, MaxRoomBatch);

    /// <summary>Writes an admitted item and wakes a parked worker if one is parked and none spins.</summary>
    private void Publish(long ticket, in QueuedItem item)
    {
        _queue.Write(ticket, item);
        WakeWorkerUnlessOneSpins();
    }

    /// <summary>Counts an item as rejected and reports it; returns the exception for callers that throw it.</summary>
    private RejectedExecutionException Reject(in QueuedItem item, RejectionReason reason) =>
        ReportNotRun(item, reason, ref _rejected, ref _cancelledBeforeQueue);

    /// <summary>Counts a new item the Discard policy dropped, and reports it.</summary>
    private void Discard(in QueuedItem item) => ReportNotRun(item, RejectionReason.Discarded, ref _droppedNew, ref _cancelledBeforeQueue);

    /// <summary>
    /// Counts an item that will not run in <paramref name="counter"/>, faults its task if it is awaited, and tells
    /// <see cref="BoundedExecutorOptions.OnRejected"/>. An awaited item its caller cancelled meanwhile is counted in
    /// <paramref name="cancelledCounter"/> instead and not reported.
    /// </summary>
    private RejectedExecutionException ReportNotRun(in QueuedItem item, RejectionReason reason, ref long counter, ref long cancelledCounter)
    {
        var exception = new RejectedExecutionException(Name, reason);
        if (item.Awaited is { } awaited && !awaited.TryClaim())
        {
            Interlocked.Increment(ref cancelledCounter);
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
        long knownAdmissions = 0;
        if (!_queue.TryClaim(ref knownAdmissions, out var ticket, out _))
        {
            // The queue drained or shut down meanwhile: the caller retries admission.
            return false;
        }

        var victim = _queue.ReadClaimed(ticket);
        ReportNotRun(victim, RejectionReason.Evicted, ref _evicted, ref _cancelledAfterClaim);
        return true;
    }

    /// <summary>
    /// Runs an item on the submitting thread (CallerRuns, or Wait from a worker of this executor), leaving the
    /// caller's execution and synchronization contexts as they were. Returns false (with the rejection) when the
    /// thread is already nested too deeply in such runs.
    /// </summary>
    private bool RunOnCaller(in QueuedItem item, out RejectedExecutionException? rejection)
    {
        rejection = null;
        if (t_inlineDepth >= MaxInlineDepth || !RuntimeHelpers.TryEnsureSufficientExecutionStack())
        {
            rejection = Reject(item, RejectionReason.CallerRunsTooDeep);
            return false;
        }

        if (item.Awaited is { } awaited && !awaited.TryClaim())
        {
            Interlocked.Increment(ref _cancelledBeforeQueue);
            return true;
        }

        Interlocked.Increment(ref _callerStarted);
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

        switch (outcome)
        {
            case ItemOutcome.Completed:
                Interlocked.Increment(ref _callerCompleted);
                break;
            case ItemOutcome.Failed:
                Interlocked.Increment(ref _callerFailed);
                break;
            default:
                Interlocked.Increment(ref _callerCancelled);
                break;
        }
        return true;
    }

    /// <summary>
    /// Runs an item in its own execution context and traces it; returns its outcome. Never throws: a fire-and-forget
    /// item's exception goes to <see cref="BoundedExecutorOptions.OnError"/>, an awaited item's to its task.
    /// </summary>
    private ItemOutcome Invoke(in QueuedItem item)
    {
        if (item.Awaited is { } awaited)
        {
            return awaited.Run(this);
        }

        if (item.Context is not null)
        {
            ExecutionContext.Restore(item.Context);
        }

        var activity = StartRunActivity();
        ItemOutcome outcome;
        try
        {
            item.Invoker!(item.Callback, item.State);
            outcome = ItemOutcome.Completed;
        }
        catch (Exception ex)
        {
            outcome = ItemOutcome.Failed;
            MarkRunActivityFailed(activity, ex);
            InvokeOnError(item, ex);
        }

        StopRunActivity(activity);
        return outcome;
    }

    /// <summary>
    /// Registers a producer that waits for room, then admits waiting items at once if room appeared meanwhile (or
    /// rejects them if shutdown began meanwhile), so no wake-up can be lost between the producer's check and its
    /// registration.
    /// </summary>
    private ProducerWaiter RegisterWaiter(in QueuedItem item, bool blocking, CancellationToken cancellationToken)
    {
        var deadline = Deadline.After(_timeProvider, WaitTimeout);
        var waiter = blocking ? ProducerWaiter.ForBlockingCaller(item, deadline) : ProducerWaiter.ForAsyncCaller(item, deadline);
        if (!blocking && cancellationToken.CanBeCanceled)
        {
            waiter.Registration = cancellationToken.UnsafeRegister(
                static (state, token) =>
                {
                    var (executor, waiter) = ((BoundedExecutor, ProducerWaiter))state!;
                    executor.CancelWaiter(waiter, token);
                },
                (this, waiter));
        }

        _producers.Add(waiter);
        if (deadline != Deadline.Never)
        {
            _watchdogSignal.Set(); // the watchdog keeps the wait's deadline
        }

        if (IsShutdown)
        {
            RejectAllWaiters();
        }
        else
        {
            AdmitWaiters();
        }

        return waiter;
    }

    /// <summary>Blocks a producer until its item is admitted, rejected, or its token is cancelled.</summary>
    private void AwaitAdmission(ProducerWaiter waiter, CancellationToken cancellationToken)
    {
        Exception? failure = null;
        try
        {
            if (waiter.Outcome == ProducerWaitOutcome.Waiting)
            {
                NoteBlockingWait(BlockingWaitKind.WaitForRoom);
            }

            if (!waiter.WaitForOutcome(cancellationToken))
            {
                if (_producers.TryRemove(waiter))
                {
                    CountCancelledWait(waiter.Item);
                    throw new OperationCanceledException(cancellationToken);
                }

                // Another party took the waiter first (admitted or rejected it): its decision stands.
                waiter.WaitForOutcome();
            }

            if (waiter.Outcome != ProducerWaitOutcome.Admitted)
            {
                failure = waiter.Exception!;
            }
        }
        finally
        {
            waiter.ReleaseBlocking();
        }

        if (failure is not null)
        {
            throw failure;
        }
    }

    /// <summary>Cancels an asynchronous producer's wait, if it still waits.</summary>
    private void CancelWaiter(ProducerWaiter waiter, CancellationToken cancellationToken)
    {
        if (_producers.TryRemove(waiter))
        {
            if (!waiter.IsProbe)
            {
                CountCancelledWait(waiter.Item);
            }

            waiter.Complete(ProducerWaitOutcome.Cancelled, new OperationCanceledException(cancellationToken));
        }
    }

    private void CountCancelledWait(in QueuedItem item)
    {
        if (item.Awaited is { } awaited && awaited.TryClaim())
        {
            awaited.Cancel();
        }

        Interlocked.Increment(ref _cancelledBeforeQueue);
    }

    /// <summary>
    /// Hands free slots to waiting producers, oldest first: each admitted item is written by this thread, so a
    /// blocked or awaiting producer needs no thread of its own (and no ThreadPool thread) for its item to get in.
    /// </summary>
    private void AdmitWaiters()
    {
        while (_producers.Any)
        {
            ProducerWaiter? admitted = null;
            lock (_producers.SyncObj)
            {
                var oldest = _producers.OldestUnsynchronized;
                if (oldest is { IsProbe: true })
                {
                    // A writer waiting to hear that there is room: tell it, take no slot.
                    if (_queue.Count < _queueCapacity && !_queue.IsShutdown)
                    {
                        _producers.RemoveUnsynchronized(oldest);
                        admitted = oldest;
                    }
                }
                else if (oldest is not null && _queue.TryAdmit(_queueCapacity, out var ticket) == Admission.Admitted)
                {
                    _producers.RemoveUnsynchronized(oldest);
                    _queue.Write(ticket, oldest.Item);
                    admitted = oldest;
                }
            }

            if (admitted is null)
            {
                return;
            }

            if (!admitted.IsProbe)
            {
                WakeWorkerUnlessOneSpins();
            }

            admitted.Registration.Unregister();
            admitted.Complete(ProducerWaitOutcome.Admitted);
        }
    }

    /// <summary>Rejects every waiting producer (shutdown).</summary>
    private void RejectAllWaiters()
    {
        foreach (var waiter in _producers.RemoveAll())
        {
            RejectWaiter(waiter, RejectionReason.ShutDown);
        }
    }

    /// <summary>Rejects the waiting producers whose wait timed out (called by the watchdog).</summary>
    private void RejectExpiredWaiters(long now)
    {
        if (_producers.RemoveExpired(now) is { } expired)
        {
            foreach (var waiter in expired)
            {
                RejectWaiter(waiter, RejectionReason.WaitTimedOut);
            }
        }
    }

    private void RejectWaiter(ProducerWaiter waiter, RejectionReason reason)
    {
        waiter.Registration.Unregister();
        if (waiter.IsProbe)
        {
            waiter.Complete(ProducerWaitOutcome.Rejected);
            return;
        }

        var exception = Reject(waiter.Item, reason);
        waiter.Complete(ProducerWaitOutcome.Rejected, exception);
    }

    /// <summary>
    /// <see cref="RunAsync{TResult}(Func{TResult}, CancellationToken)"/> for the library's own adapters, whose
    /// <paramref name="function"/> wraps the caller's work: <paramref name="describedBy"/> (the caller's delegate, or a
    /// task) is what <see cref="WorkItem.Description"/> then names.
    /// </summary>
    internal Task<TResult> RunAsync<TResult>(Func<TResult> function, object describedBy, CancellationToken cancellationToken) =>
        RunCore<TResult>(function, cancellationToken, describedBy);

    /// <summary>
    /// Queues an item if there is room now, for a channel writer's <c>TryWrite</c>. Unlike
    /// <see cref="TryExecute{TState}(Action{TState}, TState)"/>, an item that finds the queue full (or the executor shut
    /// down) is left with its producer: it was never submitted, so it is neither counted nor reported, and a producer
    /// that retries after <see cref="WaitForRoomAsync"/> is not counted as rejected once per attempt.
    /// </summary>
    internal bool TryQueue<TState>(Action<TState> action, TState state)
    {
        // Built before its slot is taken, as every submit does, so a worker that claims the slot waits the least.
        var item = NewItem(action, state, StateInvoker<TState>.Instance);
        if (_queue.TryAdmit(_queueCapacity, out var ticket) != Admission.Admitted)
        {
            return false;
        }

        Publish(ticket, item);
        return true;
    }

    /// <summary>
    /// Completes with <see langword="true"/> as soon as the queue has room (at once if it has), whatever the policy, or
    /// <see langword="false"/> once the executor is shut down. Takes no slot: another producer may fill it first, as with
    /// any channel writer. The worker that frees a slot completes the wait itself, as it admits a Wait-policy producer's
    /// item, so no ThreadPool thread is needed for the wake-up (only for the awaiting producer's continuation).
    /// </summary>
    internal ValueTask<bool> WaitForRoomAsync(CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<bool>(cancellationToken);
        }

        if (_queue.IsShutdown)
        {
            return new ValueTask<bool>(false);
        }

        // Under the Wait policy, producers already waiting for room come first; under the others nobody lines up, so
        // room is room.
        if (_queue.Count < _queueCapacity && (_policy != RejectionPolicy.Wait || !_producers.Any))
        {
            return new ValueTask<bool>(true);
        }

        var probe = ProducerWaiter.ForProbe();
        if (cancellationToken.CanBeCanceled)
        {
            probe.Registration = cancellationToken.UnsafeRegister(
                static (state, token) =>
                {
                    var (executor, waiter) = ((BoundedExecutor, ProducerWaiter))state!;
                    executor.CancelWaiter(waiter, token);
                },
                (this, probe));
        }

        _producers.Add(probe);
        if (IsShutdown)
        {
            RejectAllWaiters();
        }
        else
        {
            AdmitWaiters();
        }

        return new ValueTask<bool>(probe.ProbeTask!);
    }
}
