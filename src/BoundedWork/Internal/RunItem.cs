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
    private readonly ExecutionContext? _context;
    private readonly BoundedExecutor _owner;
    private CancellationToken _cancellationToken;
    private CancellationTokenRegistration _registration;
    private int _state;

    public RunItem(BoundedExecutor owner, Delegate work, ExecutionContext? context)
        : base(TaskCreationOptions.RunContinuationsAsynchronously)
    {
        _owner = owner;
        _work = work;
        _context = context;
    }

    public bool TryClaim() => Interlocked.CompareExchange(ref _state, Claimed, Queued) == Queued;

    /// <summary>Cancels the item if <paramref name="cancellationToken"/> fires before a worker claims it.</summary>
    public void RegisterCancellation(CancellationToken cancellationToken)
    {
        if (cancellationToken.CanBeCanceled)
        {
            _cancellationToken = cancellationToken;
            _registration = cancellationToken.UnsafeRegister(static state => ((RunItem<TResult>)state!).OnCancellationRequested(), this);
        }
    }

    public ItemOutcome Run(ExecutionContext? restoreTo)
    {
        _registration.Unregister();
        if (_context is not null)
        {
            ExecutionContext.Restore(_context);
        }

        var activity = _owner.StartRunActivity();
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
            activity?.SetStatus(System.Diagnostics.ActivityStatusCode.Error, ex.Message);
            TrySetException(ex);
            return ItemOutcome.Failed;
        }
        finally
        {
            activity?.Dispose();
            if (restoreTo is not null && ExecutionContext.Capture() != restoreTo)
            {
                ExecutionContext.Restore(restoreTo);
            }
        }
    }

    public void Reject(RejectedExecutionException exception)
    {
        _registration.Unregister();
        TrySetException(exception);
    }

    public void Abandon()
    {
        _registration.Unregister();
        TrySetCanceled();
    }

    public WorkItem ToWorkItem() => new(_work, null, null, isAwaited: true);

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
            _owner.OnAwaitedItemCancelled();
        }
    }
}
