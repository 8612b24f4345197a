using System.Collections.Concurrent;

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
/// say), runs on this scheduler's own rescue thread, a dedicated thread, one task at a time, and is counted in
/// <see cref="RescuedTaskCount"/> (the executor still counts and reports the item it did not run). A graceful
/// shutdown without a deadline runs every queued task on the workers.
/// </para>
/// </remarks>
public sealed class BoundedExecutorTaskScheduler : TaskScheduler
{
    private readonly ConcurrentQueue<Task> _rescued = new();
    private int _rescuing;
    private long _rescuedCount;

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

    /// <summary>Gets the number of tasks the executor gave back after accepting them, run on the rescue thread.</summary>
    public long RescuedTaskCount => Interlocked.Read(ref _rescuedCount);

    /// <inheritdoc/>
    protected override void QueueTask(Task task)
    {
        ArgumentNullException.ThrowIfNull(task);
        var run = Executor.RunAsync(() => TryExecuteTask(task));
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

    /// <summary>Runs a task inline only on one of the executor's own workers, so no task ever runs elsewhere.</summary>
    /// <inheritdoc/>
    protected override bool TryExecuteTaskInline(Task task, bool taskWasPreviouslyQueued) =>
        Executor.IsWorkerThread && TryExecuteTask(task);

    /// <summary>Not supported: the executor's queue holds the tasks and is not enumerable.</summary>
    /// <returns>Never returns.</returns>
    /// <exception cref="NotSupportedException">Always.</exception>
    protected override IEnumerable<Task> GetScheduledTasks() =>
        throw new NotSupportedException("The tasks of a BoundedExecutorTaskScheduler sit in the executor's queue, which cannot be enumerated.");

    private void Rescue(Task task)
    {
        _rescued.Enqueue(task);
        if (Interlocked.Exchange(ref _rescuing, 1) == 0)
        {
            var thread = new Thread(RescueLoop) { IsBackground = true, Name = $"{Executor.Name}-rescue" };
            thread.Start();
        }
    }

    private void RescueLoop()
    {
        while (true)
        {
            while (_rescued.TryDequeue(out var task))
            {
                Interlocked.Increment(ref _rescuedCount);
                TryExecuteTask(task);
            }

            Volatile.Write(ref _rescuing, 0);

            // A task queued after the last TryDequeue but before the flag cleared found the flag set and started no
            // thread: look again, and carry on only if no other rescue thread has taken over meanwhile.
            if (_rescued.IsEmpty || Interlocked.Exchange(ref _rescuing, 1) != 0)
            {
                return;
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
