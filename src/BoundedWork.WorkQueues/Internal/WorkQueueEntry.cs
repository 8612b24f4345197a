using System.Threading.Tasks.Sources;
using Polly;

namespace BoundedWork.Hosting.Internal;

/// <summary>An item of some work queue, as the executor's callbacks see it (the state of its executor item).</summary>
/// <summary>
/// One accepted item of a <see cref="WorkQueue{T}"/>, from acceptance to its one outcome: handled, or a dead letter.
/// It is the state of every executor item it takes (the first attempt, and each retry handed back to a worker).
/// </summary>
internal sealed class WorkQueueEntry<T>(WorkQueue<T> queue, T item, object? key, long id) : IWorkQueueDelivery, IDescribedWork
{
    private RetryHandoff? _retry;

    public WorkQueue<T> Queue { get; } = queue;

    public T Item { get; } = item;

    /// <summary>Gets the item's id, unique within the process.</summary>
    public long Id { get; } = id;

    public DateTimeOffset EnqueuedAt { get; } = DateTimeOffset.UtcNow;

    /// <summary>Gets the ordering key, or <see langword="null"/> when the item is not ordered.</summary>
    public object? Key { get; } = key;

    /// <summary>Gets the item's tenant for fair share, or <see langword="null"/> when it has none.</summary>
    public string? Tenant { get; init; }

    /// <summary>Gets or sets a value indicating whether this entry is the one running for its key (it releases the key when it ends).</summary>
    public bool OwnsKey { get; set; }

    /// <summary>Gets or sets how many times the handler has been called.</summary>
    public int Attempts { get; set; }

    public Exception? LastException { get; set; }

    /// <summary>Gets or sets the delay the handler's last attempt asked for (a snooze), taken by the queue after the pipeline ends.</summary>
    public TimeSpan? SnoozedFor { get; set; }

    /// <summary>Gets or sets why the executor did not run the entry's last executor item; <see langword="null"/> if it ran.</summary>
    public RejectionReason? NotRun { get; set; }

    public Task OnNotRun(RejectionReason reason) => Queue.OnNotRun(this, reason);

    /// <summary>Parks the pipeline while a retry waits for a worker.</summary>
    public void SetRetry(RetryHandoff retry) => Volatile.Write(ref _retry, retry);

    /// <summary>Takes the parked retry, once: the worker that runs it or the callback that reports it not run.</summary>
    public RetryHandoff? TakeRetry() => Interlocked.Exchange(ref _retry, null);

    public override string? ToString() => Item?.ToString();

    /// <summary>What operators see for this item (running items, alarms): the handler, the item type, the item's id and key.</summary>
    public string WorkDescription => Key is null
        ? $"{Queue.HandlerName}.Handle({typeof(T).Name} #{Id})"
        : $"{Queue.HandlerName}.Handle({typeof(T).Name} #{Id}, key {Key})";
}

/// <summary>
/// A retry waiting for a worker: the pipeline awaits <see cref="Completion"/>, which the worker completes after the
/// attempt. The pipeline always resumes synchronously on the thread that completes it, or, when the attempt finished
/// before the pipeline started to wait, on the thread that starts to wait: never on the ThreadPool (a
/// <see cref="TaskCompletionSource"/> would queue that second case to the pool). The pipeline then schedules its next
/// delay or finishes, and frees the worker at once. Used once.
/// </summary>
internal sealed class RetryHandoff(CancellationToken attemptToken) : IValueTaskSource<Outcome<object?>>
{
    private static readonly Action<object?> s_completed = static _ => { };

    private Outcome<object?> _outcome;
    private Action<object?>? _continuation;
    private object? _continuationState;
    private ExecutionContext? _executionContext;

    public CancellationToken AttemptToken { get; } = attemptToken;

    public ValueTask<Outcome<object?>> Completion => new(this, 0);

    /// <summary>Sets the outcome and resumes the waiting pipeline on this thread. Call once.</summary>
    public void Complete(Outcome<object?> outcome)
    {
        _outcome = outcome;
        var continuation = Interlocked.Exchange(ref _continuation, s_completed);
        if (continuation is not null)
        {
            Invoke(continuation, _continuationState, _executionContext);
        }
    }

    public Outcome<object?> GetResult(short token) => _outcome;

    public ValueTaskSourceStatus GetStatus(short token) =>
        ReferenceEquals(Volatile.Read(ref _continuation), s_completed) ? ValueTaskSourceStatus.Succeeded : ValueTaskSourceStatus.Pending;

    public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
    {
        // The pipeline awaits with ConfigureAwait(false): no context to capture, only the ExecutionContext if asked.
        var context = (flags & ValueTaskSourceOnCompletedFlags.FlowExecutionContext) != 0 ? ExecutionContext.Capture() : null;
        _continuationState = state;
        _executionContext = context;
        if (Interlocked.CompareExchange(ref _continuation, continuation, null) is not null)
        {
            // Completed meanwhile: resume right here.
            Invoke(continuation, state, context);
        }
    }

    private static void Invoke(Action<object?> continuation, object? state, ExecutionContext? context)
    {
        if (context is null)
        {
            continuation(state);
        }
        else
        {
            ExecutionContext.Run(context, static s =>
            {
                var (action, argument) = ((Action<object?>, object?))s!;
                action(argument);
            }, (continuation, state));
        }
    }
}
