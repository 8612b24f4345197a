namespace BoundedWork.Synchronous;

/// <summary>
/// Blocking helpers for synchronous callers that must hand work to an executor and wait for it: legacy synchronous
/// controllers, synchronous library entry points. They block the calling thread; from asynchronous code use
/// <see cref="BoundedExecutor.RunAsync{TResult}(Func{TResult}, CancellationToken)"/> instead. Also the
/// <see cref="TaskScheduler"/> view of an executor, for TPL code.
/// </summary>
/// <remarks>
/// <para>
/// A submit-and-wait never deadlocks on the executors it waits for. Called on one of the executor's own workers it
/// runs the work inline. The same holds across executors: an item submitted by a submit-and-wait carries the
/// executors whose workers wait for it, so when a worker of A waits on B and B's item waits on A, that innermost
/// work runs inline on B's worker (a dedicated thread already working on A's behalf) instead of waiting for A's
/// blocked worker. Work run inline is not submitted, so it is not counted in the executor's statistics.
/// </para>
/// <para>
/// When the calling thread is a ThreadPool thread and the work has not finished yet, the wait is counted in
/// <see cref="BoundedExecutorStatistics.ThreadPoolBlockingWaits"/> and reported to
/// <see cref="BoundedExecutorOptions.OnThreadPoolBlockingWait"/> (kind <see cref="BlockingWaitKind.SubmitAndWait"/>)
/// just before the thread blocks: a blocked pool thread is the pattern that starves the pool.
/// </para>
/// </remarks>
public static class BoundedExecutorSynchronousExtensions
{
    /// <summary>
    /// Runs <paramref name="action"/> on a worker of <paramref name="executor"/> and blocks the calling thread until it
    /// has run; inline when that would otherwise deadlock (see the class remarks).
    /// </summary>
    /// <param name="executor">The executor.</param>
    /// <param name="action">The blocking work.</param>
    /// <param name="cancellationToken">Cancels the work if it has not started yet; once started, the call waits for it.</param>
    /// <exception cref="ArgumentNullException"><paramref name="executor"/> or <paramref name="action"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The executor rejected the work (its policy, or it is shut down).</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled before the work started.</exception>
    /// <remarks>The exception <paramref name="action"/> throws is rethrown as is.</remarks>
    public static void RunAndWait(this BoundedExecutor executor, Action action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(executor);
        ArgumentNullException.ThrowIfNull(action);
        RunAndWaitCore(
            executor,
            () =>
            {
                action();
                return true;
            },
            action,
            cancellationToken);
    }

    /// <summary>
    /// Runs <paramref name="function"/> on a worker of <paramref name="executor"/>, blocks the calling thread until it
    /// has run and returns its result; inline when that would otherwise deadlock (see the class remarks).
    /// </summary>
    /// <typeparam name="TResult">The function's result type.</typeparam>
    /// <param name="executor">The executor.</param>
    /// <param name="function">The blocking work.</param>
    /// <param name="cancellationToken">Cancels the work if it has not started yet; once started, the call waits for it.</param>
    /// <returns>The function's result.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="executor"/> or <paramref name="function"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The executor rejected the work (its policy, or it is shut down).</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled before the work started.</exception>
    /// <remarks>The exception <paramref name="function"/> throws is rethrown as is.</remarks>
    public static TResult RunAndWait<TResult>(this BoundedExecutor executor, Func<TResult> function, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(executor);
        ArgumentNullException.ThrowIfNull(function);
        return RunAndWaitCore(executor, function, function, cancellationToken);
    }

    /// <summary>
    /// Creates a <see cref="TaskScheduler"/> whose tasks run on <paramref name="executor"/>'s workers. Create one and
    /// keep it: each call returns a new scheduler.
    /// </summary>
    /// <param name="executor">The executor.</param>
    /// <returns>The scheduler.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="executor"/> is <see langword="null"/>.</exception>
    public static BoundedExecutorTaskScheduler AsTaskScheduler(this BoundedExecutor executor) => new(executor);

    /// <summary>Runs <paramref name="function"/> and waits for it; <paramref name="describedBy"/> is the caller's own delegate, which names the item.</summary>
    internal static TResult RunAndWaitCore<TResult>(BoundedExecutor executor, Func<TResult> function, Delegate describedBy, CancellationToken cancellationToken)
    {
        if (executor.IsWorkerThread || WaitChain.IsWaitedOnBy(executor))
        {
            // Waiting would need a worker that is this thread, or one that is blocked waiting for this thread.
            cancellationToken.ThrowIfCancellationRequested();
            return function();
        }

        var chain = WaitChain.ForItemAwaitedHere();
        var task = executor.RunAsync(() => WaitChain.Run(chain, function), describedBy, cancellationToken);
        if (!task.IsCompleted)
        {
            executor.NoteBlockingWait(BlockingWaitKind.SubmitAndWait);
        }

        // A kernel wait on the task: it needs no ThreadPool thread to wake up.
        return task.GetAwaiter().GetResult();
    }
}
