namespace BoundedWork.Internal;

/// <summary>
/// What a <see cref="WorkerPool"/>'s threads work on: the executor, as its workers see it. The pool owns the threads and
/// when they run, spin, park or exit; the source owns the items.
/// </summary>
/// <remarks>
/// A source makes new work visible with an interlocked step (the queue's admission) before it calls
/// <see cref="WorkerPool.WakeOneUnlessOneSpins"/>, and shutdown with one before it calls <see cref="WorkerPool.WakeAll"/>:
/// the pool's lost-wake-up argument rests on that order.
/// </remarks>
internal interface IWorkSource
{
    /// <summary>Gets a value indicating whether an idle worker must look again: work is queued, or the source shut down.</summary>
    bool HasWork { get; }

    /// <summary>Gets a value indicating whether the workers are done for good: abandoned, or shut down with nothing queued.</summary>
    bool IsDrained { get; }

    /// <summary>Gets a value indicating whether the source accepts no more work (the pool then replaces no worker that retires).</summary>
    bool IsShutdown { get; }

    /// <summary>Gets a value indicating whether the source was abandoned (a worker that dies then is not replaced).</summary>
    bool IsAbandoned { get; }

    /// <summary>Claims one item and runs it on the calling worker; <see langword="false"/> when there was none to claim.</summary>
    bool TryRunOne(Worker worker);

    /// <summary>Called once, by the last worker to exit after shutdown began (or by shutdown itself when none was left).</summary>
    void OnAllWorkersExited();
}
