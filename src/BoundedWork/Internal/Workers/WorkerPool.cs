using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace BoundedWork.Internal;

/// <summary>
/// The executor's dedicated worker threads: how many there are (start, resize, retire, replace, exit), and how an idle
/// worker spins, parks and is woken again. What a worker runs comes from its <see cref="IWorkSource"/>.
/// </summary>
/// <remarks>
/// <para>
/// <b>Lifecycle.</b> <see cref="SyncObj"/> (the executor's lifecycle lock) guards the worker list and the counts; it is
/// never held while an item, a callback or a listener runs. <c>_targetWorkers</c> is what the pool converges to;
/// <c>_liveWorkers</c> the workers serving the queue (a worker that decided to retire no longer counts, though its
/// thread finishes its item and exits afterwards); <c>_retireDebt</c> how many live workers still have to retire after a
/// shrink. Growing starts threads at once (paying off retire debt first); shrinking adds debt, which workers pay between
/// items, never interrupting one. A worker that dies of a defect of the executor is replaced. Under the lock:
/// <c>0 &lt;= _retireDebt &lt;= _liveWorkers &lt;= _workers.Count</c> and <c>_liveWorkers &lt;= MaxWorkerCount</c>
/// (<see cref="AssertInvariantsUnsynchronized"/>).
/// </para>
/// <para>
/// <b>Spin, then park.</b> A worker with nothing to claim first spins (<see cref="SpinForWork"/>), counted in
/// <c>_spinners</c>, re-checking its source; then it parks: it announces itself idle (<see cref="IdleWorkers"/>),
/// re-checks, and waits on its own <see cref="Parker"/>. A source that makes work visible wakes one parked worker,
/// unless a worker spins (<see cref="WakeOneUnlessOneSpins"/>): the spinner will find the work, and waking another
/// thread would only add a context switch.
/// </para>
/// <para>
/// <b>No wake-up is lost.</b> Each step below is an interlocked operation (a full fence), and each side reads the
/// other's state only after its own step. A waker: (W1) makes the work visible (the queue's admission), (W2) reads
/// <c>_spinners</c>, (W3) if none spins, reads the idle count and unparks the most recently parked worker. An idle
/// worker: (S1) leaves <c>_spinners</c>, (S2) announces itself idle, (S3) re-checks its source, and parks only if it
/// finds nothing.
/// </para>
/// <list type="number">
/// <item><description>The waker skips the wake-up at W2 only when it counts a spinner. That spinner leaves (S1) after
/// the waker's read, so everything it reads afterwards (its re-check, or the claim it goes on to make) sees the work
/// made visible at W1: it claims that item, or an older one and then sees this one still queued (next
/// point).</description></item>
/// <item><description>A worker that claims an item and sees more queued wakes the next worker the same way (the
/// cascade), so one wake-up (or one spinner) is owed per queued item, not per submit, and a burst that submitters
/// skipped while a worker spun still reaches every parked worker it needs.</description></item>
/// <item><description>Otherwise the waker reads the idle count (W3) after W1, and the worker re-checks (S3) after
/// announcing itself (S2): at least one sees the other. Either the waker finds an announced worker and unparks it, or
/// the worker sees the work, withdraws its announcement and runs it. A worker whose withdrawal fails was taken by a
/// waker whose unpark is on its way; a <see cref="Parker"/> keeps that permit, so its next park returns at
/// once.</description></item>
/// <item><description>A resize, a shutdown or an abandon changes the pool's or the source's state (under the lock, or
/// with an interlocked step) and then wakes every parked worker; a worker re-checks the same state after announcing
/// itself.</description></item>
/// </list>
/// <para>
/// Tests: <c>WorkerPoolTests</c> (the handshake on its own, against a model source), <c>IdleWorkersTests</c>,
/// <c>ResizeTests</c>, <c>StarvationTests</c>. No step needs a ThreadPool thread: workers are dedicated threads and
/// waking one is a monitor pulse from the waking thread.
/// </para>
/// </remarks>
internal sealed class WorkerPool
{
    private readonly string _name;
    private readonly IWorkSource _source;
    private readonly List<Worker> _workers = [];
    private readonly IdleWorkers _idle = new();
    private PaddedInt32 _spinners;
    private int _targetWorkers;
    private int _liveWorkers;
    private int _retireDebt;
    private int _peakWorkers;
    private int _nextWorkerId;
    private long _retiredCompleted;
    private long _retiredFailed;
    private long _retiredCancelled;
    private long _workersReplaced;

    /// <param name="name">The executor's name: worker threads are called <c>name#id</c>.</param>
    /// <param name="maxWorkerCount">The hard maximum the pool never exceeds.</param>
    /// <param name="source">What the workers run.</param>
    /// <param name="owner">The executor the workers belong to, for <see cref="Owner"/>; <see langword="null"/> in tests.</param>
    public WorkerPool(string name, int maxWorkerCount, IWorkSource source, BoundedExecutor? owner)
    {
        _name = name;
        MaxWorkerCount = maxWorkerCount;
        _source = source;
        Owner = owner;
    }

    /// <summary>Gets the lifecycle lock: the worker list and counts, resizing and worker exit.</summary>
    public object SyncObj => _workers;

    /// <summary>Gets the executor the workers belong to.</summary>
    public BoundedExecutor? Owner { get; }

    public int MaxWorkerCount { get; }

    /// <summary>Gets the number of parked (or parking) workers.</summary>
    public int IdleCount => _idle.Count;

    /// <summary>Gets the number of workers spinning for work now.</summary>
    public int SpinningCount => Volatile.Read(ref _spinners.Value);

    /// <summary>Gets a value indicating whether the current thread is one of this pool's workers.</summary>
    public bool IsWorkerThread => Worker.Current?.Pool == this;

    /// <summary>Gets a value indicating whether some worker still has to retire after a shrink.</summary>
    public bool RetireOwed => Volatile.Read(ref _retireDebt) > 0;

    /// <summary>Gets the number of workers replaced after a defect stopped them.</summary>
    public long WorkersReplaced => Volatile.Read(ref _workersReplaced);

    /// <summary>Sets the target worker count; returns <see langword="true"/> if parked workers must be woken to retire.</summary>
    public bool ResizeUnsynchronized(int workerCount)
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        Debug.Assert(workerCount >= 1 && workerCount <= MaxWorkerCount);
        AssertInvariantsUnsynchronized();
        _targetWorkers = workerCount;
        var effective = _liveWorkers - _retireDebt;
        if (workerCount > effective)
        {
            var needed = workerCount - effective;
            var keep = Math.Min(_retireDebt, needed);
            _retireDebt -= keep;
            for (var i = keep; i < needed; i++)
            {
                StartWorkerUnsynchronized();
            }

            return false;
        }

        if (workerCount < effective)
        {
            _retireDebt += effective - workerCount;
            return true;
        }

        return false;
    }

    /// <summary>
    /// Wakes a parked worker for work the caller has just made visible, unless a worker is spinning (it will find the
    /// work). The hot path of every submit: two reads when a worker spins or none is parked.
    /// </summary>
    public void WakeOneUnlessOneSpins()
    {
        if (Volatile.Read(ref _spinners.Value) == 0)
        {
            _idle.WakeOne();
        }
    }

    /// <summary>Wakes every parked worker (resize, shutdown, abandon); each re-checks and runs, retires, exits or parks again.</summary>
    public void WakeAll() => _idle.WakeAll();

    /// <summary>Gets a value indicating whether every worker thread has exited (after shutdown began, the pool is done).</summary>
    public bool AllWorkersExited()
    {
        lock (SyncObj)
        {
            return _workers.Count == 0;
        }
    }

    /// <summary>Reads every worker's outcomes and busy state, and the worker counts, as one consistent view.</summary>
    public WorkerProgress ReadProgress(long now, TimeSpan slowThreshold, ItemClock clock)
    {
        lock (SyncObj)
        {
            AssertInvariantsUnsynchronized();
            var progress = new WorkerProgress
            {
                Completed = _retiredCompleted,
                Failed = _retiredFailed,
                Cancelled = _retiredCancelled,
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
                if (slowThreshold != Timeout.InfiniteTimeSpan && worker.TryReadRun(out var run) && clock.Elapsed(run.StartedTimestamp, now) > slowThreshold)
                {
                    progress.Slow++;
                }
            }

            return progress;
        }
    }

    /// <summary>Adds what each busy worker runs now to <paramref name="runs"/>.</summary>
    public void ReadRuns(List<(Worker Worker, RunSnapshot Run)> runs)
    {
        lock (SyncObj)
        {
            foreach (var worker in _workers)
            {
                if (worker.TryReadRun(out var run))
                {
                    runs.Add((worker, run));
                }
            }
        }
    }

    private void StartWorkerUnsynchronized()
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        var id = ++_nextWorkerId;
        var worker = new Worker(this, id, $"{_name}#{id}");
        var thread = new Thread(static state => ((Worker)state!).Pool.WorkerMain((Worker)state))
        {
            IsBackground = true,
            Name = worker.Name,
        };
        _workers.Add(worker);
        _liveWorkers++;
        _peakWorkers = Math.Max(_peakWorkers, _liveWorkers);
        AssertInvariantsUnsynchronized();

        // UnsafeStart: the worker must not capture the ExecutionContext of whoever made it grow (an HTTP request's
        // AsyncLocals would otherwise live on in the worker for its whole life).
        thread.UnsafeStart(worker);
    }

    private enum WorkerExit
    {
        /// <summary>Retired by a shrink.</summary>
        Retired,

        /// <summary>The source is drained (or abandoned) after shutdown.</summary>
        ShutDown,

        /// <summary>Stopped by a defect of the executor itself; a replacement starts.</summary>
        Crashed,
    }

    private void WorkerMain(Worker worker)
    {
        worker.AttachToCurrentThread();
        var exit = WorkerExit.Crashed;
        try
        {
            exit = RunWorkerLoop(worker);
        }
        catch (Exception ex)
        {
            // Only a defect in the executor itself can get here (items, callbacks and listeners are guarded); a plain
            // thread's unhandled exception would end the process, so report it and let a replacement start.
            Trace.TraceError($"BoundedWork executor '{_name}' worker {worker.Name} stopped: {ex}");
        }
        finally
        {
            Worker.DetachFromCurrentThread();
            OnWorkerExited(worker, exit);
        }
    }

    /// <summary>The worker loop: run items while there are any, retire when owed, spin briefly when idle, then park.</summary>
    private WorkerExit RunWorkerLoop(Worker worker)
    {
        while (true)
        {
            if (_source.TryRunOne(worker))
            {
                if (Volatile.Read(ref _retireDebt) > 0 && TryRetire())
                {
                    return WorkerExit.Retired;
                }

                continue;
            }

            if (Volatile.Read(ref _retireDebt) > 0 && TryRetire())
            {
                return WorkerExit.Retired;
            }

            if (_source.IsDrained)
            {
                return WorkerExit.ShutDown;
            }

            if (!SpinForWork(worker))
            {
                Park(worker);
            }
        }
    }

    /// <summary>
    /// Spins a while before parking, re-checking for work. How long adapts per worker: a spin that found work raises
    /// the worker's budget to <see cref="Worker.MaxSpinBudget"/> (under load the next item is usually microseconds away,
    /// and a parked worker would cost the submitter a kernel call to wake it); a spin that found nothing lowers it by one,
    /// down to <see cref="Worker.MinSpinBudget"/>, so a worker that keeps finding nothing (an idle or trickling executor)
    /// soon parks almost at once and burns no CPU. benchmarks/trickle.sh and benchmarks/compare-java.sh measure the two
    /// sides of this trade-off.
    /// </summary>
    private bool SpinForWork(Worker worker)
    {
        var spinner = default(SpinWait);
        var budget = worker.SpinBudget;
        Interlocked.Increment(ref _spinners.Value);
        try
        {
            for (var i = 0; i < budget; i++)
            {
                spinner.SpinOnce(sleep1Threshold: -1);
                if (HasReasonToWake())
                {
                    worker.SpinBudget = Worker.MaxSpinBudget;
                    return true;
                }
            }
        }
        finally
        {
            // Leaving the spinners is the interlocked step that comes before announcing and re-checking (see the remarks).
            Interlocked.Decrement(ref _spinners.Value);
        }

        worker.SpinBudget = Math.Max(budget - 1, Worker.MinSpinBudget);
        return false;
    }

    /// <summary>Parks the worker until a waker unparks it; announce, then re-check (see the remarks).</summary>
    private void Park(Worker worker)
    {
        _idle.Announce(worker);
        if (HasReasonToWake() && _idle.TryWithdraw(worker))
        {
            return;
        }

        // Either nothing to do, or a waker took this worker off the idle stack first: its unpark may be on the way.
        worker.Parker.Park();
    }

    private bool HasReasonToWake() => _source.HasWork || Volatile.Read(ref _retireDebt) > 0;

    private bool TryRetire()
    {
        lock (SyncObj)
        {
            AssertInvariantsUnsynchronized();
            if (_retireDebt == 0)
            {
                return false;
            }

            _retireDebt--;
            _liveWorkers--;
            return true;
        }
    }

    private void OnWorkerExited(Worker worker, WorkerExit exit)
    {
        bool allExited;
        lock (SyncObj)
        {
            AssertInvariantsUnsynchronized();
            _workers.Remove(worker);
            _retiredCompleted += worker.Completed;
            _retiredFailed += worker.Failed;
            _retiredCancelled += worker.Cancelled;
            if (exit != WorkerExit.Retired)
            {
                _liveWorkers--;
            }

            if (exit == WorkerExit.Crashed && !_source.IsAbandoned && _liveWorkers < _targetWorkers)
            {
                // A worker that dies outside a shrink is replaced, during a shutdown's drain too.
                _workersReplaced++;
                StartWorkerUnsynchronized();
            }

            allExited = _workers.Count == 0 && _source.IsShutdown;
        }

        if (allExited)
        {
            _source.OnAllWorkersExited();
        }
        else if (exit != WorkerExit.Retired)
        {
            // A worker leaving at shutdown may be the one that should have woken the others.
            _idle.WakeAll();
        }
    }

    [Conditional("DEBUG")]
    private void AssertInvariantsUnsynchronized()
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        Debug.Assert(_retireDebt >= 0, "Retire debt is never negative.");
        Debug.Assert(_retireDebt <= _liveWorkers, "No more workers owe retirement than are live.");
        Debug.Assert(_liveWorkers <= _workers.Count, "Every live worker is in the list (a retiring one stays until its thread exits).");
        Debug.Assert(_liveWorkers <= MaxWorkerCount, "Live workers never exceed the hard maximum.");
        Debug.Assert(_peakWorkers >= _liveWorkers);
    }
}

/// <summary>The workers' part of a statistics snapshot (see <see cref="OutcomeCounters.Read"/>).</summary>
internal struct WorkerProgress
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
