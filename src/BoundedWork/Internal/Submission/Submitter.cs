namespace BoundedWork.Internal;

/// <summary>
/// Takes submitted items in: admits each into the queue and wakes a worker for it, or, when the queue is full, applies
/// the rejection policy in force.
/// </summary>
/// <remarks>
/// <para>
/// The path of an item that finds room is the executor's hot path: build the <see cref="QueuedItem"/> (a struct: nothing
/// is allocated for a fire-and-forget item), take a ticket (<see cref="TicketQueue.TryAdmit"/>), write the item, and
/// wake a parked worker unless one spins (<see cref="WorkerPool.WakeOneUnlessOneSpins"/>). No lock, no allocation,
/// no ThreadPool thread.
/// </para>
/// <para>
/// When the queue is full (Java's policy names, .NET's semantics): Abort rejects the item; Discard drops it;
/// DiscardOldest evicts the oldest queued item and takes its place (one eviction per admission, even while the queue is
/// above a capacity just lowered); CallerRuns runs it on the submitting thread (<see cref="ItemRunner.RunOnCaller"/>);
/// Wait spins briefly for room and then hands the item to <see cref="WaitingProducers"/>. A Wait-policy submit from
/// one of the executor's own workers runs the item inline instead: blocking a worker on its own full queue could
/// deadlock the executor. After shutdown every item is rejected. Every path counts the item and reports it
/// (<see cref="OutcomeCounters"/>); an awaited item's task carries its fate. Tests: <c>RejectionPolicyTests</c>,
/// <c>WaitPolicyTests</c>, <c>CancellationTests</c>.
/// </para>
/// </remarks>
internal sealed class Submitter(
    BoundedExecutor owner,
    TicketQueue queue,
    WorkerPool pool,
    WaitingProducers producers,
    OutcomeCounters outcomes,
    ItemRunner runner,
    ExecutorInstruments instruments,
    TimeProvider timeProvider,
    ItemClock itemClock,
    bool flowExecutionContext,
    TenantBook tenants)
{
    private enum SubmitStatus
    {
        /// <summary>The item is queued, ran on the caller, or was discarded (and reported).</summary>
        Done,

        /// <summary>The item was rejected; the exception is for the caller.</summary>
        Rejected,

        /// <summary>The item waits for room with a registered <see cref="ProducerWaiter"/>.</summary>
        Waiting,
    }

    /// <summary>Builds a fire-and-forget item, stamped now, with the caller's execution context unless flowing it is off.</summary>
    public QueuedItem NewItem(object callback, object? state, Action<object, object?> invoker) =>
        new(callback, state, invoker, flowExecutionContext ? ExecutionContext.Capture() : null, itemClock.Now(), PreciseStamp());

    /// <summary><c>TryExecute</c>: queued if there is room now, otherwise rejected (counted and reported).</summary>
    public bool TryExecute(in QueuedItem item)
    {
        var admission = queue.TryAdmit(owner.Settings.QueueCapacity, out var ticket);
        if (admission == Admission.Admitted)
        {
            Publish(ticket, item);
            return true;
        }

        outcomes.NotRun(item, admission == Admission.ShutDown ? RejectionReason.ShutDown : RejectionReason.QueueFull);
        return false;
    }

    /// <summary><c>Execute</c>: applies the policy; a Wait-policy producer blocks its thread until its item is admitted.</summary>
    public void Execute(in QueuedItem item, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            outcomes.CancelledBeforeQueue();
            cancellationToken.ThrowIfCancellationRequested();
        }

        switch (Submit(item, blocking: true, cancellationToken, out var waiter, out var rejection))
        {
            case SubmitStatus.Rejected:
                throw rejection!;
            case SubmitStatus.Waiting:
                producers.AwaitAdmission(waiter!, cancellationToken);
                break;
        }
    }

    /// <summary><c>ExecuteAsync</c>: applies the policy; a Wait-policy producer awaits admission.</summary>
    public ValueTask ExecuteAsync(in QueuedItem item, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            outcomes.CancelledBeforeQueue();
            return ValueTask.FromCanceled(cancellationToken);
        }

        return Submit(item, blocking: false, cancellationToken, out var waiter, out var rejection) switch
        {
            SubmitStatus.Rejected => ValueTask.FromException(rejection!),
            SubmitStatus.Waiting => new ValueTask(waiter!.Task!),
            _ => ValueTask.CompletedTask,
        };
    }

    /// <summary><c>RunAsync</c>: the item is its own task; whatever the policy decides reaches the caller through it.</summary>
    public Task<TResult> Run<TResult>(Delegate work, object? describedBy, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            outcomes.CancelledBeforeQueue();
            return Task.FromCanceled<TResult>(cancellationToken);
        }

        var runItem = new RunItem<TResult>(work, flowExecutionContext ? ExecutionContext.Capture() : null, describedBy);
        runItem.RegisterCancellation(cancellationToken);
        _ = Submit(new QueuedItem(runItem, null, null, null, itemClock.Now(), PreciseStamp()), blocking: false, cancellationToken, out _, out _);
        return runItem.Task;
    }

    /// <summary>
    /// A channel writer's <c>TryWrite</c>: queued if there is room now; otherwise left with its producer, neither
    /// counted nor reported (it was never submitted).
    /// </summary>
    public bool TryQueue(in QueuedItem item)
    {
        if (queue.TryAdmit(owner.Settings.QueueCapacity, out var ticket) != Admission.Admitted)
        {
            return false;
        }

        Publish(ticket, item);
        return true;
    }

    /// <summary>
    /// A channel writer's <c>WaitToWriteAsync</c>: <see langword="true"/> as soon as the queue has room (at once if it
    /// has), whatever the policy, or <see langword="false"/> once the executor is shut down. Takes no slot.
    /// </summary>
    public ValueTask<bool> WaitForRoomAsync(CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<bool>(cancellationToken);
        }

        if (queue.IsShutdown)
        {
            return new ValueTask<bool>(false);
        }

        // Under the Wait policy, producers already waiting for room come first; under the others nobody lines up, so
        // room is room.
        var settings = owner.Settings;
        if (queue.Count < settings.QueueCapacity && (settings.RejectionPolicy != RejectionPolicy.Wait || !producers.Any))
        {
            return new ValueTask<bool>(true);
        }

        return new ValueTask<bool>(producers.WaitForRoomAsync(cancellationToken));
    }

    /// <summary><c>TryExecute</c> for a tenant: queued if the tenant is below its bound and there is room now.</summary>
    public bool TryExecute(string tenant, in QueuedItem item) =>
        owner.Settings.FairShare is null ? TryExecute(item) : SubmitForTenant(tenant, item, blocking: false, tryOnly: true, default, out _, out _) == SubmitStatus.Done;

    /// <summary><c>Execute</c> for a tenant (see <see cref="SubmitForTenant"/>).</summary>
    public void Execute(string tenant, in QueuedItem item, CancellationToken cancellationToken)
    {
        if (owner.Settings.FairShare is null)
        {
            Execute(item, cancellationToken);
            return;
        }

        if (cancellationToken.IsCancellationRequested)
        {
            outcomes.CancelledBeforeQueue();
            cancellationToken.ThrowIfCancellationRequested();
        }

        switch (SubmitForTenant(tenant, item, blocking: true, tryOnly: false, cancellationToken, out var waiter, out var rejection))
        {
            case SubmitStatus.Rejected:
                throw rejection!;
            case SubmitStatus.Waiting:
                producers.AwaitAdmission(waiter!, cancellationToken);
                break;
        }
    }

    /// <summary><c>ExecuteAsync</c> for a tenant (see <see cref="SubmitForTenant"/>).</summary>
    public ValueTask ExecuteAsync(string tenant, in QueuedItem item, CancellationToken cancellationToken)
    {
        if (owner.Settings.FairShare is null)
        {
            return ExecuteAsync(item, cancellationToken);
        }

        if (cancellationToken.IsCancellationRequested)
        {
            outcomes.CancelledBeforeQueue();
            return ValueTask.FromCanceled(cancellationToken);
        }

        return SubmitForTenant(tenant, item, blocking: false, tryOnly: false, cancellationToken, out var waiter, out var rejection) switch
        {
            SubmitStatus.Rejected => ValueTask.FromException(rejection!),
            SubmitStatus.Waiting => new ValueTask(waiter!.Task!),
            _ => ValueTask.CompletedTask,
        };
    }

    /// <summary><c>RunAsync</c> for a tenant: the item is its own task.</summary>
    public Task<TResult> Run<TResult>(string tenant, Delegate work, CancellationToken cancellationToken)
    {
        if (owner.Settings.FairShare is null)
        {
            return Run<TResult>(work, describedBy: null, cancellationToken);
        }

        if (cancellationToken.IsCancellationRequested)
        {
            outcomes.CancelledBeforeQueue();
            return Task.FromCanceled<TResult>(cancellationToken);
        }

        var runItem = new RunItem<TResult>(work, flowExecutionContext ? ExecutionContext.Capture() : null, null);
        runItem.RegisterCancellation(cancellationToken);
        _ = SubmitForTenant(tenant, new QueuedItem(runItem, null, null, null, itemClock.Now(), PreciseStamp()), blocking: false, tryOnly: false, cancellationToken, out _, out _);
        return runItem.Task;
    }

    /// <summary>
    /// Admits a tenant's item under fair share: a reservation against the tenant's queue bound, then a slot of the queue
    /// for its placeholder (<see cref="TenantEntry"/>), the item joining its tenant's lane just before the slot is
    /// written. Past the tenant's bound the policy applies to that tenant alone (Abort and Wait refuse at once, Discard
    /// drops, DiscardOldest evicts the tenant's own oldest, CallerRuns runs it here). When the queue is full, the
    /// longest backlog gives way if <see cref="FairShareSettings.ShedLongestBacklog"/> says so, and otherwise the policy
    /// applies as for any item. Every refusal is counted under the tenant as well.
    /// </summary>
    private SubmitStatus SubmitForTenant(string tenant, in QueuedItem item, bool blocking, bool tryOnly, CancellationToken cancellationToken, out ProducerWaiter? waiter, out RejectedExecutionException? rejection)
    {
        waiter = null;
        rejection = null;
        var policy = owner.Settings.RejectionPolicy;
        var entry = new TenantEntry(tenant, item);
        if (!tryOnly && policy == RejectionPolicy.DiscardOldest)
        {
            if (ReserveOrSwapOldest(entry))
            {
                return SubmitStatus.Done;
            }
        }
        else if (!tenants.TryReserve(tenant))
        {
            if (!tryOnly)
            {
                switch (policy)
                {
                    case RejectionPolicy.Discard:
                        tenants.Refused(tenant);
                        outcomes.NotRun(item, RejectionReason.Discarded);
                        return SubmitStatus.Done;
                    case RejectionPolicy.CallerRuns:
                        return RunTenantItemOnCaller(tenant, item, out rejection);
                }
            }

            tenants.Refused(tenant);
            rejection = outcomes.NotRun(item, RejectionReason.TenantLimit);
            return SubmitStatus.Rejected;
        }

        var placeholder = entry.Placeholder;
        if (!tryOnly && policy == RejectionPolicy.Wait && producers.Any && !pool.IsWorkerThread)
        {
            // Producers wait already: line up behind them (the item joins its lane when it is admitted).
            waiter = producers.Wait(placeholder, blocking, WaitDeadline(), cancellationToken);
            return SubmitStatus.Waiting;
        }

        while (true)
        {
            var admission = queue.TryAdmit(Math.Max(0, owner.Settings.QueueCapacity - tenants.Deferred), out var ticket);
            if (admission == Admission.Admitted)
            {
                tenants.Admit(entry);
                Publish(ticket, placeholder);
                return SubmitStatus.Done;
            }

            if (admission == Admission.ShutDown)
            {
                tenants.Unreserve(tenant, refused: true);
                rejection = outcomes.NotRun(item, RejectionReason.ShutDown);
                return SubmitStatus.Rejected;
            }

            if (owner.Settings.FairShare?.ShedLongestBacklog == true)
            {
                if (tenants.TryShed(entry, out var shed))
                {
                    outcomes.NotRun(shed.Item, RejectionReason.Evicted, claimed: false);
                    return SubmitStatus.Done;
                }

                tenants.Unreserve(tenant, refused: true);
                rejection = outcomes.NotRun(item, RejectionReason.QueueFull);
                return SubmitStatus.Rejected;
            }

            switch (tryOnly ? RejectionPolicy.Abort : policy)
            {
                case RejectionPolicy.Discard:
                    tenants.Unreserve(tenant, refused: true);
                    outcomes.NotRun(item, RejectionReason.Discarded);
                    return SubmitStatus.Done;
                case RejectionPolicy.DiscardOldest:
                    if (EvictOldest())
                    {
                        admission = queue.TryAdmit(int.MaxValue, out ticket);
                        if (admission == Admission.Admitted)
                        {
                            tenants.Admit(entry);
                            Publish(ticket, placeholder);
                            return SubmitStatus.Done;
                        }
                    }

                    continue;
                case RejectionPolicy.CallerRuns:
                case RejectionPolicy.Wait when pool.IsWorkerThread:
                    tenants.Unreserve(tenant, refused: false);
                    return RunTenantItemOnCaller(tenant, item, out rejection);
                case RejectionPolicy.Wait:
                    if (producers.TrySpinForRoom(placeholder))
                    {
                        return SubmitStatus.Done;
                    }

                    waiter = producers.Wait(placeholder, blocking, WaitDeadline(), cancellationToken);
                    return SubmitStatus.Waiting;
                default:
                    tenants.Unreserve(tenant, refused: true);
                    rejection = outcomes.NotRun(item, RejectionReason.QueueFull);
                    return SubmitStatus.Rejected;
            }
        }
    }

    /// <summary>CallerRuns for a tenant's item: it runs here, outside the tenant's running bound; a refusal is counted under the tenant.</summary>
    /// <summary>
    /// DiscardOldest at the tenant's own bound, one decision under the book's lock: reserves room when the tenant is
    /// below its bound (<see langword="false"/>: the caller goes on to admit the item), or swaps the new item for the
    /// tenant's oldest queued one, which is counted as evicted (<see langword="true"/>: done). When every item the tenant
    /// holds is still on its way in (reserved by producers racing this one, or waiting for room), there is none to swap
    /// yet: it waits for them to land or leave and decides again, as the queue's own DiscardOldest does when the queue is
    /// full of items on their way in. Never refuses: DiscardOldest keeps the newest.
    /// </summary>
    private bool ReserveOrSwapOldest(TenantEntry entry)
    {
        var spin = default(SpinWait);
        while (true)
        {
            switch (tenants.ReserveOrSwapOldest(entry, out var evicted))
            {
                case TenantRoom.Reserved:
                    return false;
                case TenantRoom.Swapped:
                    outcomes.NotRun(evicted!.Item, RejectionReason.Evicted, claimed: false);
                    return true;
                default:
                    spin.SpinOnce();
                    break;
            }
        }
    }

    private SubmitStatus RunTenantItemOnCaller(string tenant, in QueuedItem item, out RejectedExecutionException? rejection)
    {
        if (runner.RunOnCaller(item, out rejection))
        {
            return SubmitStatus.Done;
        }

        tenants.Refused(tenant);
        return SubmitStatus.Rejected;
    }

    /// <summary>Admits the item, or applies the rejection policy when the queue is full (see the remarks).</summary>
    private SubmitStatus Submit(in QueuedItem item, bool blocking, CancellationToken cancellationToken, out ProducerWaiter? waiter, out RejectedExecutionException? rejection)
    {
        waiter = null;
        rejection = null;
        var policy = owner.Settings.RejectionPolicy;
        if (policy == RejectionPolicy.Wait && producers.Any && !pool.IsWorkerThread)
        {
            // Producers wait already: line up behind them instead of taking a slot freed for the oldest of them.
            waiter = producers.Wait(item, blocking, WaitDeadline(), cancellationToken);
            return SubmitStatus.Waiting;
        }

        while (true)
        {
            var admission = queue.TryAdmit(owner.Settings.QueueCapacity, out var ticket);
            if (admission == Admission.Admitted)
            {
                Publish(ticket, item);
                return SubmitStatus.Done;
            }

            if (admission == Admission.ShutDown)
            {
                rejection = outcomes.NotRun(item, RejectionReason.ShutDown);
                return SubmitStatus.Rejected;
            }

            switch (policy)
            {
                case RejectionPolicy.Discard:
                    outcomes.NotRun(item, RejectionReason.Discarded);
                    return SubmitStatus.Done;
                case RejectionPolicy.DiscardOldest:
                    if (EvictOldest())
                    {
                        // The new item takes the evicted one's place, even while the queue is above a capacity that
                        // was just lowered: one eviction per admission, never more.
                        admission = queue.TryAdmit(int.MaxValue, out ticket);
                        if (admission == Admission.Admitted)
                        {
                            Publish(ticket, item);
                            return SubmitStatus.Done;
                        }
                    }

                    continue;
                case RejectionPolicy.CallerRuns:
                case RejectionPolicy.Wait when pool.IsWorkerThread:
                    // Blocking a worker on its own full queue could deadlock the executor: run inline instead.
                    return runner.RunOnCaller(item, out rejection) ? SubmitStatus.Done : SubmitStatus.Rejected;
                case RejectionPolicy.Wait:
                    if (producers.TrySpinForRoom(item))
                    {
                        return SubmitStatus.Done;
                    }

                    waiter = producers.Wait(item, blocking, WaitDeadline(), cancellationToken);
                    return SubmitStatus.Waiting;
                default:
                    rejection = outcomes.NotRun(item, RejectionReason.QueueFull);
                    return SubmitStatus.Rejected;
            }
        }
    }

    /// <summary>Writes an admitted item and wakes a parked worker if one is parked and none spins.</summary>
    private void Publish(long ticket, in QueuedItem item)
    {
        queue.Write(ticket, item);
        pool.WakeOneUnlessOneSpins();
    }

    /// <summary>Takes the oldest unclaimed item out of a full queue and reports it as evicted; false if there was none.</summary>
    private bool EvictOldest()
    {
        long knownAdmissions = 0;
        if (!queue.TryClaim(ref knownAdmissions, out var ticket, out _))
        {
            // The queue drained or shut down meanwhile: the caller retries admission.
            return false;
        }

        var evicted = queue.ReadClaimed(ticket);
        if (TenantEntry.IsPlaceholder(evicted, out var placeholder))
        {
            // A tenant's slot: the item to evict is in the lanes (the oldest of that tenant, or of the longest backlog).
            if (tenants.TakeForEviction(placeholder) is { } entry)
            {
                outcomes.NotRun(entry.Item, RejectionReason.Evicted);
            }

            return true;
        }

        outcomes.NotRun(evicted, RejectionReason.Evicted);
        return true;
    }

    private long WaitDeadline() => Deadline.After(timeProvider, owner.Settings.WaitTimeout);

    /// <summary>A high-resolution timestamp for the wait-duration histogram, taken only while someone listens to it.</summary>
    private long PreciseStamp() => instruments.WaitDurationEnabled ? System.Diagnostics.Stopwatch.GetTimestamp() : 0;
}
