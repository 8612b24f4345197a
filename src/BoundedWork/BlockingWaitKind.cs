namespace BoundedWork;

/// <summary>What a caller was blocking on when it blocked a thread waiting for an executor.</summary>
public enum BlockingWaitKind
{
    /// <summary>A synchronous submit under the Wait policy blocked until the full queue had room.</summary>
    WaitForRoom = 0,

    /// <summary>A synchronous submit-and-wait blocked until the item had run on a worker.</summary>
    SubmitAndWait = 1,

    /// <summary>
    /// A wait without a timeout or token (<c>task.Wait()</c>, <c>task.Result</c>, <c>Task.WaitAll</c>) on a task of the
    /// executor's <see cref="Synchronous.BoundedExecutorTaskScheduler"/> that had not started yet blocked until the task
    /// had run on a worker.
    /// </summary>
    TaskWait = 2,
}
