using Polly;

namespace BoundedWork.Hosting.Internal;

/// <summary>An item of some work queue, as the executor's callbacks see it (the state of its executor item).</summary>
internal interface IWorkQueueEntry
{
    /// <summary>The executor will never run this entry's current executor item (rejected, discarded, evicted or abandoned).</summary>
    /// <returns>A task that completes when the resulting dead letter, if any, has been delivered.</returns>
    Task OnNotRun(RejectionReason reason);
}

/// <summary>
/// One accepted item of a <see cref="WorkQueue{T}"/>, from acceptance to its one outcome: handled, or a dead letter.
/// It is the state of every executor item it takes (the first attempt, and each retry handed back to a worker).
/// </summary>
internal sealed class WorkQueueEntry<T>(WorkQueue<T> queue, T item, object? key) : IWorkQueueEntry
{
    private RetryHandoff? _retry;

    public WorkQueue<T> Queue { get; } = queue;

    public T Item { get; } = item;

    /// <summary>Gets the ordering key, or <see langword="null"/> when the item is not ordered.</summary>
    public object? Key { get; } = key;

    /// <summary>Gets or sets a value indicating whether this entry is the one running for its key (it releases the key when it ends).</summary>
    public bool OwnsKey { get; set; }

    /// <summary>Gets or sets how many times the handler has been called.</summary>
    public int Attempts { get; set; }

    public Exception? LastException { get; set; }

    /// <summary>Gets or sets why the executor did not run the entry's last executor item; <see langword="null"/> if it ran.</summary>
    public RejectionReason? NotRun { get; set; }

    public Task OnNotRun(RejectionReason reason) => Queue.OnNotRun(this, reason);

    /// <summary>Parks the pipeline while a retry waits for a worker.</summary>
    public void SetRetry(RetryHandoff retry) => Volatile.Write(ref _retry, retry);

    /// <summary>Takes the parked retry, once: the worker that runs it or the callback that reports it not run.</summary>
    public RetryHandoff? TakeRetry() => Interlocked.Exchange(ref _retry, null);

    public override string? ToString() => Item?.ToString();
}

/// <summary>
/// A retry waiting for a worker: the pipeline awaits <see cref="Completion"/>, which the worker completes after the
/// attempt. Its continuations run synchronously, so the pipeline resumes on that worker, schedules its next delay
/// or finishes, and frees the worker at once.
/// </summary>
internal sealed class RetryHandoff(CancellationToken attemptToken)
{
    private readonly TaskCompletionSource<Outcome<object?>> _completion = new();

    public CancellationToken AttemptToken { get; } = attemptToken;

    public Task<Outcome<object?>> Completion => _completion.Task;

    public void Complete(Outcome<object?> outcome) => _completion.TrySetResult(outcome);
}
