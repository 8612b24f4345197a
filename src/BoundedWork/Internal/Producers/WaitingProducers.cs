using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// Producers waiting for room in the queue, oldest first: Wait-policy submits (blocking or asynchronous) with their
/// items, and channel writers' probes. It admits them, oldest first, whenever room appears; and rejects them at their
/// timeout, when they are cancelled, or at shutdown.
/// </summary>
/// <remarks>
/// <para>
/// <b>Who admits.</b> Whoever frees or adds room calls <see cref="AdmitWaiting"/>: a worker after each claim, a
/// capacity increase, and a producer right after it registers. It admits the oldest waiter's item itself (takes the
/// slot, writes the item, wakes a worker), so neither a blocked producer thread nor an awaiting task has to run, and no
/// ThreadPool thread has to exist, for a waiting item to get in. A blocked producer is woken by a kernel event the
/// admitting thread sets; an asynchronous one's continuation is the only step that needs the pool.
/// </para>
/// <para>
/// <b>One party decides each waiter.</b> Every waiter is taken out of the list under <see cref="SyncObj"/> by exactly
/// one party (the admitter, the watchdog at its deadline, its cancellation, shutdown), which then counts and reports it
/// (through <see cref="IProducerHost"/>) and completes it after releasing the lock. A party that finds the waiter
/// already gone leaves it to the one that took it.
/// </para>
/// <para>
/// <b>No admission is lost.</b> A producer registers (adds itself under the lock, an interlocked increment of
/// <c>_count</c>) and then tries to admit; a worker claims (an interlocked step) and then reads <see cref="Any"/>. At
/// least one sees the other: either the registering producer sees the freed slot, or the worker sees the producer and
/// admits it. Likewise a registration that races shutdown re-checks the queue's shutdown after adding itself, and
/// shutdown stops admission before it rejects the waiters. Order: oldest first; a newcomer lines up behind waiters
/// instead of taking a slot freed for them (<see cref="BoundedExecutor"/> checks <see cref="Any"/> first).
/// </para>
/// <para>Tests: <c>WaitingProducersTests</c> (this component on its own), <c>WaitPolicyTests</c>, <c>ChannelWriterTests</c>.</para>
/// </remarks>
internal sealed class WaitingProducers(TicketQueue queue, IProducerHost host)
{
    /// <summary>How many times a Wait-policy producer retries for room before it registers and blocks.</summary>
    private const int SpinsForRoom = 16;

    /// <summary>The most free slots a retrying Wait-policy producer waits for (see <see cref="TrySpinForRoom"/>).</summary>
    private const int MaxRoomBatch = 64;

    private readonly LinkedList<ProducerWaiter> _waiters = new();
    private PaddedInt32 _count;

    public object SyncObj => _waiters;

    /// <summary>Gets a value indicating whether any producer waits. A full-fence read pairs with the worker's claim.</summary>
    public bool Any => Volatile.Read(ref _count.Value) > 0;

    /// <summary>Gets the number of waiting producers.</summary>
    public int Count => Volatile.Read(ref _count.Value);

    /// <summary>
    /// Before a Wait-policy producer registers and blocks, it retries for a few microseconds: with short items a slot
    /// frees up within that time, and a producer that gets it this way costs no allocation and no kernel wait for
    /// itself or for the worker that would otherwise have to release it. Nobody waits in line meanwhile (the caller
    /// checked <see cref="Any"/>), so taking the slot barges past no one.
    /// </summary>
    /// <remarks>
    /// While it retries, the producer waits for a batch of free slots (<see cref="RoomBatch"/>), not for the first
    /// one; only its last retry takes any free slot. A producer that outpaces the workers would otherwise take each
    /// slot the moment a worker frees it, and so read the workers' claim counter once per item: every claim would
    /// then find that cache line pulled away to the producer's core. Waiting for a batch lets the workers claim a run
    /// of items undisturbed, and the producer then fills the batch reading only its own side's counter (see
    /// <see cref="TicketQueue.TryAdmit"/>). The queue stays nearly full meanwhile, so the workers never run dry.
    /// benchmarks/compare-java.sh measures the difference in its one-producer, one-worker shape.
    /// </remarks>
    /// <returns><see langword="true"/> if the item got in; otherwise the producer should register.</returns>
    public bool TrySpinForRoom(in QueuedItem item)
    {
        var spinner = default(SpinWait);
        var capacity = host.QueueCapacity;
        var batch = RoomBatch(capacity);
        for (var i = 0; i < SpinsForRoom; i++)
        {
            spinner.SpinOnce(sleep1Threshold: -1);
            if (Any)
            {
                return false;
            }

            if (i < SpinsForRoom - 1 && !queue.HasRoomFor(capacity, batch))
            {
                continue;
            }

            var admission = queue.TryAdmit(capacity, out var ticket);
            if (admission == Admission.Admitted)
            {
                host.Admitting(item);
                queue.Write(ticket, item);
                host.OnAdmitted();
                return true;
            }

            if (admission == Admission.ShutDown)
            {
                return false; // registering will reject it
            }
        }

        return false;
    }

    /// <summary>Registers a producer that waits for room with its item; see <see cref="Register"/>.</summary>
    /// <param name="item">The item to admit.</param>
    /// <param name="blocking"><see langword="true"/> for a producer that blocks its thread (<see cref="AwaitAdmission"/> follows).</param>
    /// <param name="deadline">When the wait times out, on the executor's clock (<see cref="Deadline.Never"/>: never).</param>
    /// <param name="cancellationToken">Ends an asynchronous wait (a blocking one is ended in <see cref="AwaitAdmission"/>).</param>
    public ProducerWaiter Wait(in QueuedItem item, bool blocking, long deadline, CancellationToken cancellationToken)
    {
        var waiter = blocking ? ProducerWaiter.ForBlockingCaller(item, deadline) : ProducerWaiter.ForAsyncCaller(item, deadline);
        Register(waiter, blocking ? CancellationToken.None : cancellationToken);
        return waiter;
    }

    /// <summary>
    /// Completes with <see langword="true"/> as soon as the queue has room, or <see langword="false"/> once it is shut
    /// down; takes no slot. The party that frees a slot completes it, as it admits a waiting item.
    /// </summary>
    public Task<bool> WaitForRoomAsync(CancellationToken cancellationToken)
    {
        var probe = ProducerWaiter.ForProbe();
        Register(probe, cancellationToken);
        return probe.ProbeTask!;
    }

    /// <summary>Blocks a producer until its item is admitted or rejected, or its token is cancelled.</summary>
    /// <exception cref="RejectedExecutionException">The item was rejected (timed out, shut down).</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first (the item is counted as cancelled).</exception>
    public void AwaitAdmission(ProducerWaiter waiter, CancellationToken cancellationToken)
    {
        Exception? failure = null;
        try
        {
            if (waiter.Outcome == ProducerWaitOutcome.Waiting)
            {
                host.BlockingWait();
            }

            if (!waiter.WaitForOutcome(cancellationToken))
            {
                if (TryRemove(waiter))
                {
                    host.CancelledWhileWaiting(waiter.Item);
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

    /// <summary>Hands free slots to waiting producers, oldest first; the calling thread writes each admitted item.</summary>
    public void AdmitWaiting()
    {
        while (Any)
        {
            ProducerWaiter? admitted = null;
            lock (SyncObj)
            {
                var oldest = _waiters.First?.Value;
                var capacity = host.QueueCapacity;
                if (oldest is { IsProbe: true })
                {
                    // A writer waiting to hear that there is room: tell it, take no slot.
                    if (queue.Count < capacity && !queue.IsShutdown)
                    {
                        RemoveUnsynchronized(oldest);
                        admitted = oldest;
                    }
                }
                else if (oldest is not null && queue.TryAdmit(capacity, out var ticket) == Admission.Admitted)
                {
                    RemoveUnsynchronized(oldest);
                    host.Admitting(oldest.Item);
                    queue.Write(ticket, oldest.Item);
                    admitted = oldest;
                }
            }

            if (admitted is null)
            {
                return;
            }

            if (!admitted.IsProbe)
            {
                host.OnAdmitted();
            }

            admitted.Registration.Unregister();
            admitted.Complete(ProducerWaitOutcome.Admitted);
        }
    }

    /// <summary>Rejects every waiting producer (shutdown).</summary>
    public void RejectAll()
    {
        List<ProducerWaiter> all;
        lock (SyncObj)
        {
            all = [.. _waiters];
            _waiters.Clear();
            Interlocked.Exchange(ref _count.Value, 0);
        }

        foreach (var waiter in all)
        {
            Reject(waiter, RejectionReason.ShutDown);
        }
    }

    /// <summary>Rejects the producers whose wait timed out at or before <paramref name="now"/> (the watchdog).</summary>
    public void RejectExpired(long now)
    {
        List<ProducerWaiter>? expired = null;
        lock (SyncObj)
        {
            var node = _waiters.First;
            while (node is not null)
            {
                var next = node.Next;
                if (node.Value.Deadline <= now)
                {
                    (expired ??= []).Add(node.Value);
                    RemoveUnsynchronized(node.Value);
                }

                node = next;
            }
        }

        if (expired is not null)
        {
            foreach (var waiter in expired)
            {
                Reject(waiter, RejectionReason.WaitTimedOut);
            }
        }
    }

    /// <summary>Gets the earliest deadline of any waiter (<see cref="Deadline.Never"/> when none has one).</summary>
    public long EarliestDeadline()
    {
        if (!Any)
        {
            return Deadline.Never;
        }

        var earliest = Deadline.Never;
        lock (SyncObj)
        {
            foreach (var waiter in _waiters)
            {
                earliest = Math.Min(earliest, waiter.Deadline);
            }
        }

        return earliest;
    }

    /// <summary>How many free slots a retrying producer waits for: a quarter of the capacity, 1 to <see cref="MaxRoomBatch"/>.</summary>
    private static int RoomBatch(int capacity) => Math.Clamp(capacity / 4, 1, MaxRoomBatch);

    /// <summary>
    /// Adds a waiter (an item's or a probe), then admits waiting items at once if room appeared meanwhile, or rejects
    /// them if shutdown began meanwhile, so no wake-up is lost between the producer's check and its registration; and
    /// ends its wait at once if its token was cancelled before it was added (<c>WaitingProducersTests</c>).
    /// </summary>
    private void Register(ProducerWaiter waiter, CancellationToken cancellationToken)
    {
        if (cancellationToken.CanBeCanceled)
        {
            waiter.Registration = cancellationToken.UnsafeRegister(
                static (state, token) =>
                {
                    var (producers, waiter) = ((WaitingProducers, ProducerWaiter))state!;
                    producers.Cancel(waiter, token);
                },
                (this, waiter));
        }

        lock (SyncObj)
        {
            _waiters.AddLast(waiter.Node);
            Interlocked.Increment(ref _count.Value);
        }

        if (cancellationToken.IsCancellationRequested)
        {
            // Cancelled before the waiter lined up: its callback (which may have run inside UnsafeRegister) found
            // nothing to remove. Whichever of the two takes the waiter out ends its wait; the other finds it gone.
            Cancel(waiter, cancellationToken);
        }

        if (waiter.Deadline != Deadline.Never)
        {
            host.OnDeadlineAdded();
        }

        if (queue.IsShutdown)
        {
            RejectAll();
        }
        else
        {
            AdmitWaiting();
        }
    }

    /// <summary>Ends an asynchronous producer's (or a probe's) wait when its token is cancelled, if it still waits.</summary>
    private void Cancel(ProducerWaiter waiter, CancellationToken cancellationToken)
    {
        if (!TryRemove(waiter))
        {
            return;
        }

        if (!waiter.IsProbe)
        {
            host.CancelledWhileWaiting(waiter.Item);
        }

        waiter.Complete(ProducerWaitOutcome.Cancelled, new OperationCanceledException(cancellationToken));
    }

    private void Reject(ProducerWaiter waiter, RejectionReason reason)
    {
        waiter.Registration.Unregister();
        if (waiter.IsProbe)
        {
            waiter.Complete(ProducerWaitOutcome.Rejected);
            return;
        }

        var exception = host.Reject(waiter.Item, reason);
        waiter.Complete(ProducerWaitOutcome.Rejected, exception);
    }

    /// <summary>Removes the waiter if it is still waiting; false if another party already took it.</summary>
    private bool TryRemove(ProducerWaiter waiter)
    {
        lock (SyncObj)
        {
            if (waiter.Node.List is null)
            {
                return false;
            }

            RemoveUnsynchronized(waiter);
            return true;
        }
    }

    private void RemoveUnsynchronized(ProducerWaiter waiter)
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        _waiters.Remove(waiter.Node);
        Interlocked.Decrement(ref _count.Value);
        Debug.Assert(_waiters.Count == Volatile.Read(ref _count.Value), "The waiting count is the list's length.");
    }
}

/// <summary>What <see cref="WaitingProducers"/> needs from its executor.</summary>
internal interface IProducerHost
{
    /// <summary>Gets the queue capacity in force.</summary>
    int QueueCapacity { get; }

    /// <summary>An item took a slot and is about to be written (a tenant's item joins its lane now, under this class's lock).</summary>
    void Admitting(in QueuedItem item)
    {
    }

    /// <summary>An item was admitted and written: wake a worker for it.</summary>
    void OnAdmitted();

    /// <summary>Counts and reports an item that will not run; returns the exception for its producer.</summary>
    RejectedExecutionException Reject(in QueuedItem item, RejectionReason reason);

    /// <summary>Counts an item whose producer stopped waiting (its token was cancelled).</summary>
    void CancelledWhileWaiting(in QueuedItem item);

    /// <summary>A wait with a deadline was registered: the watchdog must keep it.</summary>
    void OnDeadlineAdded();

    /// <summary>A producer is about to block its thread waiting for room.</summary>
    void BlockingWait();
}
