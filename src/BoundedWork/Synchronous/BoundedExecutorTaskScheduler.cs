namespace BoundedWork.Synchronous;

/// <summary>
/// A <see cref="TaskScheduler"/> view of a <see cref="BoundedExecutor"/>, so TPL code (<c>Task.Factory.StartNew</c>,
/// <c>Parallel.ForEach</c> with <see cref="ParallelOptions.TaskScheduler"/>, Dataflow blocks'
/// <c>TaskScheduler</c> option) runs on the executor's dedicated workers.
/// </summary>
/// <remarks>
/// <para>
/// <b>Continuations.</b> An <c>await</c> inside a task running on this scheduler resumes on this scheduler (the
/// awaiter captures <see cref="TaskScheduler.Current"/>), so the rest of the method occupies a worker again;
/// <c>ConfigureAwait(false)</c> lets it resume on the ThreadPool instead. Code started elsewhere (a request handler,
/// <c>Task.Run</c>) never moves onto the executor by awaiting a task that ran here.
/// </para>
/// <para>
/// <b>Rejections.</b> Each queued task is one executor item and follows the executor's <see cref="RejectionPolicy"/>:
/// when the policy refuses it at once (Abort, Discard) the task is faulted and <c>Start</c> or <c>StartNew</c> throws
/// a <see cref="TaskSchedulerException"/> whose inner exception is the <see cref="RejectedExecutionException"/>; the
/// executor counts and reports the item as usual. CallerRuns runs the task on the thread that queued it; Wait waits
/// for room asynchronously. TPL drops an <c>await</c> continuation that its scheduler refuses (its async method never
/// resumes), so give a scheduler that runs asynchronous code an executor with the Wait or CallerRuns policy.
/// </para>
/// <para>
/// <b>Nothing is lost.</b> A scheduler cannot fail a task it has accepted; the only way to complete it is to run it.
/// So a task the executor gives back after accepting it (evicted by DiscardOldest, its Wait for room timed out, or
/// still queued at a shutdown deadline), and a task queued after the executor shut down (an <c>await</c> continuation,
/// say), runs on this scheduler's own rescue threads, dedicated threads that exist only while there are such tasks,
/// and is counted in <see cref="RescuedTaskCount"/> (the executor still counts and reports the item it did not run).
/// At most as many tasks run on rescue threads at once as the executor has workers, so a scheduler over a
/// one-worker executor still runs one task at a time. A graceful shutdown without a deadline runs every queued task
/// on the workers.
/// </para>
/// <para>
/// <b>Waiting on the scheduler's own tasks.</b> A task running on a worker or on a rescue thread that waits on
/// another task of this scheduler that has not started (<c>task.Wait()</c>, <c>task.Result</c>) runs that task inline
/// instead of deadlocking. A task that has started, or an asynchronous method's task, cannot be run inline: waiting on
/// one blocks the thread until the task's other parts have run on the scheduler's other threads. With as many
/// blocked waiters as the executor has workers (one, on a one-worker executor) nothing is left to run those parts, and
/// the waiters deadlock. Await such tasks instead of blocking on them.
/// </para>
/// <para>
/// <b>Blocked ThreadPool threads.</b> A ThreadPool thread that blocks, without a timeout or token, on a task of this
/// scheduler that has not started yet (<c>task.Wait()</c>, <c>task.Result</c>, <c>Task.WaitAll</c>) is counted in
/// <see cref="BoundedExecutorStatistics.ThreadPoolBlockingWaits"/> and reported to
/// <see cref="BoundedExecutorOptions.OnThreadPoolBlockingWait"/> with <see cref="BlockingWaitKind.TaskWait"/>: TPL asks
/// the scheduler to run such a task inline first, and the refusal is the sign. TPL asks nothing the scheduler could tell
/// apart from an ordinary continuation before other waits, so they are not counted: a wait on a task that is already
/// running, a wait with a timeout or token, <c>task.RunSynchronously(scheduler)</c>, and so <c>Parallel.For</c> and
/// <c>Parallel.ForEach</c> (which start their first task with <c>RunSynchronously</c>) called on a ThreadPool thread.
/// </para>
/// </remarks>
public sealed class BoundedExecutorTaskScheduler : TaskScheduler
{
    /// <summary>The rescue thread the current thread is, if it is one; its tasks may run tasks of its scheduler inline.</summary>
    [ThreadStatic]
    private static BoundedExecutorTaskScheduler? t_rescuing;

    private readonly Queue<Task> _rescued = new();
    private long _rescuedCount;
    private int _rescueThreads;
    private int _rescueThreadsRunningATask;

    /// <summary>Creates a scheduler whose tasks run on <paramref name="executor"/>'s workers.</summary>
    /// <param name="executor">The executor.</param>
    /// <exception cref="ArgumentNullException"><paramref name="executor"/> is <see langword="null"/>.</exception>
    public BoundedExecutorTaskScheduler(BoundedExecutor executor)
    {
        ArgumentNullException.ThrowIfNull(executor);
        Executor = executor;
    }

    /// <summary>Gets the executor whose workers run the tasks.</summary>
    public BoundedExecutor Executor { get; }

    /// <summary>
    /// Gets the executor's worker count at the time of the call: no more tasks than that run at once. TPL reads it
    /// once (for example when <c>Parallel.ForEach</c> starts), so a later resize applies to later loops.
    /// </summary>
    public override int MaximumConcurrencyLevel => Executor.Settings.WorkerCount;

    /// <summary>Gets the number of tasks given to the rescue threads: those the executor gave back after accepting them, and those queued after it shut down.</summary>
    public long RescuedTaskCount => Interlocked.Read(ref _rescuedCount);

    /// <inheritdoc/>
    protected override void QueueTask(Task task)
    {
        ArgumentNullException.ThrowIfNull(task);
        var run = Executor.RunAsync(() => TryExecuteTask(task), task, CancellationToken.None);
        if (!run.IsCompleted)
        {
            _ = run.ContinueWith(
                static (run, state) => ((TaskRun)state!).OnRunEnded(run),
                new TaskRun(this, task),
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously | TaskContinuationOptions.NotOnRanToCompletion,
                Default);
            return;
        }

        if (run.Exception?.InnerException is not RejectedExecutionException rejected)
        {
            return;
        }

        if (rejected.Reason == RejectionReason.ShutDown)
        {
            // TPL drops an await continuation its scheduler refuses, and its async method would never resume:
            // after shutdown, run what is still queued here rather than lose it.
            Rescue(task);
            return;
        }

        // Refused at once by the policy: TPL faults the task and throws a TaskSchedulerException to whoever queued it.
        throw rejected;
    }

    /// <summary>
    /// Runs a task inline only on one of the executor's own workers or on one of this scheduler's rescue threads, so a
    /// task of this scheduler never runs elsewhere, and one that waits on another task of this scheduler that has not
    /// started runs it instead of deadlocking.
    /// </summary>
    /// <remarks>
    /// Anywhere else the task is not run inline, and a caller that asked because it waits for a queued task (TPL asks
    /// with <paramref name="taskWasPreviouslyQueued"/> only from a wait) is about to block: on a ThreadPool thread that
    /// is counted and reported as a blocking wait (<see cref="BlockingWaitKind.TaskWait"/>). A request without it comes
    /// from <c>RunSynchronously</c> or from a continuation that prefers to run at once; those cannot be told apart, and
    /// a continuation does not block, so neither is counted.
    /// </remarks>
    /// <inheritdoc/>
    protected override bool TryExecuteTaskInline(Task task, bool taskWasPreviouslyQueued)
    {
        if (Executor.IsWorkerThread || ReferenceEquals(t_rescuing, this))
        {
            return TryExecuteTask(task);
        }

        if (taskWasPreviouslyQueued)
        {
            Executor.NoteBlockingWait(BlockingWaitKind.TaskWait);
        }

        return false;
    }

    /// <summary>Not supported: the executor's queue holds the tasks and is not enumerable.</summary>
    /// <returns>Never returns.</returns>
    /// <exception cref="NotSupportedException">Always.</exception>
    protected override IEnumerable<Task> GetScheduledTasks() =>
        throw new NotSupportedException("The tasks of a BoundedExecutorTaskScheduler sit in the executor's queue, which cannot be enumerated.");

    /// <summary>
    /// Hands a task to the rescue threads. A new rescue thread starts when the queued tasks outnumber the rescue
    /// threads free to take them, up to the executor's worker count, so a rescued task that blocks on another one
    /// (say, on an asynchronous method whose continuations are rescued too) leaves the others a thread to run on.
    /// </summary>
    private void Rescue(Task task)
    {
        Interlocked.Increment(ref _rescuedCount);
        var limit = Math.Max(1, Executor.Settings.WorkerCount);
        bool start;
        lock (_rescued)
        {
            _rescued.Enqueue(task);
            start = _rescued.Count > _rescueThreads - _rescueThreadsRunningATask && _rescueThreads < limit;
            if (start)
            {
                _rescueThreads++;
            }
        }

        if (start)
        {
            var thread = new Thread(static state => ((BoundedExecutorTaskScheduler)state!).RescueLoop())
            {
                IsBackground = true,
                Name = $"{Executor.Name}-rescue",
            };

            // UnsafeStart: the thread must not keep the ExecutionContext of whichever task's continuation started it.
            thread.UnsafeStart(this);
        }
    }

    /// <summary>A rescue thread: runs rescued tasks until none is left, then exits.</summary>
    private void RescueLoop()
    {
        t_rescuing = this;
        while (true)
        {
            Task task;
            lock (_rescued)
            {
                if (!_rescued.TryDequeue(out task!))
                {
                    // Decided under the lock that queues a task and starts threads: a task queued after this finds
                    // one thread fewer free and starts one if it needs it. No task is left without a thread.
                    _rescueThreads--;
                    return;
                }

                _rescueThreadsRunningATask++;
            }

            try
            {
                // A task already run inline by a task that waited on it is not run again (TryExecuteTask says false).
                TryExecuteTask(task);
            }
            finally
            {
                lock (_rescued)
                {
                    _rescueThreadsRunningATask--;
                }
            }
        }
    }

    private sealed class TaskRun(BoundedExecutorTaskScheduler scheduler, Task task)
    {
        /// <summary>The executor item ended without running the task: evicted, timed out waiting, rejected late or abandoned.</summary>
        public void OnRunEnded(Task<bool> run)
        {
            _ = run.Exception; // observed: the task itself carries the outcome
            scheduler.Rescue(task);
        }
    }
}
