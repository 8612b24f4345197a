namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    private readonly TaskCompletionSource _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>
    /// Gets a task that completes when the executor has shut down and every worker thread has exited.
    /// </summary>
    public Task Completion => _completion.Task;

    /// <summary>
    /// Stops accepting items at once, lets the workers drain the queue, and completes when every worker has exited.
    /// </summary>
    /// <param name="cancellationToken">
    /// The deadline. When it is cancelled before the drain ends, the workers stop taking items (running items are
    /// never interrupted) and every item still queued is handed back in <see cref="ShutdownResult.AbandonedItems"/>;
    /// awaited items' tasks are cancelled.
    /// </param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    public async Task<ShutdownResult> ShutdownAsync(CancellationToken cancellationToken = default)
    {
        BeginShutdown();
        if (!_completion.Task.IsCompleted)
        {
            try
            {
                await _completion.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                var abandoned = AbandonQueuedItems();
                return new ShutdownResult(abandoned, _completion.Task.IsCompleted);
            }
        }

        return new ShutdownResult([], workersExited: true);
    }

    /// <summary>
    /// Shuts down as <see cref="ShutdownAsync(CancellationToken)"/> does, with a deadline <paramref name="timeout"/> from now.
    /// </summary>
    /// <param name="timeout">How long the drain may take; <see cref="Timeout.InfiniteTimeSpan"/> for no deadline.</param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="timeout"/> is negative (other than infinite).</exception>
    public async Task<ShutdownResult> ShutdownAsync(TimeSpan timeout)
    {
        if (timeout < TimeSpan.Zero && timeout != Timeout.InfiniteTimeSpan)
        {
            throw new ArgumentOutOfRangeException(nameof(timeout), timeout, "The shutdown timeout must not be negative (use Timeout.InfiniteTimeSpan for no deadline).");
        }

        using var deadline = new CancellationTokenSource(timeout, _timeProvider);
        return await ShutdownAsync(deadline.Token).ConfigureAwait(false);
    }

    /// <summary>Takes one snapshot of the executor's state and counters.</summary>
    /// <returns>The snapshot.</returns>
    public BoundedExecutorStatistics GetStatistics()
    {
        long completed, failed, cancelled;
        int target, live, busy, peak;
        lock (LifecycleLock)
        {
            completed = _retiredCompleted;
            failed = _retiredFailed;
            cancelled = _retiredCancelled;
            busy = 0;
            foreach (var worker in _workers)
            {
                completed += worker.Completed;
                failed += worker.Failed;
                cancelled += worker.Cancelled;
                busy += worker.Busy ? 1 : 0;
            }

            target = _targetWorkers;
            live = _workers.Count;
            peak = _peakWorkers;
        }

        completed += Interlocked.Read(ref _callerCompleted);
        failed += Interlocked.Read(ref _callerFailed);
        cancelled += Interlocked.Read(ref _cancelled);
        var rejected = Interlocked.Read(ref _rejected);
        var discarded = Interlocked.Read(ref _discarded);
        var abandoned = Interlocked.Read(ref _abandoned);
        var state = Volatile.Read(ref _state.Value);
        var oldestAge = (state & CountMask) != 0 && _reader.TryPeek(out var oldest)
            ? _timeProvider.GetElapsedTime(oldest.EnqueuedTimestamp)
            : TimeSpan.Zero;

        // Read last: every outcome above was counted after its submission, so Submitted is never behind them.
        var submitted = Interlocked.Read(ref _submitted.Value);
        return new BoundedExecutorStatistics
        {
            Name = Name,
            TargetWorkerCount = target,
            LiveWorkerCount = live,
            BusyWorkerCount = busy,
            PeakWorkerCount = peak,
            MaxWorkerCount = MaxWorkerCount,
            QueueLength = (int)(state & CountMask),
            QueueCapacity = _queueCapacity,
            OldestQueuedItemAge = oldestAge,
            RejectionPolicy = _policy,
            WaitTimeout = WaitTimeout,
            Submitted = submitted,
            Completed = completed,
            Failed = failed,
            Cancelled = cancelled,
            Rejected = rejected,
            Discarded = discarded,
            Abandoned = abandoned,
            CallerRuns = Interlocked.Read(ref _callerRuns),
            CallbackFailures = Interlocked.Read(ref _callbackFailures),
            ThreadPoolBlockingWaits = Interlocked.Read(ref _threadPoolBlockingWaits),
            IsShutdown = (state & ShutdownBit) != 0,
        };
    }

    private void BeginShutdown()
    {
        var state = Volatile.Read(ref _state.Value);
        while ((state & ShutdownBit) == 0)
        {
            var previous = Interlocked.CompareExchange(ref _state.Value, state | ShutdownBit, state);
            if (previous == state)
            {
                break;
            }

            state = previous;
        }

        // Parked workers wake to drain or exit; waiting producers wake to be rejected.
        WakeAllWorkers();
        _spaceWaiters.WakeAll();
        lock (LifecycleLock)
        {
            if (_workers.Count == 0)
            {
                _completion.TrySetResult();
            }
        }
    }

    /// <summary>Stops the drain: claims every unclaimed item at once and hands them back, oldest first.</summary>
    private List<WorkItem> AbandonQueuedItems()
    {
        var state = Volatile.Read(ref _state.Value);
        while (true)
        {
            var previous = Interlocked.CompareExchange(ref _state.Value, (state | ShutdownBit | AbandonBit) & ~CountMask, state);
            if (previous == state)
            {
                break;
            }

            state = previous;
        }

        WakeAllWorkers();
        var claimed = (int)(state & CountMask);
        var abandoned = new List<WorkItem>(claimed);
        for (var i = 0; i < claimed; i++)
        {
            var item = ReadClaimed();
            if (item.Awaited is { } awaited)
            {
                if (!awaited.TryClaim())
                {
                    continue; // its caller cancelled it: already counted
                }

                awaited.Abandon();
            }

            Interlocked.Increment(ref _abandoned);
            abandoned.Add(item.ToWorkItem());
        }

        return abandoned;
    }
}
