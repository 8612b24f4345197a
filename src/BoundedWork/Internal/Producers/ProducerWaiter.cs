namespace BoundedWork.Internal;

/// <summary>
/// A producer waiting for room: a Wait-policy submit with its item, or a probe (a channel writer's
/// <c>WaitToWriteAsync</c>, which holds no item and only waits to hear that there is room). The party that takes the
/// waiter out of <see cref="WaitingProducers"/> decides its fate (admitted, timed out, shut down, cancelled), counts it
/// and then <see cref="Complete"/>s it.
/// </summary>
internal sealed class ProducerWaiter : IDisposable
{
    /// <summary>
    /// The calling thread's spare blocking waiter: a producer that blocks for room again and again (a producer that
    /// outpaces the workers) reuses one waiter, so waiting allocates nothing. Rented out while in use, so a nested
    /// wait on the same thread (from a callback) gets a fresh one.
    /// </summary>
    [ThreadStatic]
    private static ProducerWaiter? t_spareBlockingWaiter;

    private readonly ManualResetEventSlim? _event;
    private readonly TaskCompletionSource? _completion;
    private readonly TaskCompletionSource<bool>? _probe;
    private int _outcome;

    private ProducerWaiter()
    {
        Deadline = Internal.Deadline.Never;
        Node = new LinkedListNode<ProducerWaiter>(this);
        _probe = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
    }

    private ProducerWaiter(in QueuedItem item, long deadline, bool blocking)
    {
        Item = item;
        Deadline = deadline;
        Node = new LinkedListNode<ProducerWaiter>(this);
        if (blocking)
        {
            _event = new ManualResetEventSlim(false, spinCount: 1);
        }
        else if (item.Awaited is null)
        {
            // A fire-and-forget item submitted asynchronously: its caller awaits admission, on the ThreadPool.
            _completion = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }
    }

    public QueuedItem Item { get; private set; }

    /// <summary>
    /// Gets a value indicating whether this waiter only waits for room to appear (a channel writer's
    /// <c>WaitToWriteAsync</c>): it carries no item, takes no slot and is never counted.
    /// </summary>
    public bool IsProbe => _probe is not null;

    /// <summary>Gets the task a probe's caller awaits: <see langword="true"/> when there is room, <see langword="false"/> after shutdown.</summary>
    public Task<bool>? ProbeTask => _probe?.Task;

    /// <summary>Gets when the wait times out, as a timestamp of the executor's clock (<see cref="Internal.Deadline.Never"/>: never).</summary>
    public long Deadline { get; private set; }

    public LinkedListNode<ProducerWaiter> Node { get; }

    public ProducerWaitOutcome Outcome => (ProducerWaitOutcome)Volatile.Read(ref _outcome);

    /// <summary>Gets the exception to surface when the item was not admitted.</summary>
    public Exception? Exception { get; private set; }

    /// <summary>Gets the task an asynchronous fire-and-forget caller awaits, or <see langword="null"/>.</summary>
    public Task? Task => _completion?.Task;

    public CancellationTokenRegistration Registration { get; set; }

    /// <summary>Gets a waiter for a producer that blocks its thread: the thread's spare one if it has one.</summary>
    public static ProducerWaiter ForBlockingCaller(in QueuedItem item, long deadline)
    {
        var waiter = t_spareBlockingWaiter;
        if (waiter is null)
        {
            return new ProducerWaiter(item, deadline, blocking: true);
        }

        t_spareBlockingWaiter = null;
        waiter.Item = item;
        waiter.Deadline = deadline;
        return waiter;
    }

    public static ProducerWaiter ForAsyncCaller(in QueuedItem item, long deadline) => new(item, deadline, blocking: false);

    public static ProducerWaiter ForProbe() => new();

    /// <summary>Records the outcome and releases whoever waits. Called once, by the party that removed the waiter.</summary>
    public void Complete(ProducerWaitOutcome outcome, Exception? exception = null)
    {
        Exception = exception;
        Volatile.Write(ref _outcome, (int)outcome);
        if (_probe is not null)
        {
            _ = outcome == ProducerWaitOutcome.Cancelled && exception is OperationCanceledException probeCancelled
                ? _probe.TrySetCanceled(probeCancelled.CancellationToken)
                : _probe.TrySetResult(outcome == ProducerWaitOutcome.Admitted);
        }
        else if (_event is not null)
        {
            _event.Set();
        }
        else if (_completion is not null)
        {
            _ = outcome == ProducerWaitOutcome.Admitted ? _completion.TrySetResult()
                : exception is OperationCanceledException cancelled ? _completion.TrySetCanceled(cancelled.CancellationToken)
                : _completion.TrySetException(exception!);
        }
    }

    /// <summary>Blocks the producer's thread (a kernel wait) until the waiter is completed or the token is cancelled.</summary>
    /// <returns><see langword="true"/> if completed; <see langword="false"/> if the token was cancelled first.</returns>
    public bool WaitForOutcome(CancellationToken cancellationToken)
    {
        try
        {
            _event!.Wait(cancellationToken);
            return true;
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            return false;
        }
    }

    /// <summary>Waits for an outcome another party is about to record (after losing the race to remove the waiter).</summary>
    public void WaitForOutcome() => _event!.Wait();

    /// <summary>
    /// Called by a blocking producer when its wait is over: keeps the waiter as the thread's spare if its outcome is
    /// recorded (so no other party touches it any more), otherwise disposes it. The item is forgotten either way, so
    /// a spare never keeps a submitted delegate or its state alive.
    /// </summary>
    public void ReleaseBlocking()
    {
        if (_event is null || Outcome == ProducerWaitOutcome.Waiting || Node.List is not null)
        {
            Dispose();
            return;
        }

        Item = default;
        Exception = null;
        Volatile.Write(ref _outcome, (int)ProducerWaitOutcome.Waiting);
        _event.Reset();
        t_spareBlockingWaiter = this;
    }

    /// <summary>Releases the blocking caller's event (it holds no kernel handle unless one was asked for).</summary>
    public void Dispose() => _event?.Dispose();
}

internal enum ProducerWaitOutcome
{
    Waiting,
    Admitted,
    Rejected,
    Cancelled,
}
