using System.Diagnostics;
using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    /// <summary>How many times an idle worker re-checks the queue before parking.</summary>
    private const int SpinsBeforeParking = 24;

    private readonly List<Worker> _workers = [];
    private readonly SemaphoreSlim _wakeSignal = new(0);
    private PaddedInt32 _parked;
    private int _targetWorkers;
    private int _liveWorkers;
    private int _retireDebt;
    private int _peakWorkers;
    private int _nextWorkerId;
    private long _retiredCompleted;
    private long _retiredFailed;
    private long _retiredCancelled;

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
            WakeAllWorkers();
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

        // UnsafeStart: the worker must not capture the ExecutionContext of whoever made it grow (an HTTP
        // request's AsyncLocals would otherwise live on in the worker for its whole life).
        thread.UnsafeStart(worker);
    }

    private void WorkerMain(Worker worker)
    {
        worker.AttachToCurrentThread();
        var retired = false;
        try
        {
            retired = RunWorkerLoop(worker);
        }
        catch (Exception ex)
        {
            // Only a defect in the executor itself can get here (items and callbacks are guarded);
            // a plain thread's unhandled exception would end the process, so report it and let the worker go.
            Trace.TraceError($"BoundedWork executor '{Name}' worker #{worker.Id} stopped: {ex}");
        }
        finally
        {
            Worker.DetachFromCurrentThread();
            OnWorkerExited(worker, retired);
        }
    }

    /// <summary>The worker loop; returns <see langword="true"/> if the worker retired because of a shrink.</summary>
    private bool RunWorkerLoop(Worker worker)
    {
        while (true)
        {
            if (TryClaim(out var remaining))
            {
                var item = ReadClaimed();
                AfterClaim(remaining);
                RunOnWorker(worker, item);
                if (Volatile.Read(ref _retireDebt) > 0 && TryRetire())
                {
                    return true;
                }

                continue;
            }

            if (Volatile.Read(ref _retireDebt) > 0 && TryRetire())
            {
                return true;
            }

            var state = Volatile.Read(ref _state.Value);
            if ((state & AbandonBit) != 0 || ((state & ShutdownBit) != 0 && (state & CountMask) == 0))
            {
                return false;
            }

            if (!SpinForWork())
            {
                Park();
            }
        }
    }

    /// <summary>Claims one unclaimed item; fails when none is queued or a shutdown deadline has passed.</summary>
    private bool TryClaim(out long remaining)
    {
        var state = Volatile.Read(ref _state.Value);
        while (true)
        {
            remaining = 0;
            if ((state & AbandonBit) != 0 || (state & CountMask) == 0)
            {
                return false;
            }

            var previous = Interlocked.CompareExchange(ref _state.Value, state - 1, state);
            if (previous == state)
            {
                remaining = (state & CountMask) - 1;
                return true;
            }

            state = previous;
        }
    }

    /// <summary>
    /// Reads a claimed item. The claim guarantees the item exists; its writer may still be between admission
    /// and write, which takes nanoseconds, so spin for it.
    /// </summary>
    private QueuedItem ReadClaimed()
    {
        if (_reader.TryRead(out var item))
        {
            return item;
        }

        var spinner = default(SpinWait);
        do
        {
            spinner.SpinOnce();
        }
        while (!_reader.TryRead(out item));
        return item;
    }

    private void AfterClaim(long remaining)
    {
        if (_spaceWaiters.Any)
        {
            _spaceWaiters.WakeOne();
        }

        if (remaining > 0)
        {
            // More work is queued: make sure a parked worker helps (a cascade, one wake-up per claim).
            WakeOneWorker();
        }
        else if ((Volatile.Read(ref _state.Value) & ShutdownBit) != 0)
        {
            // The drain is over: parked workers must wake up to exit.
            WakeAllWorkers();
        }
    }

    private void RunOnWorker(Worker worker, in QueuedItem item)
    {
        var awaited = item.Awaited;
        if (awaited is not null && !awaited.TryClaim())
        {
            return; // cancelled by its caller while queued: already counted
        }

        worker.SetBusy(true);
        var started = _timeProvider.GetTimestamp();
        worker.BeginRun(item, started);
        CheckQueueWait(worker, item, started);
        if (_instruments.WaitDurationEnabled)
        {
            _instruments.RecordWait(_timeProvider.GetElapsedTime(item.EnqueuedTimestamp, started));
        }

        if (awaited is not null)
        {
            worker.Count(awaited.Run(worker.CleanContext));
        }
        else
        {
            RunFireAndForget(worker, item);
        }

        worker.EndRun();
        if (_instruments.RunDurationEnabled)
        {
            _instruments.RecordRun(_timeProvider.GetElapsedTime(started));
        }

        worker.SetBusy(false);
    }

    private void RunFireAndForget(Worker worker, in QueuedItem item)
    {
        Activity? activity = null;
        try
        {
            if (item.Context is not null)
            {
                ExecutionContext.Restore(item.Context);
            }

            activity = StartRunActivity();
            item.Invoker!(item.Callback, item.State);
            worker.Count(ItemOutcome.Completed);
        }
        catch (Exception ex)
        {
            worker.Count(ItemOutcome.Failed);
            activity?.SetStatus(ActivityStatusCode.Error, ex.Message);
            InvokeOnError(item, ex);
        }
        finally
        {
            activity?.Dispose();

            // Whatever the item did to AsyncLocals must not leak into the next item.
            if (ExecutionContext.Capture() != worker.CleanContext && worker.CleanContext is not null)
            {
                ExecutionContext.Restore(worker.CleanContext);
            }
        }
    }

    private bool SpinForWork()
    {
        var spinner = default(SpinWait);
        for (var i = 0; i < SpinsBeforeParking; i++)
        {
            spinner.SpinOnce(sleep1Threshold: -1);
            if (HasReasonToWake())
            {
                return true;
            }
        }

        return false;
    }

    private bool HasReasonToWake()
    {
        var state = Volatile.Read(ref _state.Value);
        return (state & CountMask) != 0 || (state & (ShutdownBit | AbandonBit)) != 0 || Volatile.Read(ref _retireDebt) > 0;
    }

    /// <summary>
    /// Parks the worker until a submitter, another worker, a resize or shutdown wakes it. The announce-then-recheck
    /// order pairs with the submitter's admit-then-check order, so a wake-up can never be lost.
    /// </summary>
    private void Park()
    {
        Interlocked.Increment(ref _parked.Value);
        if (HasReasonToWake())
        {
            var parked = Volatile.Read(ref _parked.Value);
            while (parked > 0)
            {
                var previous = Interlocked.CompareExchange(ref _parked.Value, parked - 1, parked);
                if (previous == parked)
                {
                    return;
                }

                parked = previous;
            }

            // A waker has already claimed this announcement and released the semaphore: consume that release.
        }

        _wakeSignal.Wait();
    }

    private void WakeOneWorker()
    {
        var parked = Volatile.Read(ref _parked.Value);
        while (parked > 0)
        {
            var previous = Interlocked.CompareExchange(ref _parked.Value, parked - 1, parked);
            if (previous == parked)
            {
                _wakeSignal.Release();
                return;
            }

            parked = previous;
        }
    }

    private void WakeAllWorkers()
    {
        var parked = Interlocked.Exchange(ref _parked.Value, 0);
        if (parked > 0)
        {
            _wakeSignal.Release(parked);
        }
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

    private void OnWorkerExited(Worker worker, bool retired)
    {
        bool completed;
        lock (LifecycleLock)
        {
            _workers.Remove(worker);
            _retiredCompleted += worker.Completed;
            _retiredFailed += worker.Failed;
            _retiredCancelled += worker.Cancelled;
            if (!retired)
            {
                _liveWorkers--;
            }

            completed = _workers.Count == 0 && IsShutdown;
        }

        if (completed)
        {
            OnAllWorkersExited();
        }
        else if (!retired)
        {
            // A worker leaving at shutdown may be the one that should have woken the others.
            WakeAllWorkers();
        }
    }
}
