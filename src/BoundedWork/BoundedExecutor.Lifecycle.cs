using BoundedWork.Internal;

namespace BoundedWork;

public sealed partial class BoundedExecutor
{
    private readonly TaskCompletionSource _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly List<ShutdownWaiter> _shutdownWaiters = [];

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
    /// awaited items' tasks are cancelled. The deadline takes effect on the thread that cancels the token; a token
    /// cancelled by a timer needs a ThreadPool thread for that, so under ThreadPool starvation prefer
    /// <see cref="ShutdownAsync(TimeSpan)"/>, whose deadline a dedicated thread enforces.
    /// </param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    public async Task<ShutdownResult> ShutdownAsync(CancellationToken cancellationToken = default)
    {
        BeginShutdown();
        if (IsWorkerThread)
        {
            return new ShutdownResult([], workersExited: false);
        }

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
    /// Shuts down as <see cref="ShutdownAsync(CancellationToken)"/> does, with a deadline <paramref name="timeout"/>
    /// from now. The executor's own watchdog thread enforces the deadline, so it holds even while the ThreadPool is
    /// starved: at the deadline no further item starts and the queued ones are handed back (only the caller's
    /// continuation after that needs a pool thread). Called from one of this executor's own workers, it begins the
    /// shutdown and returns at once (that worker cannot exit while it waits), with
    /// <see cref="ShutdownResult.WorkersExited"/> <see langword="false"/>.
    /// </summary>
    /// <param name="timeout">How long the drain may take; <see cref="Timeout.InfiniteTimeSpan"/> for no deadline.</param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="timeout"/> is negative (other than infinite).</exception>
    public Task<ShutdownResult> ShutdownAsync(TimeSpan timeout)
    {
        ValidateShutdownTimeout(timeout);
        return ShutdownCore(timeout);
    }

    /// <summary>
    /// Shuts down as <see cref="ShutdownAsync(TimeSpan)"/> does and blocks the calling thread until the drain ends or
    /// the deadline passes. It needs no ThreadPool thread at all. Called from one of this executor's own workers, it
    /// begins the shutdown and returns at once instead of deadlocking.
    /// </summary>
    /// <param name="timeout">How long the drain may take; <see cref="Timeout.InfiniteTimeSpan"/> for no deadline.</param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="timeout"/> is negative (other than infinite).</exception>
    public ShutdownResult Shutdown(TimeSpan timeout)
    {
        ValidateShutdownTimeout(timeout);

        // Waiting on the task blocks on a kernel event that the completing thread sets directly.
        return ShutdownCore(timeout).GetAwaiter().GetResult();
    }

    /// <summary>
    /// Shuts down and waits for the drain, blocking, for at most <see cref="BoundedExecutorOptions.DisposeTimeout"/>.
    /// Items still queued then are counted as abandoned and reported to <see cref="BoundedExecutorOptions.OnRejected"/>
    /// with <see cref="RejectionReason.Abandoned"/>. Running items are never interrupted. Returns at once if a shutdown
    /// deadline has already passed, or when called from one of this executor's own workers.
    /// </summary>
    public void Dispose()
    {
        if (_queue.IsAbandoned)
        {
            return;
        }

        ReportAbandonedOnDispose(Shutdown(_disposeTimeout));
    }

    /// <summary>
    /// Shuts down and waits for the drain for at most <see cref="BoundedExecutorOptions.DisposeTimeout"/>, as
    /// <see cref="Dispose"/> does, without blocking the caller. If a shutdown deadline has already passed
    /// (<see cref="ShutdownAsync(CancellationToken)"/> abandoned the queue), it returns at once instead of waiting
    /// again for items that are still running; <see cref="Completion"/> tells when they end.
    /// </summary>
    /// <returns>A task that completes when the executor is disposed.</returns>
    public async ValueTask DisposeAsync()
    {
        if (_queue.IsAbandoned)
        {
            return;
        }

        ReportAbandonedOnDispose(await ShutdownCore(_disposeTimeout).ConfigureAwait(false));
    }

    private void BeginShutdown()
    {
        _queue.Freeze();

        // Parked workers wake to drain or exit; waiting producers are rejected.
        _idle.WakeAll();
        RejectAllWaiters();
        bool completed;
        lock (LifecycleLock)
        {
            completed = _workers.Count == 0;
        }

        if (completed)
        {
            OnAllWorkersExited();
        }
    }

    /// <summary>Completes the executor: every worker has exited after shutdown began.</summary>
    private void OnAllWorkersExited()
    {
        if (!_completion.TrySetResult())
        {
            return;
        }

        List<ShutdownWaiter> waiters;
        lock (LifecycleLock)
        {
            waiters = [.. _shutdownWaiters];
            _shutdownWaiters.Clear();
        }

        foreach (var waiter in waiters)
        {
            waiter.TrySetResult(new ShutdownResult([], workersExited: true));
        }

        _watchdogSignal.Set();
    }

    private Task<ShutdownResult> ShutdownCore(TimeSpan timeout)
    {
        BeginShutdown();
        if (IsWorkerThread)
        {
            return Task.FromResult(new ShutdownResult([], workersExited: false));
        }

        var waiter = new ShutdownWaiter(Deadline.After(_timeProvider, timeout));
        bool waiting;
        lock (LifecycleLock)
        {
            waiting = !_completion.Task.IsCompleted;
            if (waiting)
            {
                _shutdownWaiters.Add(waiter);
            }
        }

        if (!waiting)
        {
            return Task.FromResult(new ShutdownResult([], workersExited: true));
        }

        // The watchdog thread enforces the deadline: no timer, no ThreadPool thread.
        _watchdogSignal.Set();
        return waiter.Task;
    }

    private static void ValidateShutdownTimeout(TimeSpan timeout)
    {
        if (timeout < TimeSpan.Zero && timeout != Timeout.InfiniteTimeSpan)
        {
            throw new ArgumentOutOfRangeException(nameof(timeout), timeout, "The shutdown timeout must not be negative (use Timeout.InfiniteTimeSpan for no deadline).");
        }
    }

    private void ReportAbandonedOnDispose(ShutdownResult result)
    {
        foreach (var item in result.AbandonedItems)
        {
            InvokeGuarded(_onRejected, new WorkItemRejectedArguments(Name, item, RejectionReason.Abandoned));
        }
    }

    /// <summary>Stops the drain: claims every unclaimed item at once and hands them back, oldest first.</summary>
    private List<WorkItem> AbandonQueuedItems()
    {
        var claimed = _queue.Abandon(out var firstTicket);
        _idle.WakeAll();
        RejectAllWaiters();
        var abandoned = new List<WorkItem>(claimed);
        for (var i = 0; i < claimed; i++)
        {
            var item = _queue.ReadClaimed(firstTicket + i);
            if (item.Awaited is { } awaited)
            {
                if (!awaited.TryClaim())
                {
                    Interlocked.Increment(ref _cancelledAfterClaim); // its caller cancelled it while it was queued
                    continue;
                }

                awaited.Cancel();
            }

            abandoned.Add(item.ToWorkItem());
            Interlocked.Increment(ref _abandoned);
        }

        return abandoned;
    }
}
