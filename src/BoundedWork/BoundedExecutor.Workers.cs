using System.Diagnostics;
using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    private readonly List<Worker> _workers = [];
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

    /// <summary>Gets the number of parked (or parking) workers; for tests.</summary>
    internal int IdleWorkerCount => _idle.Count;

    /// <summary>Guards the worker list and counts, resizing and worker exit. Never held while user code runs.</summary>
    private object LifecycleLock => _workers;

    /// <summary>
    /// Changes the number of worker threads while items keep flowing. Growing starts threads at once;
    /// shrinking retires workers only between items, never interrupting a running one.
    /// </summary>
    /// <param name="workerCount">The new worker count, between 1 and <see cref="MaxWorkerCount"/>.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="workerCount"/> is below 1 or above <see cref="MaxWorkerCount"/>; nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down.</exception>
    public void Resize(int workerCount)
    {
        if (workerCount < 1 || workerCount > MaxWorkerCount)
        {
            throw new ArgumentOutOfRangeException(nameof(workerCount), workerCount, $"The worker count of executor '{Name}' must be between 1 and MaxWorkerCount ({MaxWorkerCount}).");
        }

        bool wake;
        lock (LifecycleLock)
        {
            ThrowIfShutdownUnsynchronized();
            wake = ResizeUnsynchronized(workerCount);
        }

        if (wake)
        {
            // Parked workers re-check and the surplus retires; the others park again.
            _idle.WakeAll();
        }
    }

    /// <summary>Sets the target worker count; returns <see langword="true"/> if workers must be woken to retire.</summary>
    private bool ResizeUnsynchronized(int workerCount)
    {
        Debug.Assert(Monitor.IsEntered(LifecycleLock));
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

    private void ThrowIfShutdownUnsynchronized()
    {
        if (IsShutdown)
        {
            throw new InvalidOperationException($"Executor '{Name}' is shut down and can no longer be reconfigured.");
        }
    }

    private void StartWorkerUnsynchronized()
    {
        Debug.Assert(Monitor.IsEntered(LifecycleLock));
        var id = ++_nextWorkerId;
        var worker = new Worker(this, id, $"{Name}#{id}");
        var thread = new Thread(static state => ((Worker)state!).Owner.WorkerMain((Worker)state))
        {
            IsBackground = true,
            Name = worker.Name,
        };
        _workers.Add(worker);
        _liveWorkers++;
        _peakWorkers = Math.Max(_peakWorkers, _liveWorkers);
        Debug.Assert(_liveWorkers <= MaxWorkerCount, "Live workers never exceed the hard maximum.");

        // UnsafeStart: the worker must not capture the ExecutionContext of whoever made it grow (an HTTP
        // request's AsyncLocals would otherwise live on in the worker for its whole life).
        thread.UnsafeStart(worker);
    }

    private enum WorkerExit
    {
        /// <summary>Retired by a shrink.</summary>
        Retired,

        /// <summary>The queue is drained (or abandoned) after shutdown.</summary>
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
            // Only a defect in the executor itself can get here (items, callbacks and listeners are guarded); a
            // plain thread's unhandled exception would end the process, so report it and let a replacement start.
            System.Diagnostics.Trace.TraceError($"BoundedWork executor '{Name}' worker {worker.Name} stopped: {ex}");
        }
        finally
        {
            Worker.DetachFromCurrentThread();
            OnWorkerExited(worker, exit);
        }
    }

    /// <summary>The worker loop: claim and run items, spin briefly when there are none, then park.</summary>
    private WorkerExit RunWorkerLoop(Worker worker)
    {
        while (true)
        {
            if (TryRunOne(worker))
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

            if (_queue.IsAbandoned || (_queue.IsShutdown && _queue.Count == 0))
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
    /// Claims and runs one item. A method of its own, never inlined, so the item (delegate, state, captured context,
    /// awaited task) is not kept alive by the worker loop's frame while the worker idles.
    /// </summary>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private bool TryRunOne(Worker worker)
    {
        if (!_queue.TryClaim(ref worker.KnownAdmissions, out var ticket, out var remaining))
        {
            return false;
        }

        var item = _queue.ReadClaimed(ticket);
        if (item.Awaited is { } awaited && !awaited.TryClaim())
        {
            worker.CountSkipped(); // its caller cancelled it while it was queued
            AfterClaim(remaining);
            return true;
        }

        // Busy from here, before the claim's follow-up (which may admit waiting producers into the freed slot), so a
        // statistics snapshot sees the item as running rather than as taken but not started.
        var started = _itemClock.Now();
        worker.BeginRun(item, started);
        AfterClaim(remaining);
        RunOnWorker(worker, item, started);
        return true;
    }

    private void AfterClaim(long remaining)
    {
        if (_producers.Any)
        {
            // The freed slot goes to the oldest waiting producer, admitted by this thread.
            AdmitWaiters();
        }

        if (remaining > 0)
        {
            // More work is queued: make sure a parked worker helps (a cascade, one wake-up per claim).
            WakeWorkerUnlessOneSpins();
        }
        else if (IsShutdown)
        {
            // The drain is over: parked workers must wake up to exit.
            _idle.WakeAll();
        }
    }

    /// <summary>Runs an item the worker has claimed and published with <see cref="Worker.BeginRun"/>.</summary>
    private void RunOnWorker(Worker worker, in QueuedItem item, long started)
    {
        CheckQueueWait(worker, item, started);
        var preciseStart = _instruments.RunDurationEnabled || (item.PreciseEnqueuedTimestamp != 0 && _instruments.WaitDurationEnabled)
            ? System.Diagnostics.Stopwatch.GetTimestamp()
            : 0;
        if (item.PreciseEnqueuedTimestamp != 0 && _instruments.WaitDurationEnabled)
        {
            Measure(static (instruments, elapsed) => instruments.RecordWait(elapsed), System.Diagnostics.Stopwatch.GetElapsedTime(item.PreciseEnqueuedTimestamp, preciseStart));
        }

        worker.Count(Invoke(item));
        worker.EndRun();
        if (preciseStart != 0 && _instruments.RunDurationEnabled)
        {
            Measure(static (instruments, elapsed) => instruments.RecordRun(elapsed), System.Diagnostics.Stopwatch.GetElapsedTime(preciseStart));
        }

        // Workers are clean rooms: nothing the item set (AsyncLocals, a SynchronizationContext) reaches the next one.
        if (SynchronizationContext.Current is not null)
        {
            SynchronizationContext.SetSynchronizationContext(null);
        }

        if (ExecutionContext.Capture() != worker.CleanContext && worker.CleanContext is not null)
        {
            ExecutionContext.Restore(worker.CleanContext);
        }
    }

    /// <summary>Records a measurement; a listener that throws is counted as a callback failure, never propagated.</summary>
    private void Measure(Action<ExecutorInstruments, TimeSpan> record, TimeSpan elapsed)
    {
        try
        {
            record(_instruments, elapsed);
        }
        catch (Exception)
        {
            CountCallbackFailure();
        }
    }

    /// <summary>
    /// Spins for a while before parking, re-checking for work. How long adapts per worker, the way adaptive mutexes
    /// do: a spin that found work doubles the worker's budget (under load the next item is usually microseconds
    /// away, and a parked worker would cost the submitter a kernel call to wake it), a spin that found nothing halves
    /// it (an idle or trickling executor then parks almost at once and burns no CPU). See benchmarks/trickle.sh and
    /// benchmarks/compare-java.sh for the two sides of this trade-off.
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
            // A full fence before the worker announces itself idle and re-checks: pairs with the waker's
            // admit-then-read-spinners order (see WakeWorkerUnlessOneSpins).
            Interlocked.Decrement(ref _spinners.Value);
        }

        worker.SpinBudget = Math.Max(budget - 1, Worker.MinSpinBudget);
        return false;
    }

    /// <summary>
    /// Wakes a parked worker for newly queued work, unless a worker is spinning: that one will find the work, and a
    /// kernel wake-up of another thread would only add a context switch. No wake-up is lost: the waker changed the
    /// queue (an interlocked step) before reading the spinner count, and a spinner stops counting (an interlocked
    /// step) before it re-checks the queue and parks, so a spinner the waker counted on sees the work.
    /// </summary>
    private void WakeWorkerUnlessOneSpins()
    {
        if (Volatile.Read(ref _spinners.Value) == 0)
        {
            _idle.WakeOne();
        }
    }

    private bool HasReasonToWake()
    {
        return _queue.Count != 0 || _queue.IsShutdown || _queue.IsAbandoned || Volatile.Read(ref _retireDebt) > 0;
    }

    /// <summary>
    /// Parks the worker until a submitter, another worker, a resize or shutdown wakes it. The announce-then-recheck
    /// order pairs with the submitter's admit-then-check order, so a wake-up can never be lost (see IdleWorkers).
    /// </summary>
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

    private bool TryRetire()
    {
        lock (LifecycleLock)
        {
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
        bool completed;
        lock (LifecycleLock)
        {
            _workers.Remove(worker);
            _retiredCompleted += worker.Completed;
            _retiredFailed += worker.Failed;
            _retiredCancelled += worker.Cancelled;
            if (exit != WorkerExit.Retired)
            {
                _liveWorkers--;
            }

            if (exit == WorkerExit.Crashed && !_queue.IsAbandoned && _liveWorkers < _targetWorkers)
            {
                // A worker that dies outside a shrink is replaced, during a shutdown's drain too.
                _workersReplaced++;
                StartWorkerUnsynchronized();
            }

            completed = _workers.Count == 0 && IsShutdown;
        }

        if (completed)
        {
            OnAllWorkersExited();
        }
        else if (exit != WorkerExit.Retired)
        {
            // A worker leaving at shutdown may be the one that should have woken the others.
            _idle.WakeAll();
        }
    }
}
