using System.Diagnostics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Polly;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// A typed work queue on a named <see cref="BoundedExecutor"/>: each item runs its handler through a Polly pipeline,
/// on the executor's workers; failed items wait for their retry on the <see cref="RetryClock"/> thread (holding no
/// worker), items with the same ordering key run one at a time in submission order, and every item that is not
/// handled becomes a dead letter.
/// </summary>
/// <remarks>
/// <para>
/// An item's first attempt is one executor item. When it fails and the pipeline retries, the pipeline awaits its
/// delay on the retry clock and the item's executor item ends, so the worker is free. When the delay ends, the
/// attempt is handed back to a worker as a new executor item (<see cref="RetryHandoff"/>); if the executor refuses
/// it (queue full, shut down) or drops it later, the item becomes a dead letter. Under the Wait policy a handoff
/// that finds the queue full waits for room without holding the thread that made it (<see cref="SubmitOffWorker"/>).
/// </para>
/// <para>
/// Ordering: the first item of a key owns the key; later items of that key wait, in order, in the key's backlog
/// (not in the executor's queue, bounded by the executor's queue capacity) until the owner ends, retries included.
/// Once the executor has shut down, no item joins a backlog (it is refused), and when the queue stops, the items
/// still waiting in backlogs (behind an owner that is still running past the shutdown deadline) become dead letters.
/// </para>
/// </remarks>
internal sealed class WorkQueue<T> : IWorkQueue<T>, IWorkQueueRuntime<T>, IDelayedEnqueue<T>, IDisposable
{
    IWorkQueue<T> IWorkQueueRuntime<T>.Queue => this;

    private static readonly Action<WorkQueueEntry<T>> s_runFirstAttempt = static entry => entry.Queue.RunFirstAttempt(entry);
    private static readonly Action<WorkQueueEntry<T>> s_runRetry = static entry => entry.Queue.RunRetry(entry);
    private static readonly Func<ResilienceContext, WorkQueueEntry<T>, ValueTask<Outcome<object?>>> s_attempt =
        static (context, entry) => entry.Queue.Attempt(context, entry);

    /// <summary>Entries whose key was released on this thread, started in order by the outermost release (no recursion).</summary>
    [ThreadStatic]
    private static Queue<WorkQueueEntry<T>>? t_starts;

    private readonly IBoundedExecutorRegistry _registry;
    private readonly IServiceScopeFactory _scopes;
    private readonly Action<IServiceProvider, T, CancellationToken> _handle;
    private readonly Func<T, object?>? _orderingKey;
    private readonly Func<T, string?>? _tenantOf;
    private readonly ResiliencePipeline _pipeline;
    private readonly ILogger _logger;
    private readonly DeadLetters<T> _deadLetters;
    private readonly CancellationTokenSource _stopped = new();
    private readonly CancellationToken _stoppedToken;
    private readonly object _keysLock = new();
    private readonly Dictionary<object, Queue<WorkQueueEntry<T>>?> _busyKeys = [];
    private readonly InFlightCount _inFlight = new();
    private readonly RetryClock _clock;
    private int _heldBack;
    private bool _backlogsClosed;
    private readonly WorkQueueDiagnostics _diagnostics;
    private BoundedExecutor? _executor;
    private long _lastItemId;
    private long _snoozed;

    public WorkQueue(string name, WorkQueueOptions<T> options, Action<IServiceProvider, T, CancellationToken> handle, IServiceProvider services, string handlerName = "handler")
    {
        Name = name;
        HandlerName = handlerName;
        _stoppedToken = _stopped.Token;
        _handle = handle;
        _orderingKey = options.OrderingKey;
        _tenantOf = options.TenantSelector;
        _registry = services.GetRequiredService<IBoundedExecutorRegistry>();
        _scopes = services.GetRequiredService<IServiceScopeFactory>();
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger(WorkQueueLog.Category);
        _deadLetters = new DeadLetters<T>(name, _scopes, _logger);
        _clock = services.GetRequiredService<RetryClock>();
        _diagnostics = services.GetRequiredService<WorkQueueDiagnostics>();
        _pipeline = WorkQueuePipeline.Build(name, options, _clock, _logger, storedRetries: false);
    }

    public string Name { get; }

    /// <summary>The handler's type name (namespace-qualified), for the items' descriptions.</summary>
    public string HandlerName { get; }

    /// <summary>Gets the number of accepted items not yet handled or dead-lettered.</summary>
    public int InFlightCount => _inFlight.Value;

    /// <summary>Gets how many times a handler snoozed an item (<see cref="WorkItemContext.Snooze"/>).</summary>
    public long Snoozed => Interlocked.Read(ref _snoozed);

    private BoundedExecutor Executor => _executor ??= _registry.GetExecutor(Name);

    public bool TryEnqueue(T item)
    {
        var entry = Accept(item);
        return Admit(entry) switch
        {
            KeyAdmission.HeldBack => true,
            KeyAdmission.Refused => false,
            _ => entry.Tenant is { } tenant ? Executor.ForTenant(tenant).TryExecute(s_runFirstAttempt, entry) : Executor.TryExecute(s_runFirstAttempt, entry), // refused: the OnRejected hook dead-letters it
        };
    }

    public ValueTask EnqueueAsync(T item, CancellationToken cancellationToken = default)
    {
        var entry = Accept(item);
        switch (Admit(entry))
        {
            case KeyAdmission.HeldBack:
                return ValueTask.CompletedTask;
            case KeyAdmission.Refused:
                return ValueTask.FromException(new RejectedExecutionException(Name, entry.NotRun!.Value));
        }

        if (HandlerWait.Current is { } handlerWait && Executor.RejectionPolicy == RejectionPolicy.Wait && !Executor.IsWorkerThread)
        {
            // An asynchronous handler's flow, off its worker, while that worker waits for the handler: waiting here
            // for room could wait for that very worker. Make the submission on the worker, as a blocking handler's is.
            return SubmitOnHandlersWorkerAsync(handlerWait, entry, cancellationToken);
        }

        return SubmitAsync(entry, cancellationToken);
    }

    /// <summary>
    /// Accepts the item now and holds it on the retry clock until its time (<see cref="DelayedEntry{T}"/>), then admits
    /// it as a retry's hand-off is (<see cref="StartDelayed"/>). A queue that has stopped refuses it: a dead letter.
    /// </summary>
    public ValueTask EnqueueDelayedAsync(T item, TimeSpan? delay, DateTimeOffset? runAt, CancellationToken cancellationToken)
    {
        var wait = delay ?? runAt!.Value - _clock.GetUtcNow();
        if (wait <= TimeSpan.Zero)
        {
            return EnqueueAsync(item, cancellationToken);
        }

        var entry = Accept(item);
        if (_stoppedToken.IsCancellationRequested || Executor.IsShutdown)
        {
            entry.NotRun = RejectionReason.ShutDown;
            _ = Finish(entry, Outcome.FromResult<object?>(null));
            return ValueTask.FromException(new RejectedExecutionException(Name, RejectionReason.ShutDown));
        }

        DelayedEntry<T>.Start(this, entry, _clock, wait, _stoppedToken);
        return ValueTask.CompletedTask;
    }

    /// <summary>On the retry clock's thread: a delayed item's time has come. It joins its key, or goes to the executor without blocking the clock.</summary>
    internal void StartDelayed(WorkQueueEntry<T> entry)
    {
        // A snoozed item kept its key while it waited: it runs again without queueing behind itself.
        if (entry.OwnsKey || Admit(entry) == KeyAdmission.Run)
        {
            SubmitOffWorker(s_runFirstAttempt, entry); // refused or dropped: the OnRejected hook dead-letters it
        }
    }

    /// <summary>The queue stopped while a delayed item waited for its time: it never runs.</summary>
    internal void AbandonDelayed(WorkQueueEntry<T> entry)
    {
        entry.NotRun = RejectionReason.ShutDown;
        _ = Finish(entry, Outcome.FromResult<object?>(null));
    }

    /// <summary>Creates every part the queue needs at host start, so a bad executor setting fails the start.</summary>
    public Task StartAsync(CancellationToken cancellationToken)
    {
        _ = Executor;
        return Task.CompletedTask;
    }

    public Task StoppingAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StoppedAsync(CancellationToken cancellationToken) => StopAsync(cancellationToken);

    /// <summary>
    /// Called after every executor has shut down: ends the retry waits of items still waiting (each becomes a dead
    /// letter), then waits until every accepted item has an outcome, or <paramref name="cancellationToken"/> fires;
    /// then the items still held behind their key become dead letters.
    /// </summary>
    public Task StopAsync(CancellationToken cancellationToken)
    {
        // An item whose retry wait ends releases its key to the next item of its backlog, which the shut-down executor
        // refuses (a dead letter), and so on down the backlog, in order.
        _stopped.Cancel();
        return WaitIdleAsync(cancellationToken);
    }

    public void Dispose() => _stopped.Dispose();

    private async Task WaitIdleAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _inFlight.WhenIdle().WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The shutdown deadline: an item still running past it holds its key, and the items behind it never run.
        }

        AbandonBacklogs();
        if (cancellationToken.IsCancellationRequested && InFlightCount is var left and > 0)
        {
            _logger.StoppedWithItemsInFlight(Name, left);
        }
    }

    /// <summary>The executor refused, dropped or abandoned one of the entry's executor items.</summary>
    internal Task OnNotRun(WorkQueueEntry<T> entry, RejectionReason reason)
    {
        entry.NotRun = reason;
        if (entry.TakeRetry() is { } retry)
        {
            // A retry never ran: the pipeline ends now, and its item becomes a dead letter when it does.
            retry.Complete(Outcome.FromResult<object?>(null));
            return Task.CompletedTask;
        }

        return Finish(entry, Outcome.FromResult<object?>(null));
    }

    private WorkQueueEntry<T> Accept(T item)
    {
        var tenant = _tenantOf?.Invoke(item);
        if (tenant is not null && FairShareSettings.GetTenantError(tenant) is { } error)
        {
            throw new ArgumentException($"Work queue '{Name}': TenantSelector returned an invalid tenant. {error}", nameof(item));
        }

        var entry = new WorkQueueEntry<T>(this, item, _orderingKey?.Invoke(item), Interlocked.Increment(ref _lastItemId)) { Tenant = tenant };
        _inFlight.Increment();
        return entry;
    }

    private ValueTask SubmitAsync(WorkQueueEntry<T> entry, CancellationToken cancellationToken)
    {
        var queued = entry.Tenant is { } tenant
            ? Executor.ForTenant(tenant).ExecuteAsync(s_runFirstAttempt, entry, cancellationToken)
            : Executor.ExecuteAsync(s_runFirstAttempt, entry, cancellationToken);
        return queued.IsCompletedSuccessfully ? ValueTask.CompletedTask : AwaitQueuedAsync(queued, entry);
    }

    /// <summary>
    /// Submits the entry on the worker that waits for the calling handler. There the Wait policy never blocks: a
    /// full queue runs the entry inline on that worker (as it does for a blocking handler's submission), so the
    /// handler's wait for room cannot wait for its own worker. The caller's execution context travels with it.
    /// </summary>
    private async ValueTask SubmitOnHandlersWorkerAsync(HandlerWait handlerWait, WorkQueueEntry<T> entry, CancellationToken cancellationToken)
    {
        var submitted = new TaskCompletionSource<Task>(TaskCreationOptions.RunContinuationsAsynchronously);
        var context = ExecutionContext.Capture();
        void Submit() => submitted.SetResult(SubmitAsync(entry, cancellationToken).AsTask());
        if (!handlerWait.TryPost(() =>
        {
            try
            {
                if (context is null)
                {
                    Submit();
                }
                else
                {
                    ExecutionContext.Run(context, static submit => ((Action)submit!)(), (Action)Submit);
                }
            }
            catch (Exception ex)
            {
                submitted.TrySetException(ex);
            }
        }))
        {
            // The handler's worker stopped waiting for it meanwhile: nothing here can wait for that worker any more.
            await SubmitAsync(entry, cancellationToken).ConfigureAwait(false);
            return;
        }

        var queued = await submitted.Task.ConfigureAwait(false);
        await queued.ConfigureAwait(false);
    }

    private async ValueTask AwaitQueuedAsync(ValueTask queued, WorkQueueEntry<T> entry)
    {
        try
        {
            await queued.ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // The producer gave up waiting for room: the item was never queued and the producer still holds it.
            await Finish(entry, Outcome.FromResult<object?>(null), deadLetter: false).ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// Decides whether the entry runs now (owning its key), waits behind its key, or is refused (then it has been
    /// dead-lettered, and <see cref="WorkQueueEntry{T}.NotRun"/> says why).
    /// </summary>
    private KeyAdmission Admit(WorkQueueEntry<T> entry)
    {
        if (entry.Key is not { } key)
        {
            return KeyAdmission.Run;
        }

        RejectionReason refusal;
        lock (_keysLock)
        {
            if (!_busyKeys.TryGetValue(key, out var backlog))
            {
                // A free key: the executor itself refuses the entry if it has shut down.
                _busyKeys.Add(key, null);
                entry.OwnsKey = true;
                return KeyAdmission.Run;
            }

            // Checked under the lock that AbandonBacklogs takes: an entry either joins a backlog before the backlogs
            // are emptied at stop, or is refused here; none is left behind.
            if (_backlogsClosed || Executor.IsShutdown)
            {
                refusal = RejectionReason.ShutDown;
            }
            else if (_heldBack < Executor.QueueCapacity)
            {
                if (backlog is null)
                {
                    backlog = new Queue<WorkQueueEntry<T>>();
                    _busyKeys[key] = backlog;
                }

                backlog.Enqueue(entry);
                _heldBack++;
                return KeyAdmission.HeldBack;
            }
            else
            {
                refusal = RejectionReason.QueueFull;
            }
        }

        entry.NotRun = refusal;
        _ = Finish(entry, Outcome.FromResult<object?>(null));
        return KeyAdmission.Refused;
    }

    /// <summary>
    /// Empties every key's backlog for good (the queue is stopping): the items still waiting behind an owner that runs
    /// past the shutdown deadline never run, and become dead letters in submission order. Later items of a busy key
    /// are refused by <see cref="Admit"/>.
    /// </summary>
    private void AbandonBacklogs()
    {
        List<WorkQueueEntry<T>>? abandoned = null;
        lock (_keysLock)
        {
            _backlogsClosed = true;
            foreach (var backlog in _busyKeys.Values)
            {
                if (backlog is { Count: > 0 })
                {
                    (abandoned ??= []).AddRange(backlog);
                    _heldBack -= backlog.Count;
                    backlog.Clear();
                }
            }
        }

        if (abandoned is null)
        {
            return;
        }

        abandoned.Sort(static (x, y) => x.Id.CompareTo(y.Id));
        foreach (var entry in abandoned)
        {
            entry.NotRun = RejectionReason.Abandoned;
            _ = Finish(entry, Outcome.FromResult<object?>(null));
        }
    }

    /// <summary>Hands the key to the next entry in its backlog, or frees it.</summary>
    private WorkQueueEntry<T>? ReleaseKey(object key)
    {
        lock (_keysLock)
        {
            if (_busyKeys.TryGetValue(key, out var backlog) && backlog is { Count: > 0 })
            {
                _heldBack--;
                var next = backlog.Dequeue();
                next.OwnsKey = true;
                return next;
            }

            _busyKeys.Remove(key);
            return null;
        }
    }

    /// <summary>Starts entries whose key was just handed to them, in order, without recursing.</summary>
    private void StartReleased(WorkQueueEntry<T> entry)
    {
        if (t_starts is { } pending)
        {
            pending.Enqueue(entry);
            return;
        }

        var starts = t_starts = new Queue<WorkQueueEntry<T>>();
        try
        {
            var next = entry;
            do
            {
                StartOne(next);
            }
            while (starts.TryDequeue(out next));
        }
        finally
        {
            t_starts = null;
        }
    }

    private void StartOne(WorkQueueEntry<T> entry)
    {
        if (!Executor.IsWorkerThread)
        {
            // The releasing thread is the retry clock, a producer's continuation or a shutdown path: never block it.
            SubmitOffWorker(s_runFirstAttempt, entry);
            return;
        }

        try
        {
            // On a worker the policy applies in full; Wait and CallerRuns run the entry right here when the queue is full.
            if (entry.Tenant is { } tenant)
            {
                Executor.ForTenant(tenant).Execute(s_runFirstAttempt, entry);
            }
            else
            {
                Executor.Execute(s_runFirstAttempt, entry);
            }
        }
        catch (RejectedExecutionException)
        {
            // Already dead-lettered by the OnRejected hook.
        }
    }

    private void RunFirstAttempt(WorkQueueEntry<T> entry) => _ = ProcessAsync(entry);

    private async Task ProcessAsync(WorkQueueEntry<T> entry)
    {
        // The item's processing is its own, even if a dead-letter handler submitted it: its failure is a new dead
        // letter, delivered as usual.
        DeadLetterFlow.Leave();
        Outcome<object?> outcome;
        var context = ResilienceContextPool.Shared.Get(Name, _stoppedToken);
        try
        {
            outcome = await _pipeline.ExecuteOutcomeAsync(s_attempt, context, entry).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            outcome = Outcome.FromException<object?>(ex);
        }
        finally
        {
            ResilienceContextPool.Shared.Return(context);
        }

        if (outcome.Exception is null && entry.SnoozedFor is { } snooze)
        {
            // The handler asked to run again later: not an outcome. The item waits on the retry clock, holding no worker
            // and no slot (its key stays its own), then runs again; a queue that stops meanwhile dead-letters it.
            entry.SnoozedFor = null;
            Interlocked.Increment(ref _snoozed);
            _diagnostics.Snoozed(Name, entry.Id, snooze);
            if (_stoppedToken.IsCancellationRequested)
            {
                AbandonDelayed(entry);
                return;
            }

            DelayedEntry<T>.Start(this, entry, _clock, snooze, _stoppedToken);
            return;
        }

        try
        {
            await Finish(entry, outcome).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            _logger.UnexpectedFailure(Name, entry.Item, ex);
        }
    }

    private ValueTask<Outcome<object?>> Attempt(ResilienceContext context, WorkQueueEntry<T> entry)
    {
        if (entry.Attempts == 0 || (Executor.IsWorkerThread && !IsRateLimited(Executor.Settings)))
        {
            return new ValueTask<Outcome<object?>>(RunAttempt(entry, context.CancellationToken));
        }

        // A retry whose delay ended on the retry clock's thread, or any retry under a rate limit (so that it takes a
        // permit of its own, as a new executor item): hand the attempt to a worker. If the executor refuses it, the
        // OnRejected hook completes the handoff at once (see OnNotRun).
        var retry = new RetryHandoff(context.CancellationToken);
        entry.SetRetry(retry);
        SubmitOffWorker(s_runRetry, entry);
        return retry.Completion;
    }

    private static bool IsRateLimited(BoundedExecutorSettings settings) => settings.RateLimiter is not null || settings.PermitsPerSecond > 0;

    /// <summary>
    /// Hands an entry to the executor from a thread that is not one of its workers (the retry clock, a producer's
    /// continuation, a shutdown path) without blocking that thread or running the entry on it. Under the Wait
    /// policy the entry waits for room as a producer's item would, up to the executor's wait timeout: the executor
    /// admits it itself when a worker frees a slot, so no thread waits. Under every other policy a full queue refuses
    /// it at once. Whatever refuses or drops it reports it through the OnRejected hook: a dead letter.
    /// </summary>
    private void SubmitOffWorker(Action<WorkQueueEntry<T>> run, WorkQueueEntry<T> entry)
    {
        // The executor reads the policy again: a reconfiguration between the two reads makes this one entry meet the
        // new policy (CallerRuns would run it on this thread). A rare race, and never a lost item.
        if (Executor.RejectionPolicy != RejectionPolicy.Wait)
        {
            _ = entry.Tenant is { } tenant ? Executor.ForTenant(tenant).TryExecute(run, entry) : Executor.TryExecute(run, entry);
            return;
        }

        var queued = entry.Tenant is { } owner ? Executor.ForTenant(owner).ExecuteAsync(run, entry) : Executor.ExecuteAsync(run, entry);
        if (!queued.IsCompletedSuccessfully)
        {
            // Its only failures are rejections, already dead-lettered: observe them, on the completing thread.
            queued.AsTask().ContinueWith(
                static task => _ = task.Exception,
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously | TaskContinuationOptions.OnlyOnFaulted,
                TaskScheduler.Default);
        }
    }

    private void RunRetry(WorkQueueEntry<T> entry)
    {
        var retry = entry.TakeRetry();
        Debug.Assert(retry is not null, "A retry item runs only while its handoff is parked.");
        retry?.Complete(RunAttempt(entry, retry.AttemptToken));
    }

    private Outcome<object?> RunAttempt(WorkQueueEntry<T> entry, CancellationToken cancellationToken)
    {
        entry.Attempts++;
        var attempt = new WorkItemAttempt(Name, entry.Id, entry.Attempts, entry.EnqueuedAt, IsDurable: false);
        if (WorkItemAttempt.Run(_scopes, _handle, entry.Item, attempt, cancellationToken, out var snoozedFor) is { } exception)
        {
            entry.LastException = exception;
            return Outcome.FromException<object?>(exception);
        }

        if (snoozedFor is not null)
        {
            // A snooze is not an attempt: the next run has the same number. The pipeline ends here with a success.
            entry.Attempts--;
            entry.SnoozedFor = snoozedFor;
        }

        return Outcome.FromResult<object?>(null);
    }

    /// <summary>Gives the entry its one outcome: releases its key, delivers its dead letter if it has one.</summary>
    private Task Finish(WorkQueueEntry<T> entry, Outcome<object?> outcome, bool deadLetter = true)
    {
        var next = entry.OwnsKey ? ReleaseKey(entry.Key!) : null;
        var letter = deadLetter ? ToDeadLetter(entry, outcome) : null;
        var delivery = letter is null ? Done() : DeliverAsync(letter);
        if (next is not null)
        {
            StartReleased(next);
        }

        return delivery;
    }

    private DeadLetter<T>? ToDeadLetter(WorkQueueEntry<T> entry, Outcome<object?> outcome)
    {
        if (entry.NotRun is { } notRun)
        {
            var reason = notRun is RejectionReason.ShutDown or RejectionReason.Abandoned ? DeadLetterReason.ShutDown : DeadLetterReason.Rejected;
            return new DeadLetter<T>(Name, entry.Id, entry.Item, reason, notRun, entry.LastException, entry.Attempts);
        }

        if (outcome.Exception is not { } exception)
        {
            return null;
        }

        if (exception is OperationCanceledException && _stoppedToken.IsCancellationRequested)
        {
            // The host stopped while the item waited for a retry: report the failure that caused the wait.
            return new DeadLetter<T>(Name, entry.Id, entry.Item, DeadLetterReason.ShutDown, null, entry.LastException ?? exception, entry.Attempts);
        }

        return new DeadLetter<T>(Name, entry.Id, entry.Item, DeadLetterReason.Failed, null, exception, entry.Attempts);
    }

    private async Task DeliverAsync(DeadLetter<T> letter)
    {
        try
        {
            await _deadLetters.DeliverAsync(letter).ConfigureAwait(false);
        }
        finally
        {
            await Done().ConfigureAwait(false);
        }
    }

    private Task Done()
    {
        _inFlight.Decrement();
        return Task.CompletedTask;
    }

    private enum KeyAdmission
    {
        Run,
        HeldBack,
        Refused,
    }
}
