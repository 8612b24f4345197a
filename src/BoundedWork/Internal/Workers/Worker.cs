namespace BoundedWork.Internal;

/// <summary>
/// One dedicated worker thread's bookkeeping. Its counters are written only by its own thread and read by anyone,
/// so counting costs no interlocked operation.
/// </summary>
internal sealed class Worker
{
    [ThreadStatic]
    private static Worker? t_current;

    // The item running now, published for the watchdog and the statistics: _run is 0 while idle and a run number
    // while the fields below describe that run. The fields are written before the run number is published and changed
    // only after it is reset to 0, so a reader that sees the same run number before and after reading the fields
    // read one run's fields, never a mix.
    //
    // Run numbers count the items this worker claimed: its n-th claimed item is run n, also when it skips that item
    // (an awaited item its caller cancelled while queued) and so never publishes it. A worker finishes its items one
    // at a time and in order, and counts each outcome before it takes the next item, so while run n is published the
    // worker has finished exactly n - 1 items, or n once it has counted run n's outcome (see ReadProgress).
    private long _run;
    private long _lastRun;
    private long _runStarted;
    private object? _runCallback;
    private object? _runState;
    private Action<object, object?>? _runInvoker;
    private long _reportedSlowRun;

    private long _completed;
    private long _failed;
    private long _cancelled;

    public Worker(WorkerPool pool, int id, string name)
    {
        Pool = pool;
        Id = id;
        Name = name;
    }

    /// <summary>Gets the worker running on the current thread, or <see langword="null"/>.</summary>
    public static Worker? Current => t_current;

    /// <summary>Gets the pool the worker belongs to.</summary>
    public WorkerPool Pool { get; }

    public int Id { get; }

    /// <summary>Gets the worker thread's name (<c>payments#3</c>).</summary>
    public string Name { get; }

    /// <summary>Gets the worker thread's own clean execution context, restored after each item.</summary>
    public ExecutionContext? CleanContext { get; private set; }

    public long Completed => Volatile.Read(ref _completed);

    public long Failed => Volatile.Read(ref _failed);

    public long Cancelled => Volatile.Read(ref _cancelled);

    /// <summary>The fewest and most spin iterations an idle worker makes before parking (see <see cref="WorkerPool"/>'s SpinForWork).</summary>
    public const int MinSpinBudget = 4;

    /// <inheritdoc cref="MinSpinBudget"/>
    public const int MaxSpinBudget = 32;

    /// <summary>Gets or sets how many spin iterations this worker makes before parking now; adapted by its own thread only.</summary>
    public int SpinBudget { get; set; } = MinSpinBudget;

    /// <summary>The worker's own lower bound of the queue's admissions (see <see cref="TicketQueue.TryClaim"/>).</summary>
    public long KnownAdmissions;

    /// <summary>Gets the worker's park/unpark handshake.</summary>
    public Parker Parker { get; } = new();

    /// <summary>Gets the number of items this worker finished, whatever their outcome.</summary>
    public long Finished => Completed + Failed + Cancelled;

    public void AttachToCurrentThread()
    {
        t_current = this;
        CleanContext = ExecutionContext.Capture();
    }

    public static void DetachFromCurrentThread() => t_current = null;

    /// <summary>
    /// Reads this worker's outcome counters and whether it is running an item whose outcome they do not count yet,
    /// as one consistent view, from any thread: <paramref name="busy"/> is <see langword="true"/> exactly when the
    /// counters read here leave out the outcome of an item the worker had started when this call began.
    /// </summary>
    /// <remarks>
    /// The run number is read first (an acquire read), the counters after it. A published run n means the worker had
    /// counted the outcomes of its first n - 1 items before it published run n, so the counters read after it add up
    /// to at least n - 1; exactly n - 1 means run n's outcome is not among them, so in this view it is still running.
    /// More than that means it has finished (and perhaps later items too): counted as finished, not as running. So
    /// the items this view counts as finished or running are exactly <c>completed + failed + cancelled + (busy ? 1 : 0)</c>
    /// of the worker's claims, never one twice and never one that it has not claimed. Costs the worker nothing: it
    /// writes nothing for it beyond what it writes anyway.
    /// </remarks>
    public void ReadProgress(out long completed, out long failed, out long cancelled, out bool busy)
    {
        var run = Volatile.Read(ref _run);
        completed = Completed;
        failed = Failed;
        cancelled = Cancelled;
        busy = run != 0 && completed + failed + cancelled == run - 1;
    }

    /// <summary>
    /// Counts a claimed awaited item that its caller cancelled while it was queued: the worker skips it, and its run
    /// number is used up unpublished so run numbers keep counting claimed items.
    /// </summary>
    public void CountSkipped()
    {
        _lastRun++;
        Count(ItemOutcome.Cancelled);
    }

    /// <summary>Publishes the item this worker starts running, for <see cref="TryReadRun"/>.</summary>
    public void BeginRun(in QueuedItem item, long startedTimestamp)
    {
        _runCallback = item.Callback;
        _runState = item.State;
        _runInvoker = item.Invoker;
        _runStarted = startedTimestamp;
        Volatile.Write(ref _run, ++_lastRun);
    }

    /// <summary>Clears the published item, so an idle worker keeps nothing of it alive.</summary>
    public void EndRun()
    {
        Volatile.Write(ref _run, 0);
        Volatile.Write(ref _runCallback, null);
        Volatile.Write(ref _runState, null);
        Volatile.Write(ref _runInvoker, null);
    }

    /// <summary>Reads the item running now, from any thread; false when the worker is idle or between items.</summary>
    public bool TryReadRun(out RunSnapshot run)
    {
        run = default;
        var number = Volatile.Read(ref _run);
        if (number == 0)
        {
            return false;
        }

        var started = Volatile.Read(ref _runStarted);
        var callback = Volatile.Read(ref _runCallback);
        var state = Volatile.Read(ref _runState);
        var invoker = Volatile.Read(ref _runInvoker);
        if (callback is null || Volatile.Read(ref _run) != number)
        {
            return false;
        }

        run = new RunSnapshot(number, started, new QueuedItem(callback, state, invoker, null, 0));
        return true;
    }

    /// <summary>Marks a run as reported slow; false if it already was. Called by the watchdog thread only.</summary>
    public bool TryMarkSlowReported(long run)
    {
        if (_reportedSlowRun == run)
        {
            return false;
        }

        _reportedSlowRun = run;
        return true;
    }

    public void Count(ItemOutcome outcome)
    {
        switch (outcome)
        {
            case ItemOutcome.Completed:
                Volatile.Write(ref _completed, _completed + 1);
                break;
            case ItemOutcome.Failed:
                Volatile.Write(ref _failed, _failed + 1);
                break;
            default:
                Volatile.Write(ref _cancelled, _cancelled + 1);
                break;
        }
    }
}

/// <summary>One consistent read of what a worker runs: the run's number, its start timestamp and the item.</summary>
internal readonly record struct RunSnapshot(long Number, long StartedTimestamp, QueuedItem Item);
