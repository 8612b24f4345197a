namespace BoundedWork.Hosting.Internal;

/// <summary>
/// A worker's wait for an asynchronous handler's task. While it waits, the worker also runs the actions the handler's
/// own asynchronous flow posts to it (<see cref="TryPost"/>), so that flow can do on the worker what must not be
/// done off it.
/// </summary>
/// <remarks>
/// <para>
/// Why: the worker waits for the handler, so a handler whose continuation (on some other thread) waits for room in
/// its own executor's full queue waits for the very worker that waits for it; with every worker doing so, nothing
/// makes room until the wait times out. A submission made on the worker itself takes the executor's own way out (the
/// Wait policy runs the item inline on a worker instead of blocking it). So the queue posts such a submission here,
/// and the worker makes it.
/// </para>
/// <para>
/// The handshake: posting and closing happen under this object's lock, so an action is either posted before the wait
/// closes (and the worker runs it, even after the handler's task has completed) or refused (and the poster makes
/// the submission itself: the worker no longer waits for it). The worker sleeps on the lock's monitor only after
/// checking, under the lock, that nothing is posted and the task is not complete; a post pulses under the lock, and
/// the task's completion pulses under it too (a continuation that runs synchronously on the completing thread, so no
/// ThreadPool thread is needed), so no wake-up is lost between the check and the sleep.
/// </para>
/// </remarks>
internal sealed class HandlerWait
{
    private static readonly AsyncLocal<HandlerWait?> s_current = new();

    private Queue<Action>? _posted;
    private bool _closed;

    private HandlerWait()
    {
    }

    /// <summary>Gets the lock of the posted actions and the closed flag: the instance itself, which is never exposed.</summary>
    private object SyncObj => this;

    /// <summary>Gets the wait of the handler whose asynchronous flow this is; <see langword="null"/> outside one.</summary>
    public static HandlerWait? Current => s_current.Value;

    /// <summary>Calls the handler with this flow marked as its own, then waits on this (worker) thread for its task.</summary>
    public static void Run<T>(IWorkHandler<T> handler, T item, CancellationToken cancellationToken)
    {
        var wait = new HandlerWait();
        var previous = s_current.Value;
        s_current.Value = wait;
        ValueTask handling;
        try
        {
            handling = handler.HandleAsync(item, cancellationToken);
        }
        finally
        {
            s_current.Value = previous;
        }

        wait.WaitFor(handling);
    }

    /// <summary>
    /// Hands an action to the waiting worker; <see langword="false"/> if the worker no longer waits for the handler.
    /// The action must not throw.
    /// </summary>
    public bool TryPost(Action action)
    {
        lock (SyncObj)
        {
            if (_closed)
            {
                return false;
            }

            (_posted ??= new Queue<Action>()).Enqueue(action);
            Monitor.Pulse(SyncObj);
            return true;
        }
    }

    private void WaitFor(ValueTask handling)
    {
        // The handler's flow may have posted and completed before this thread got here (it returned a pending task,
        // then its continuation ran on another thread): what it posted still runs, as for any other completion.
        var task = handling.IsCompleted ? null : handling.AsTask();
        task?.ContinueWith(
            static (_, state) =>
            {
                lock (state!)
                {
                    Monitor.Pulse(state);
                }
            },
            SyncObj,
            CancellationToken.None,
            TaskContinuationOptions.ExecuteSynchronously,
            TaskScheduler.Default);

        while (true)
        {
            Action? next;
            lock (SyncObj)
            {
                while (_posted is not { Count: > 0 } && task is { IsCompleted: false })
                {
                    Monitor.Wait(SyncObj);
                }

                if (_posted is not { } posted || !posted.TryDequeue(out next))
                {
                    _closed = true;
                    break;
                }
            }

            next();
        }

        if (task is null)
        {
            handling.GetAwaiter().GetResult();
        }
        else
        {
            task.GetAwaiter().GetResult();
        }
    }
}
