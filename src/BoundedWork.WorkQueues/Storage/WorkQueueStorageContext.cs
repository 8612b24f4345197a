using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Polly;

namespace BoundedWork.Hosting;

/// <summary>
/// What a typed work queue gives the storage that holds it (<see cref="WorkQueueBuilder{T}.UseStorage"/>): the
/// queue's name, settings and executor, and the durable consumer's decisions, so every storage runs deliveries the same
/// way: <see cref="Run"/> calls the handler in a scope of its own through the queue's Polly pipeline and says what to
/// record; <see cref="DeliverDeadLetter"/> hands a dead letter to the queue's <see cref="IDeadLetterHandler{T}"/>s.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
public sealed class WorkQueueStorageContext<T>
{
    private readonly WorkQueueRegistration<T> _registration;
    private readonly IServiceScopeFactory _scopes;
    private readonly DeadLetters<T> _deadLetters;
    private readonly ResiliencePipeline _pipeline;
    private BoundedExecutor? _executor;

    internal WorkQueueStorageContext(WorkQueueRegistration<T> registration, IServiceProvider services)
    {
        _registration = registration;
        Services = services;
        _scopes = services.GetRequiredService<IServiceScopeFactory>();
        var loggers = services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance;
        var logger = loggers.CreateLogger(WorkQueueLog.Category);
        _deadLetters = new DeadLetters<T>(registration.Name, _scopes, logger);
        _pipeline = WorkQueuePipeline.Build(registration.Name, registration.Options, services.GetRequiredService<RetryClock>(), logger, storedRetries: true);
    }

    /// <summary>Gets the queue's name, which is also its executor's.</summary>
    public string QueueName => _registration.Name;

    /// <summary>
    /// Gets the handler's type name, namespace-qualified (for example <c>Shop.LedgerHandler</c>): a storage names its
    /// deliveries after it for operators (<see cref="IDescribedWork"/>), as the in-memory queue does.
    /// </summary>
    public string HandlerName => _registration.HandlerName;

    /// <summary>Gets the queue's validated settings (retries, backoff, attempt timeout).</summary>
    public WorkQueueOptions<T> Options => _registration.Options;

    /// <summary>Gets the application's services.</summary>
    public IServiceProvider Services { get; }

    /// <summary>Gets the queue's executor: claim no more deliveries than it has room for, and run each on it.</summary>
    public BoundedExecutor Executor => _executor ??= Services.GetRequiredService<IBoundedExecutorRegistry>().GetExecutor(QueueName);

    /// <summary>Gets how many deliveries an item gets: its first and the queue's retries (counted again after a requeue from the dead letters).</summary>
    public int MaxDeliveries => Options.MaxRetryAttempts + 1;

    /// <summary>
    /// Runs one delivery on the calling (worker) thread: the handler in a new scope, with its
    /// <see cref="WorkItemContext"/> filled in, through the queue's pipeline (its per-attempt timeout; retries are the
    /// storage's to keep), and decides the outcome. At the item's last delivery, the dead letter is delivered to the
    /// handlers before this returns (a crash before the storage records it delivers it again). Never throws.
    /// </summary>
    /// <param name="item">The item, read from the stored payload.</param>
    /// <param name="delivery">Which item and delivery.</param>
    /// <param name="cancellationToken">Fires when someone cancels the item (<see cref="IDurableWorkQueue{T}.CancelAsync"/>); the handler gets it.</param>
    /// <returns>What to record.</returns>
    public StoredOutcome Run(T item, StoredDelivery delivery, CancellationToken cancellationToken)
    {
        var attempt = new WorkItemAttempt(QueueName, delivery.ItemId, delivery.Attempt, delivery.EnqueuedAt, IsDurable: true, delivery.TraceParent, delivery.TraceState);
        Exception? failure = null;
        var snooze = new StrongBox<TimeSpan?>();
        try
        {
            _pipeline.Execute(
                static (state, token) =>
                {
                    var (context, value, attempt, snooze) = state;
                    if (WorkItemAttempt.Run(context._scopes, context._registration.Handle, value, attempt, token, out var snoozedFor) is { } exception)
                    {
                        ExceptionDispatchInfo.Throw(exception);
                    }

                    snooze.Value = snoozedFor;
                },
                (this, item, attempt, snooze),
                cancellationToken);
        }
        catch (Exception ex)
        {
            failure = ex;
        }

        if (failure is null && snooze.Value is { } delay)
        {
            // The handler asked to run again later: not an attempt (the storage takes the delivery back).
            return new StoredOutcome(StoredOutcomeKind.Snoozed, delay, null);
        }

        if (failure is null)
        {
            // Finished despite a cancellation asked meanwhile: it completed.
            return new StoredOutcome(StoredOutcomeKind.Completed, TimeSpan.Zero, null);
        }

        if (cancellationToken.IsCancellationRequested)
        {
            // The handler stopped (or failed) after its item was cancelled: not retried, not a dead letter.
            return new StoredOutcome(StoredOutcomeKind.Cancelled, TimeSpan.Zero, failure);
        }

        // A handler that cannot be constructed fails every delivery the same way: stored as a dead letter at once, to
        // requeue once the application registers the missing service.
        if (failure is not HandlerUnavailableException && delivery.Attempt - delivery.AttemptBase < MaxDeliveries)
        {
            return new StoredOutcome(StoredOutcomeKind.Retry, GetRetryDelay(delivery.Attempt), failure);
        }

        DeliverDeadLetter(new DeadLetter<T>(QueueName, delivery.ItemId, item, DeadLetterReason.Failed, null, failure, delivery.Attempt, delivery.Payload));
        return new StoredOutcome(StoredOutcomeKind.DeadLettered, TimeSpan.Zero, failure);
    }

    /// <summary>
    /// Delivers a dead letter to the queue's <see cref="IDeadLetterHandler{T}"/>s on the calling thread (a worker or a
    /// storage thread, never the ThreadPool's), each in its own scope; a handler that fails is logged. Never throws.
    /// </summary>
    /// <param name="letter">The dead letter.</param>
    /// <exception cref="ArgumentNullException"><paramref name="letter"/> is <see langword="null"/>.</exception>
    public void DeliverDeadLetter(DeadLetter<T> letter)
    {
        ArgumentNullException.ThrowIfNull(letter);
        var delivery = _deadLetters.DeliverAsync(letter);
        if (!delivery.IsCompleted)
        {
            delivery.GetAwaiter().GetResult();
        }
    }

    /// <summary>
    /// Gets the stored retry's delay after the given delivery: the queue's exponential backoff
    /// (<see cref="WorkQueueOptions{T}.RetryDelay"/> doubled per delivery, at most
    /// <see cref="WorkQueueOptions{T}.MaxRetryDelay"/>) with ±20% jitter, so items that failed together do not all come
    /// back together.
    /// </summary>
    /// <param name="attempt">The delivery that failed (1 for the first).</param>
    /// <returns>How long the item waits before its next delivery.</returns>
    public TimeSpan GetRetryDelay(int attempt)
    {
        var exponential = Options.RetryDelay.TotalMilliseconds * Math.Pow(2, Math.Min(attempt - 1, 30));
        var capped = Math.Min(exponential, Options.MaxRetryDelay.TotalMilliseconds);
        var jittered = capped * (0.8 + (0.4 * Random.Shared.NextDouble()));
        return TimeSpan.FromMilliseconds(Math.Min(jittered, Options.MaxRetryDelay.TotalMilliseconds));
    }
}
