using System.Diagnostics;

namespace BoundedWork.Internal;

/// <summary>
/// Everything outside an item that the executor calls while it handles items: the user's callbacks
/// (<see cref="BoundedExecutorOptions.OnError"/>, <see cref="BoundedExecutorOptions.OnRejected"/>,
/// <see cref="BoundedExecutorOptions.OnSlowItem"/>, <see cref="BoundedExecutorOptions.OnThreadPoolBlockingWait"/>), the
/// activity listeners that trace each run and the meter listeners of the per-item instruments.
/// </summary>
/// <remarks>
/// Invariant: <b>nothing outside the item decides its fate.</b> Every call here is guarded: whatever a callback or a
/// listener throws is counted in <see cref="Failures"/> and never propagates, so it can neither stop an item from
/// running, nor change how the item is counted, nor end the thread that made the call. Callers call in here after
/// releasing any lock, on the thread that made the decision being reported. Tests:
/// <c>ListenerFailureTests</c>, <c>FailureTests</c>.
/// </remarks>
internal sealed class ExecutorCallbacks
{
    private readonly string _executorName;
    private readonly ExecutorInstruments _instruments;
    private readonly Action<WorkItemFailedArguments>? _onError;
    private readonly Action<WorkItemRejectedArguments>? _onRejected;
    private readonly Action<SlowItemArguments>? _onSlowItem;
    private readonly Action<ThreadPoolBlockingWaitArguments>? _onThreadPoolBlockingWait;
    private readonly Action<WorkerCountDecision>? _onWorkerCountDecision;
    private long _failures;
    private long _threadPoolBlockingWaits;

    public ExecutorCallbacks(BoundedExecutorOptions options, ExecutorInstruments instruments)
    {
        _executorName = options.Name;
        _instruments = instruments;
        _onError = options.OnError;
        _onRejected = options.OnRejected;
        _onSlowItem = options.OnSlowItem;
        _onThreadPoolBlockingWait = options.OnThreadPoolBlockingWait;
        _onWorkerCountDecision = options.OnWorkerCountDecision;
    }

    /// <summary>Gets how many times a callback or a listener threw.</summary>
    public long Failures => Interlocked.Read(ref _failures);

    /// <summary>Gets how many times a ThreadPool thread blocked waiting for the executor (see <see cref="BlockingWait"/>).</summary>
    public long ThreadPoolBlockingWaits => Interlocked.Read(ref _threadPoolBlockingWaits);

    /// <summary>Tells <see cref="BoundedExecutorOptions.OnError"/> about a fire-and-forget item that threw.</summary>
    public void ItemFailed(in QueuedItem item, Exception exception)
    {
        if (_onError is not null)
        {
            Invoke(_onError, new WorkItemFailedArguments(_executorName, item.ToWorkItem(), exception));
        }
    }

    /// <summary>Tells <see cref="BoundedExecutorOptions.OnRejected"/> about an item that will not run.</summary>
    public void ItemRejected(in QueuedItem item, RejectionReason reason)
    {
        if (_onRejected is not null)
        {
            Invoke(_onRejected, new WorkItemRejectedArguments(_executorName, item.ToWorkItem(), reason));
        }
    }

    /// <inheritdoc cref="ItemRejected(in QueuedItem, RejectionReason)"/>
    public void ItemRejected(WorkItem item, RejectionReason reason)
    {
        if (_onRejected is not null)
        {
            Invoke(_onRejected, new WorkItemRejectedArguments(_executorName, item, reason));
        }
    }

    /// <summary>Counts a slow item on the metric and tells <see cref="BoundedExecutorOptions.OnSlowItem"/>.</summary>
    public void ItemSlow(in QueuedItem item, string workerName, TimeSpan elapsed, TimeSpan threshold, SlowItemKind kind)
    {
        try
        {
            _instruments.RecordSlowItem(kind);
        }
        catch (Exception)
        {
            CountFailure();
        }

        if (_onSlowItem is not null)
        {
            Invoke(_onSlowItem, new SlowItemArguments(_executorName, item.ToWorkItem(), workerName, elapsed, threshold, kind));
        }
    }

    /// <summary>Counts a worker-count decision on the metric and tells <see cref="BoundedExecutorOptions.OnWorkerCountDecision"/>.</summary>
    public void WorkerCountDecided(WorkerCountDecision decision)
    {
        try
        {
            _instruments.RecordWorkerCountDecision(decision);
        }
        catch (Exception)
        {
            CountFailure();
        }

        if (_onWorkerCountDecision is not null)
        {
            Invoke(_onWorkerCountDecision, decision);
        }
    }

    /// <summary>
    /// Counts and reports a blocking wait for the executor if the current thread is a ThreadPool thread. Called just
    /// before blocking, on the thread that blocks.
    /// </summary>
    public void BlockingWait(BlockingWaitKind kind)
    {
        if (!Thread.CurrentThread.IsThreadPoolThread)
        {
            return;
        }

        var total = Interlocked.Increment(ref _threadPoolBlockingWaits);
        if (_onThreadPoolBlockingWait is not null)
        {
            Invoke(_onThreadPoolBlockingWait, new ThreadPoolBlockingWaitArguments(_executorName, kind, total));
        }
    }

    /// <summary>
    /// Starts the activity that traces one item's run, in the item's own execution context (so the activity current at
    /// submission is its parent); <see langword="null"/> when nobody listens.
    /// </summary>
    public Activity? StartRun()
    {
        if (!BoundedWorkDiagnostics.ActivitySource.HasListeners())
        {
            return null;
        }

        try
        {
            var activity = BoundedWorkDiagnostics.ActivitySource.StartActivity(BoundedWorkDiagnostics.RunActivityName, ActivityKind.Internal);
            activity?.SetTag(BoundedWorkDiagnostics.ExecutorTag, _executorName);
            return activity;
        }
        catch (Exception)
        {
            CountFailure();
            return null;
        }
    }

    /// <summary>Marks a run's activity as failed.</summary>
    public void MarkRunFailed(Activity? activity, Exception exception)
    {
        if (activity is null)
        {
            return;
        }

        try
        {
            activity.SetStatus(ActivityStatusCode.Error, exception.Message);
        }
        catch (Exception)
        {
            CountFailure();
        }
    }

    /// <summary>Stops a run's activity.</summary>
    public void StopRun(Activity? activity)
    {
        if (activity is null)
        {
            return;
        }

        try
        {
            activity.Dispose();
        }
        catch (Exception)
        {
            CountFailure();
        }
    }

    /// <summary>Records how long a tenant's item waited before it started on the per-tenant wait histogram.</summary>
    public void RecordTenantWait(TimeSpan waited, string series)
    {
        try
        {
            _instruments.RecordTenantWait(waited, series);
        }
        catch (Exception)
        {
            CountFailure();
        }
    }

    /// <summary>Records how long an item waited in the queue on the wait-duration histogram.</summary>
    public void RecordWait(TimeSpan waited)
    {
        try
        {
            _instruments.RecordWait(waited);
        }
        catch (Exception)
        {
            CountFailure();
        }
    }

    /// <summary>Records how long an item ran on the run-duration histogram.</summary>
    public void RecordRun(TimeSpan ran)
    {
        try
        {
            _instruments.RecordRun(ran);
        }
        catch (Exception)
        {
            CountFailure();
        }
    }

    private void Invoke<TArguments>(Action<TArguments> callback, TArguments arguments)
    {
        try
        {
            callback(arguments);
        }
        catch (Exception)
        {
            CountFailure();
        }
    }

    private void CountFailure() => Interlocked.Increment(ref _failures);
}
