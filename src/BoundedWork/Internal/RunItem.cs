namespace BoundedWork.Internal;

/// <summary>
/// A <c>RunAsync</c> item: the promise whose task the caller awaits. Continuations always run asynchronously,
/// so an awaiting caller never resumes on a worker thread.
/// </summary>
internal sealed class RunItem<TResult> : AwaitedItem
{
    private readonly TaskCompletionSource<TResult> _promise = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly Delegate _work;
    private readonly ExecutionContext? _context;
    private readonly BoundedExecutor _owner;
    private CancellationToken _cancellationToken;
    private CancellationTokenRegistration _registration;

    public RunItem(BoundedExecutor owner, Delegate work, ExecutionContext? context)
    {
        _owner = owner;
        _work = work;
        _context = context;
    }

    public Task<TResult> Task => _promise.Task;

    /// <summary>Cancels the item if <paramref name="cancellationToken"/> fires before a worker claims it.</summary>
    public void RegisterCancellation(CancellationToken cancellationToken)
    {
        if (cancellationToken.CanBeCanceled)
        {
            _cancellationToken = cancellationToken;
            _registration = cancellationToken.UnsafeRegister(static state => ((RunItem<TResult>)state!).OnCancellationRequested(), this);
        }
    }

    public override ItemOutcome Run(ExecutionContext? restoreTo)
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
            _promise.TrySetResult(result);
            return ItemOutcome.Completed;
        }
        catch (OperationCanceledException ex) when (ex.CancellationToken == _cancellationToken && _cancellationToken.IsCancellationRequested)
        {
            _promise.TrySetCanceled(_cancellationToken);
            return ItemOutcome.Cancelled;
        }
        catch (Exception ex)
        {
            activity?.SetStatus(System.Diagnostics.ActivityStatusCode.Error, ex.Message);
            _promise.TrySetException(ex);
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

    public override void Reject(RejectedExecutionException exception)
    {
        _registration.Unregister();
        _promise.TrySetException(exception);
    }

    public override void Abandon()
    {
        _registration.Unregister();
        _promise.TrySetCanceled();
    }

    public override WorkItem ToWorkItem() => new(_work, null, null, isAwaited: true);

    private TResult InvokeAction()
    {
        ((Action)_work)();
        return default!;
    }

    private void OnCancellationRequested()
    {
        if (TryClaim())
        {
            _promise.TrySetCanceled(_cancellationToken);
            _owner.OnAwaitedItemCancelled();
        }
    }
}
