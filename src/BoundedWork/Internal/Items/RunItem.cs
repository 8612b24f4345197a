namespace BoundedWork.Internal;

/// <summary>
/// A <c>RunAsync</c> item: it is itself the promise whose task the caller awaits (two allocations per item: this
/// object and its task). Continuations always run asynchronously, so an awaiting caller never resumes on a worker.
/// </summary>
internal sealed class RunItem<TResult> : TaskCompletionSource<TResult>, IAwaitedItem
{
    private const int Queued = 0;
    private const int Claimed = 1;
    private readonly Delegate _work;
    private readonly object? _describedBy;
    private readonly ExecutionContext? _context;
    private CancellationToken _cancellationToken;
    private CancellationTokenRegistration _registration;
    private int _state;

    /// <param name="work">The delegate to run.</param>
    /// <param name="context">The submitter's execution context, or <see langword="null"/>.</param>
    /// <param name="describedBy">
    /// What describes the item when <paramref name="work"/> is a library wrapper (the caller's delegate, or a task of the
    /// TaskScheduler view); <see langword="null"/> when <paramref name="work"/> is the caller's own delegate.
    /// </param>
    public RunItem(Delegate work, ExecutionContext? context, object? describedBy)
        : base(TaskCreationOptions.RunContinuationsAsynchronously)
    {
        _work = work;
        _context = context;
        _describedBy = describedBy;
    }

    public bool TryClaim() => Interlocked.CompareExchange(ref _state, Claimed, Queued) == Queued;

    /// <summary>Cancels the item's task if <paramref name="cancellationToken"/> fires before anyone claims it. Counting is left to whoever disposes of the item.</summary>
    public void RegisterCancellation(CancellationToken cancellationToken)
    {
        if (cancellationToken.CanBeCanceled)
        {
            _cancellationToken = cancellationToken;
            _registration = cancellationToken.UnsafeRegister(static state => ((RunItem<TResult>)state!).OnCancellationRequested(), this);
        }
    }

    public ItemOutcome Run(ExecutorCallbacks callbacks)
    {
        _registration.Unregister();
        if (_context is not null)
        {
            ExecutionContext.Restore(_context);
        }

        var activity = callbacks.StartRun();
        try
        {
            var result = _work is Func<TResult> func ? func() : InvokeAction();
            TrySetResult(result);
            return ItemOutcome.Completed;
        }
        catch (OperationCanceledException ex) when (ex.CancellationToken == _cancellationToken && _cancellationToken.IsCancellationRequested)
        {
            TrySetCanceled(_cancellationToken);
            return ItemOutcome.Cancelled;
        }
        catch (Exception ex)
        {
            callbacks.MarkRunFailed(activity, ex);
            TrySetException(ex);
            return ItemOutcome.Failed;
        }
        finally
        {
            callbacks.StopRun(activity);
        }
    }

    public void Reject(RejectedExecutionException exception)
    {
        _registration.Unregister();
        TrySetException(exception);
    }

    public void Cancel()
    {
        _registration.Unregister();
        if (_cancellationToken.IsCancellationRequested)
        {
            TrySetCanceled(_cancellationToken);
        }
        else
        {
            TrySetCanceled();
        }
    }

    public WorkItem ToWorkItem() => new(_work, null, null, isAwaited: true, _describedBy);

    private TResult InvokeAction()
    {
        ((Action)_work)();
        return default!;
    }

    private void OnCancellationRequested()
    {
        if (TryClaim())
        {
            TrySetCanceled(_cancellationToken);
        }
    }
}
