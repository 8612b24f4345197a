using System.Diagnostics;
using BoundedWork.Internal;

namespace BoundedWork;

/// <summary>
/// A fixed-size, resizable executor: a bounded queue consumed by dedicated worker threads of its own, so that
/// blocking work never runs on (and never starves) the shared ThreadPool.
/// </summary>
/// <remarks>
/// <para>
/// No step of waking a worker, taking an item, running it, completing its result, admitting a waiting producer's
/// item or honouring a shutdown deadline needs a ThreadPool thread: idle workers park on a handshake of their own
/// that submitters release directly, a worker that frees a slot admits the oldest waiting producer's item itself,
/// and deadlines are kept by the executor's own watchdog thread.
/// </para>
/// <para>
/// Every item ends in exactly one outcome, counted in <see cref="GetStatistics"/>: completed, failed, cancelled,
/// rejected, discarded or abandoned. Items that do not run are reported to their caller (an exception, a
/// <see langword="false"/> return or a faulted task), to <see cref="BoundedExecutorOptions.OnRejected"/>, or
/// returned by <see cref="ShutdownAsync(CancellationToken)"/>. Nothing is dropped silently.
/// </para>
/// </remarks>
public sealed partial class BoundedExecutor : IAsyncDisposable, IDisposable
{
    private readonly TicketQueue _queue;
    private readonly WaitingProducers _producers = new();
    private readonly IdleWorkers _idle = new();
    private readonly bool _flowExecutionContext;
    private readonly TimeProvider _timeProvider;
    private readonly ItemClock _itemClock;
    private readonly Action<WorkItemFailedArguments>? _onError;
    private readonly Action<WorkItemRejectedArguments>? _onRejected;
    private readonly Action<ThreadPoolBlockingWaitArguments>? _onThreadPoolBlockingWait;
    private readonly ExecutorInstruments _instruments;
    private readonly TimeSpan _disposeTimeout;
    private volatile int _queueCapacity;
    private volatile RejectionPolicy _policy;
    private long _waitTimeoutTicks;

    // Outcomes of items that never reached the queue: each is one increment from "submitting" to its outcome.
    private long _rejected;
    private long _droppedNew;
    private long _cancelledBeforeQueue;

    // Outcomes of items claimed from the queue by a party other than a worker (evicted, abandoned, or found
    // cancelled by them). With the workers' own counters these are the claim outcomes of the statistics.
    private long _evicted;
    private long _abandoned;
    private long _cancelledAfterClaim;

    // Items run on the submitting thread: started first, then exactly one outcome.
    private long _callerStarted;
    private long _callerCompleted;
    private long _callerFailed;
    private long _callerCancelled;

    private long _callbackFailures;
    private long _threadPoolBlockingWaits;

    /// <summary>Creates an executor and starts its worker threads.</summary>
    /// <param name="options">The settings; copied, so later changes to the object have no effect.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">A setting is invalid; the message names each invalid setting.</exception>
    public BoundedExecutor(BoundedExecutorOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var errors = options.GetValidationErrors();
        if (errors.Count > 0)
        {
            throw new ArgumentException($"Invalid BoundedExecutorOptions for executor '{options.Name}': {string.Join(" ", errors)}", nameof(options));
        }

        Name = options.Name;
        MaxWorkerCount = options.MaxWorkerCount;
        _queueCapacity = options.QueueCapacity;
        _queue = new TicketQueue(options.QueueCapacity);
        _policy = options.RejectionPolicy;
        _waitTimeoutTicks = options.WaitTimeout.Ticks;
        _flowExecutionContext = options.FlowExecutionContext;
        _timeProvider = options.TimeProvider;
        _itemClock = new ItemClock(options.TimeProvider);
        _onError = options.OnError;
        _onRejected = options.OnRejected;
        _onThreadPoolBlockingWait = options.OnThreadPoolBlockingWait;
        _onSlowItem = options.OnSlowItem;
        _disposeTimeout = options.DisposeTimeout;
        _slowItemThresholdTicks = options.SlowItemThreshold.Ticks;
        _queueWaitThresholdTicks = options.QueueWaitThreshold.Ticks;
        _instruments = new ExecutorInstruments(this, options.MeterFactory);
        _ = _completion.Task.ContinueWith(static (_, instruments) => ((ExecutorInstruments)instruments!).Dispose(), _instruments, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);

        lock (LifecycleLock)
        {
            _targetWorkers = options.WorkerCount;
            for (var i = 0; i < options.WorkerCount; i++)
            {
                StartWorkerUnsynchronized();
            }
        }

        StartWatchdog();
    }

    /// <summary>Gets the executor's name.</summary>
    public string Name { get; }

    /// <summary>Gets the hard maximum worker count that <see cref="Resize(int)"/> accepts.</summary>
    public int MaxWorkerCount { get; }

    /// <summary>Gets the queue capacity.</summary>
    public int QueueCapacity => _queueCapacity;

    /// <summary>Gets the policy applied when the queue is full.</summary>
    public RejectionPolicy RejectionPolicy => _policy;

    /// <summary>Gets how long the Wait policy waits for room.</summary>
    public TimeSpan WaitTimeout => TimeSpan.FromTicks(Volatile.Read(ref _waitTimeoutTicks));

    /// <summary>Gets the settings that can change at runtime, as one consistent value.</summary>
    public BoundedExecutorSettings Settings
    {
        get
        {
            lock (LifecycleLock)
            {
                return SettingsUnsynchronized();
            }
        }
    }

    /// <summary>Gets a value indicating whether shutdown has begun; no new item is accepted after it.</summary>
    public bool IsShutdown => _queue.IsShutdown;

    /// <summary>Gets the number of items waiting in the queue now.</summary>
    public int QueueLength => _queue.Count;

    /// <summary>
    /// Gets a value indicating whether the current thread is one of this executor's worker threads.
    /// </summary>
    public bool IsWorkerThread => Worker.Current?.Owner == this;

    /// <summary>
    /// Queues a fire-and-forget item if there is room now. Never blocks and never runs the item on the caller.
    /// </summary>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <returns><see langword="true"/> if queued; <see langword="false"/> if the queue is full or the executor is shut down (the item is counted as rejected and reported to <see cref="BoundedExecutorOptions.OnRejected"/>).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public bool TryExecute(Action action)
    {
        ArgumentNullException.ThrowIfNull(action);
        return TryExecuteCore(NewItem(action, null, QueuedItem.InvokeAction));
    }

    /// <summary>
    /// Queues a fire-and-forget item with its state, without a closure, if there is room now.
    /// </summary>
    /// <typeparam name="TState">The state's type; a reference type avoids boxing.</typeparam>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="state">The argument passed to <paramref name="action"/>.</param>
    /// <returns><see langword="true"/> if queued; otherwise <see langword="false"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public bool TryExecute<TState>(Action<TState> action, TState state)
    {
        ArgumentNullException.ThrowIfNull(action);
        return TryExecuteCore(NewItem(action, state, StateInvoker<TState>.Instance));
    }

    /// <summary>
    /// Queues a fire-and-forget item, applying the executor's <see cref="RejectionPolicy"/> when the queue is full.
    /// Under the Wait policy this call blocks; called from one of this executor's own workers it runs the item
    /// inline instead, so a worker can never deadlock waiting on its own queue.
    /// </summary>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The Abort policy rejected the item, the Wait policy timed out, or the executor is shut down (under any policy).</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting for room (the item is counted as cancelled).</exception>
    public void Execute(Action action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        ExecuteCore(NewItem(action, null, QueuedItem.InvokeAction), cancellationToken);
    }

    /// <summary>
    /// Queues a fire-and-forget item with its state, without a closure, applying the executor's <see cref="RejectionPolicy"/>.
    /// </summary>
    /// <typeparam name="TState">The state's type; a reference type avoids boxing.</typeparam>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="state">The argument passed to <paramref name="action"/>.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The item was rejected.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting for room.</exception>
    public void Execute<TState>(Action<TState> action, TState state, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        ExecuteCore(NewItem(action, state, StateInvoker<TState>.Instance), cancellationToken);
    }

    /// <summary>
    /// Queues a fire-and-forget item, applying the <see cref="RejectionPolicy"/>; under the Wait policy the wait
    /// for room is asynchronous. The returned task completes when the item is accepted, not when it has run.
    /// </summary>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <returns>A task that completes when the item is queued (or handled by the policy).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The item was rejected (thrown through the returned task).</exception>
    public ValueTask ExecuteAsync(Action action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        return ExecuteAsyncCore(NewItem(action, null, QueuedItem.InvokeAction), cancellationToken);
    }

    /// <summary>
    /// Queues a fire-and-forget item with its state, applying the <see cref="RejectionPolicy"/>; the Wait policy waits asynchronously.
    /// </summary>
    /// <typeparam name="TState">The state's type; a reference type avoids boxing.</typeparam>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <param name="state">The argument passed to <paramref name="action"/>.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <returns>A task that completes when the item is queued (or handled by the policy).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public ValueTask ExecuteAsync<TState>(Action<TState> action, TState state, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        return ExecuteAsyncCore(NewItem(action, state, StateInvoker<TState>.Instance), cancellationToken);
    }

    /// <summary>
    /// Creates a <see cref="System.Threading.Channels.ChannelWriter{T}"/> whose every item runs
    /// <paramref name="handler"/> on this executor, so code that already produces into a channel plugs in unchanged.
    /// <c>WriteAsync</c> behaves as <see cref="ExecuteAsync{TState}(Action{TState}, TState, CancellationToken)"/> (the
    /// rejection policy applies, and a shut-down executor surfaces as a
    /// <see cref="System.Threading.Channels.ChannelClosedException"/>). <c>TryWrite</c> queues the item if there is room
    /// now; otherwise it returns <see langword="false"/> and, as with any channel, the item stays the producer's: it is
    /// not submitted, so it is neither counted nor reported. <c>WaitToWriteAsync</c> completes with
    /// <see langword="true"/> when the queue has room, under every policy (a worker that frees a slot completes it,
    /// without the ThreadPool), and with <see langword="false"/> after shutdown; so the usual
    /// <c>while (await writer.WaitToWriteAsync()) if (writer.TryWrite(item)) break;</c> waits instead of spinning.
    /// Completing the writer stops that writer only, never the executor.
    /// </summary>
    /// <typeparam name="T">The items' type.</typeparam>
    /// <param name="handler">What to run for each item, on a worker thread.</param>
    /// <returns>A new writer.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="handler"/> is <see langword="null"/>.</exception>
    public System.Threading.Channels.ChannelWriter<T> CreateWriter<T>(Action<T> handler)
    {
        ArgumentNullException.ThrowIfNull(handler);
        return new ExecutorChannelWriter<T>(this, handler);
    }

    /// <summary>
    /// Runs a blocking delegate on a worker thread and lets the caller await its completion. The caller's
    /// continuation never runs on a worker thread.
    /// </summary>
    /// <param name="action">The blocking work.</param>
    /// <param name="cancellationToken">Cancels the item if it has not started yet; it then never runs and the task is cancelled.</param>
    /// <returns>A task that completes when the item has run; faulted with the item's exception or a <see cref="RejectedExecutionException"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public Task RunAsync(Action action, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(action);
        return RunCore<object?>(action, cancellationToken);
    }

    /// <summary>
    /// Runs a blocking function on a worker thread and lets the caller await its result:
    /// <c>await executor.RunAsync(() => legacy.Get(id))</c>. The caller's continuation never runs on a worker thread.
    /// </summary>
    /// <typeparam name="TResult">The function's result type.</typeparam>
    /// <param name="function">The blocking work.</param>
    /// <param name="cancellationToken">Cancels the item if it has not started yet; it then never runs and the task is cancelled.</param>
    /// <returns>A task with the function's result; faulted with its exception or a <see cref="RejectedExecutionException"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="function"/> is <see langword="null"/>.</exception>
    public Task<TResult> RunAsync<TResult>(Func<TResult> function, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(function);
        return RunCore<TResult>(function, cancellationToken);
    }

    /// <summary>
    /// Changes several runtime settings in one validated, atomic step: either every setting in
    /// <paramref name="change"/> is applied, or (when any is invalid) none is. Items already queued stay queued;
    /// shrinking the queue capacity evicts nothing, and growing it lets waiting producers in at once.
    /// </summary>
    /// <param name="change">The settings to change; <see langword="null"/> properties keep their values.</param>
    /// <returns>The settings before and after the change.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="change"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">A setting is invalid; the message names each invalid setting, and nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down; nothing changes.</exception>
    public BoundedExecutorReconfiguration Reconfigure(BoundedExecutorSettingsChange change)
    {
        ArgumentNullException.ThrowIfNull(change);
        var errors = change.GetValidationErrors(MaxWorkerCount);
        if (errors.Count > 0)
        {
            throw new ArgumentException($"Invalid settings change for executor '{Name}': {string.Join(" ", errors.Values)}", nameof(change));
        }

        BoundedExecutorSettings previous, current;
        var wakeWorkers = false;
        lock (LifecycleLock)
        {
            ThrowIfShutdownUnsynchronized();
            previous = SettingsUnsynchronized();
            if (change.QueueCapacity is { } capacity)
            {
                _queueCapacity = capacity;
            }

            if (change.RejectionPolicy is { } policy)
            {
                _policy = policy;
            }

            if (change.WaitTimeout is { } timeout)
            {
                Volatile.Write(ref _waitTimeoutTicks, timeout.Ticks);
            }

            if (change.SlowItemThreshold is { } slow)
            {
                Volatile.Write(ref _slowItemThresholdTicks, slow.Ticks);
            }

            if (change.QueueWaitThreshold is { } queueWait)
            {
                Volatile.Write(ref _queueWaitThresholdTicks, queueWait.Ticks);
            }

            if (change.WorkerCount is { } workers)
            {
                wakeWorkers = ResizeUnsynchronized(workers);
            }

            current = SettingsUnsynchronized();
        }

        if (wakeWorkers)
        {
            _idle.WakeAll();
        }

        if (current.SlowItemThreshold != previous.SlowItemThreshold)
        {
            _watchdogSignal.Set();
        }

        if (current.QueueCapacity > previous.QueueCapacity)
        {
            // The new room goes to the producers already waiting for it, oldest first.
            AdmitWaiters();
        }

        return new BoundedExecutorReconfiguration(previous, current);
    }

    private BoundedExecutorSettings SettingsUnsynchronized() => new()
    {
        WorkerCount = _targetWorkers,
        QueueCapacity = _queueCapacity,
        RejectionPolicy = _policy,
        WaitTimeout = WaitTimeout,
        SlowItemThreshold = SlowItemThreshold,
        QueueWaitThreshold = QueueWaitThreshold,
    };

    private QueuedItem NewItem(object callback, object? state, Action<object, object?> invoker) =>
        new(callback, state, invoker, _flowExecutionContext ? ExecutionContext.Capture() : null, _itemClock.Now(), PreciseStamp());

    /// <summary>A high-resolution timestamp for the wait-duration histogram, taken only while someone listens to it.</summary>
    private long PreciseStamp() => _instruments.WaitDurationEnabled ? System.Diagnostics.Stopwatch.GetTimestamp() : 0;

    private void InvokeOnRejected(in QueuedItem item, RejectionReason reason)
    {
        InvokeGuarded(_onRejected, new WorkItemRejectedArguments(Name, item.ToWorkItem(), reason));
    }

    private void InvokeOnError(in QueuedItem item, Exception exception)
    {
        InvokeGuarded(_onError, new WorkItemFailedArguments(Name, item.ToWorkItem(), exception));
    }

    /// <summary>
    /// Starts the activity that traces one item's run, in the item's own execution context, so that the activity
    /// current at submission is its parent. Returns <see langword="null"/> when nobody listens. A listener that throws
    /// is counted as a callback failure and never decides the item's fate.
    /// </summary>
    internal Activity? StartRunActivity()
    {
        if (!BoundedWorkDiagnostics.ActivitySource.HasListeners())
        {
            return null;
        }

        try
        {
            var activity = BoundedWorkDiagnostics.ActivitySource.StartActivity(BoundedWorkDiagnostics.RunActivityName, ActivityKind.Internal);
            activity?.SetTag(BoundedWorkDiagnostics.ExecutorTag, Name);
            return activity;
        }
        catch (Exception)
        {
            CountCallbackFailure();
            return null;
        }
    }

    /// <summary>Marks a run's activity as failed; a listener that throws is counted, not propagated.</summary>
    internal void MarkRunActivityFailed(Activity? activity, Exception exception)
    {
        if (activity is null)
        {
            return;
        }

        try
        {
            activity.SetStatus(ActivityStatusCode.Error, exception.Message);
        }
        catch (Exception)
        {
            CountCallbackFailure();
        }
    }

    /// <summary>Stops a run's activity; a listener that throws is counted, not propagated.</summary>
    internal void StopRunActivity(Activity? activity)
    {
        if (activity is null)
        {
            return;
        }

        try
        {
            activity.Dispose();
        }
        catch (Exception)
        {
            CountCallbackFailure();
        }
    }

    private void CountCallbackFailure() => Interlocked.Increment(ref _callbackFailures);

    /// <summary>Calls a user callback, if there is one; one that throws is counted and never propagated.</summary>
    private void InvokeGuarded<TArguments>(Action<TArguments>? callback, TArguments arguments)
    {
        if (callback is null)
        {
            return;
        }

        try
        {
            callback(arguments);
        }
        catch (Exception)
        {
            CountCallbackFailure();
        }
    }

    /// <summary>
    /// Counts and reports a blocking wait for this executor if the current thread is a ThreadPool thread. Call it
    /// just before blocking, on the thread that blocks.
    /// </summary>
    internal void NoteBlockingWait(BlockingWaitKind kind)
    {
        if (!Thread.CurrentThread.IsThreadPoolThread)
        {
            return;
        }

        var total = Interlocked.Increment(ref _threadPoolBlockingWaits);
        InvokeGuarded(_onThreadPoolBlockingWait, new ThreadPoolBlockingWaitArguments(Name, kind, total));
    }
}
