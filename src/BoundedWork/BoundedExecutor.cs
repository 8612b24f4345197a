using System.Runtime.CompilerServices;
using BoundedWork.Internal;
using BoundedWork.Internal.Adaptive;

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
/// Nothing is dropped silently: every item ends in exactly one outcome, counted in <see cref="GetStatistics"/> (see
/// <see cref="BoundedExecutorStatistics"/>). Items that do not run are reported to their caller (an exception, a
/// <see langword="false"/> return or a faulted task), to <see cref="BoundedExecutorOptions.OnRejected"/>, or returned
/// by <see cref="ShutdownAsync(CancellationToken)"/>.
/// </para>
/// </remarks>
public sealed class BoundedExecutor : IAsyncDisposable, IDisposable, IWorkSource, IProducerHost, IAdaptiveHost
{
    // The life of an item.
    //
    // Submit (Submitter). A submit method captures the delegate, its state and (unless FlowExecutionContext is off)
    // the caller's ExecutionContext in a QueuedItem, a struct: nothing is allocated for a fire-and-forget item. It
    // takes a ticket from the queue (TicketQueue) against the capacity in force, writes the item into the ticket's
    // slot, and wakes a parked worker unless one is spinning and will find the item (WorkerPool). When the queue is
    // full, the rejection policy decides: Abort rejects the item, Discard drops it, DiscardOldest evicts the oldest
    // queued item and takes its place, CallerRuns runs it on the submitting thread (ItemRunner), and Wait hands it to
    // the waiting producers (WaitingProducers), which admit it, oldest first, as soon as a slot frees. After shutdown
    // every item is rejected.
    //
    // Run (TryRunOne below, on a worker of the WorkerPool). The worker claims the oldest ticket, publishes what it runs
    // for the watchdog and the statistics (Worker.BeginRun), admits the oldest waiting producer into the slot it
    // freed, wakes the next worker if more is queued, and runs the item in the item's own ExecutionContext
    // (ItemRunner); then it restores its clean room and claims the next one. With nothing to claim it spins briefly,
    // then parks until a submitter wakes it. A resize starts threads at once, or retires workers between items.
    //
    // Outcome. Every item ends in exactly one outcome, counted once, by the one party that decides it: OutcomeCounters
    // says who counts what, and how a statistics snapshot stays consistent while items move. Whoever is told about it
    // (callbacks, listeners) is called through ExecutorCallbacks: nothing outside the item decides its fate.
    //
    // Shutdown. Admission stops (TicketQueue.Freeze), waiting producers are rejected, and the workers drain the queue
    // and exit. At a deadline, kept by the watchdog thread (Watchdog), the items still queued are claimed in one step
    // and handed back (AbandonQueuedItems). Running items are never interrupted. Alarms for slow and long-waiting
    // items come from the watchdog too.
    //
    // Pause (PauseSwitch). While an operator's pause is in force, workers claim nothing: the queue keeps accepting up to
    // its capacity (then the rejection policy applies as usual) and running items finish. A shutdown overrides the
    // pause (the drain runs, and at the deadline the rest is handed back, as without a pause); the watchdog ends a
    // pause that has an end.
    //
    // Locks: the pool's lifecycle lock (worker list and counts; the settings change under it as well, so a resize and
    // a reconfiguration are one step), the waiting producers' list lock, the watchdog's lock over shutdown callers,
    // the idle stack's lock and each worker's parker. None is held while user code runs, and none is taken on the
    // path of an item that finds room while a worker spins.
    private readonly TicketQueue _queue;
    private readonly WorkerPool _pool;
    private readonly WaitingProducers _producers;
    private readonly OutcomeCounters _outcomes;
    private readonly ItemRunner _runner;
    private readonly Submitter _submitter;
    private readonly ExecutorCallbacks _callbacks;
    private readonly ExecutorInstruments _instruments;
    private readonly Watchdog _watchdog;
    private readonly PermitGate _permits;
    private readonly AdaptiveDriver _adaptive;
    private readonly TenantBook _tenants;
    private readonly PauseSwitch _pause = new();
    private readonly TaskCompletionSource _completion = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TimeProvider _timeProvider;
    private readonly ItemClock _itemClock;
    private readonly TimeSpan _disposeTimeout;
    private volatile BoundedExecutorSettings _settings;

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
            throw new ArgumentException($"Invalid BoundedExecutorOptions for executor '{options.Name}': {string.Join(" ", errors.Values)}", nameof(options));
        }

        Name = options.Name;
        MaxWorkerCount = options.MaxWorkerCount;
        _settings = options.ToSettings();
        _timeProvider = options.TimeProvider;
        _itemClock = new ItemClock(options.TimeProvider);
        _disposeTimeout = options.DisposeTimeout;
        _queue = new TicketQueue(options.QueueCapacity);
        _instruments = new ExecutorInstruments(this, options.MeterFactory);
        _callbacks = new ExecutorCallbacks(options, _instruments);
        _outcomes = new OutcomeCounters(Name, _callbacks);
        _permits = new PermitGate(_timeProvider, () => _watchdog!.Signal()) { WaitEnded = _instruments.RecordPermitWait };
        _permits.Apply(_settings);
        _runner = new ItemRunner(_callbacks, _instruments, _outcomes) { Permits = _permits, CallerMayWaitForPermit = () => !_queue.IsAbandoned && !_completion.Task.IsCompleted };
        _producers = new WaitingProducers(_queue, this);
        _pool = new WorkerPool(Name, MaxWorkerCount, this, this);
        _tenants = new TenantBook(_itemClock, _settings.FairShare);
        _submitter = new Submitter(this, _queue, _pool, _producers, _outcomes, _runner, _instruments, _timeProvider, _itemClock, options.FlowExecutionContext, _tenants);
        _adaptive = new AdaptiveDriver(this, _callbacks, options.AdaptiveParameters, _timeProvider);
        _watchdog = new Watchdog(this, _pool, _producers, _callbacks, _timeProvider, _itemClock, _completion.Task);
        _ = _completion.Task.ContinueWith(static (_, instruments) => ((ExecutorInstruments)instruments!).Dispose(), _instruments, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);

        lock (_pool.SyncObj)
        {
            _pool.ResizeUnsynchronized(options.WorkerCount);
        }

        _watchdog.Start(Name);

        // Last: a listener already subscribed to the meter may observe these at once, from any thread.
        _instruments.PublishObservables(this);
    }

    /// <summary>Gets the executor's name.</summary>
    public string Name { get; }

    /// <summary>Gets the hard maximum worker count that <see cref="Resize(int)"/> accepts.</summary>
    public int MaxWorkerCount { get; }

    /// <summary>Gets the queue capacity.</summary>
    public int QueueCapacity => _settings.QueueCapacity;

    /// <summary>Gets the policy applied when the queue is full.</summary>
    public RejectionPolicy RejectionPolicy => _settings.RejectionPolicy;

    /// <summary>Gets how long the Wait policy waits for room.</summary>
    public TimeSpan WaitTimeout => _settings.WaitTimeout;

    /// <summary>Gets how long an item may run before it is reported as slow.</summary>
    public TimeSpan SlowItemThreshold => _settings.SlowItemThreshold;

    /// <summary>Gets how long an item may wait in the queue before it is reported.</summary>
    public TimeSpan QueueWaitThreshold => _settings.QueueWaitThreshold;

    /// <summary>Gets the settings that can change at runtime, as one consistent value.</summary>
    public BoundedExecutorSettings Settings => _settings;

    /// <summary>Gets a value indicating whether shutdown has begun; no new item is accepted after it.</summary>
    public bool IsShutdown => _queue.IsShutdown;

    /// <summary>Gets the number of items waiting in the queue now.</summary>
    public int QueueLength => _queue.Count;

    /// <summary>
    /// Gets a value indicating whether the current thread is one of this executor's worker threads.
    /// </summary>
    public bool IsWorkerThread => _pool.IsWorkerThread;

    /// <summary>
    /// Gets a task that completes when the executor has shut down and every worker thread has exited.
    /// </summary>
    public Task Completion => _completion.Task;

    /// <summary>Gets the number of parked (or parking) workers; for tests.</summary>
    internal int IdleWorkerCount => _pool.IdleCount;

    /// <summary>Gets how many times the watchdog has looked at deadlines and workers; for tests that must know it looked.</summary>
    internal long WatchdogPasses => _watchdog.Passes;

    /// <summary>Gets the rate limit's gate, for the watchdog (which replenishes it) and tests.</summary>
    internal PermitGate Permits => _permits;
    /// <summary>Gets the adaptive mode's driver, which the watchdog ticks.</summary>
    internal AdaptiveDriver Adaptive => _adaptive;

    /// <summary>
    /// Queues a fire-and-forget item if there is room now. Never blocks and never runs the item on the caller.
    /// </summary>
    /// <param name="action">The work to run on a worker thread.</param>
    /// <returns><see langword="true"/> if queued; <see langword="false"/> if the queue is full or the executor is shut down (the item is counted as rejected and reported to <see cref="BoundedExecutorOptions.OnRejected"/>).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    public bool TryExecute(Action action)
    {
        ArgumentNullException.ThrowIfNull(action);
        return _submitter.TryExecute(_submitter.NewItem(action, null, QueuedItem.InvokeAction));
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
        return _submitter.TryExecute(_submitter.NewItem(action, state, StateInvoker<TState>.Instance));
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
        _submitter.Execute(_submitter.NewItem(action, null, QueuedItem.InvokeAction), cancellationToken);
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
        _submitter.Execute(_submitter.NewItem(action, state, StateInvoker<TState>.Instance), cancellationToken);
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
        return _submitter.ExecuteAsync(_submitter.NewItem(action, null, QueuedItem.InvokeAction), cancellationToken);
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
        return _submitter.ExecuteAsync(_submitter.NewItem(action, state, StateInvoker<TState>.Instance), cancellationToken);
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
        return _submitter.Run<object?>(action, describedBy: null, cancellationToken);
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
        return _submitter.Run<TResult>(function, describedBy: null, cancellationToken);
    }

    /// <summary>
    /// Gets this executor as seen by one tenant: items submitted through it take their turn by the tenant's weight and
    /// count against its bounds (<see cref="BoundedExecutorSettings.FairShare"/>), so one tenant's flood never starves
    /// the others: <c>executor.ForTenant(merchantId).TryExecute(() =&gt; Notify(callback))</c>.
    /// </summary>
    /// <param name="tenant">The tenant (the fairness key): 1 to <see cref="FairShareSettings.MaxTenantLength"/> characters, no control characters; compared ordinally.</param>
    /// <returns>A small value that submits for the tenant.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="tenant"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="tenant"/> is empty, too long or holds a control character.</exception>
    public TenantExecutor ForTenant(string tenant)
    {
        FairShareSettings.ThrowIfInvalidTenant(tenant, nameof(tenant));
        return new TenantExecutor(this, tenant);
    }

    /// <summary>
    /// Gets the tenants' shares, busiest first (most queued and running, then most items seen): each tenant with items
    /// queued or running now, and each with its own series (<see cref="FairShareSettings.TenantSeriesLimit"/>); the
    /// others are counted together as <see cref="TenantStatistics.OtherTenants"/>. Empty while fair share was never on.
    /// </summary>
    /// <param name="top">The most tenants to return.</param>
    /// <returns>A snapshot, taken under the fair-share lock.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="top"/> is below 1.</exception>
    public IReadOnlyList<TenantStatistics> GetTenantStatistics(int top = 10)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(top, 1);
        return _tenants.Read(top);
    }

    internal bool TryExecuteForTenant(string tenant, object action, object? state, Action<object, object?> invoker) =>
        _submitter.TryExecute(tenant, _submitter.NewItem(action, state, invoker));

    internal void ExecuteForTenant(string tenant, object action, object? state, Action<object, object?> invoker, CancellationToken cancellationToken) =>
        _submitter.Execute(tenant, _submitter.NewItem(action, state, invoker), cancellationToken);

    internal ValueTask ExecuteForTenantAsync(string tenant, object action, object? state, Action<object, object?> invoker, CancellationToken cancellationToken) =>
        _submitter.ExecuteAsync(tenant, _submitter.NewItem(action, state, invoker), cancellationToken);

    internal Task<TResult> RunForTenant<TResult>(string tenant, Delegate work, CancellationToken cancellationToken) =>
        _submitter.Run<TResult>(tenant, work, cancellationToken);

    /// <summary>Gets the fair-share book; for tests.</summary>
    internal TenantBook Tenants => _tenants;

    /// <summary>
    /// Puts new runtime settings in force in one validated, atomic step: either all of them, or (when any is invalid)
    /// none. Change what you need with <c>with</c>: <c>executor.Reconfigure(executor.Settings with { WorkerCount = 16 })</c>.
    /// Items already queued stay queued; lowering the queue capacity evicts nothing, and raising it lets waiting
    /// producers in at once; a smaller worker count retires workers between items.
    /// </summary>
    /// <param name="settings">The settings to put in force.</param>
    /// <returns>The settings before and after the change.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="settings"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">A setting is invalid; the message names each invalid setting, and nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down; nothing changes.</exception>
    /// <remarks>
    /// The settings replace all of the current ones. When something else may change other settings at the same time
    /// (an admin endpoint, a configuration reload), use <see cref="Reconfigure(Func{BoundedExecutorSettings, BoundedExecutorSettings})"/>,
    /// which never undoes their change.
    /// </remarks>
    public BoundedExecutorReconfiguration Reconfigure(BoundedExecutorSettings settings)
    {
        ArgumentNullException.ThrowIfNull(settings);
        ThrowIfInvalid(settings, nameof(settings));
        BoundedExecutorSettings previous;
        bool wakeWorkers;
        lock (_pool.SyncObj)
        {
            ThrowIfShutdownUnsynchronized();
            previous = _settings;
            wakeWorkers = ApplyUnsynchronized(settings);
        }

        AfterChange(previous, settings, wakeWorkers);
        return new BoundedExecutorReconfiguration(previous, settings);
    }

    /// <summary>
    /// Changes runtime settings as one atomic read-modify-write: <paramref name="change"/> gets the settings in force and
    /// returns the new ones (<c>executor.Reconfigure(s =&gt; s with { QueueCapacity = 2000 })</c>). If another change
    /// lands meanwhile, <paramref name="change"/> is called again with the settings it left, so concurrent changes to
    /// different settings never undo each other. Validated and applied as
    /// <see cref="Reconfigure(BoundedExecutorSettings)"/> is.
    /// </summary>
    /// <param name="change">Returns the new settings from the current ones. It may be called more than once, so it should have no side effects.</param>
    /// <returns>The settings before and after the change.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="change"/> is <see langword="null"/>, or returned <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">A setting is invalid; the message names each invalid setting, and nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down; nothing changes.</exception>
    public BoundedExecutorReconfiguration Reconfigure(Func<BoundedExecutorSettings, BoundedExecutorSettings> change)
    {
        ArgumentNullException.ThrowIfNull(change);
        while (true)
        {
            var previous = _settings;
            var settings = change(previous) ?? throw new ArgumentNullException(nameof(change), "The change returned no settings.");
            ThrowIfInvalid(settings, nameof(change));
            bool wakeWorkers;
            lock (_pool.SyncObj)
            {
                ThrowIfShutdownUnsynchronized();
                if (!ReferenceEquals(_settings, previous))
                {
                    continue; // changed meanwhile: compute the change again from what is in force now
                }

                wakeWorkers = ApplyUnsynchronized(settings);
            }

            AfterChange(previous, settings, wakeWorkers);
            return new BoundedExecutorReconfiguration(previous, settings);
        }
    }

    /// <summary>
    /// Changes the number of worker threads while items keep flowing and, while the adaptive mode is on, pins it. Kept
    /// for compatibility: say what you mean with <see cref="PinWorkerCount(int)"/> (a pin) or
    /// <see cref="Reconfigure(Func{BoundedExecutorSettings, BoundedExecutorSettings})"/> with a new
    /// <see cref="BoundedExecutorSettings.WorkerCount"/> (a plain change, which the adaptive mode may change again).
    /// </summary>
    /// <param name="workerCount">The new worker count, between 1 and <see cref="MaxWorkerCount"/>.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="workerCount"/> is below 1 or above <see cref="MaxWorkerCount"/>; nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down.</exception>
    /// <remarks>
    /// While <see cref="BoundedExecutorSettings.AdaptiveMode"/> is not Off, this is <see cref="PinWorkerCount(int)"/>:
    /// the count is pinned until <see cref="UnpinWorkerCount"/>. While it is Off, it is a plain change. Growing starts
    /// threads at once; shrinking retires workers only between items, never interrupting a running one.
    /// </remarks>
    public void Resize(int workerCount) => Resize(workerCount, Timeout.InfiniteTimeSpan);

    /// <summary>
    /// Changes the number of worker threads as <see cref="Resize(int)"/> does and, while
    /// <see cref="BoundedExecutorSettings.AdaptiveMode"/> is not Off, pins it for <paramref name="pinFor"/> as
    /// <see cref="PinWorkerCount(int, TimeSpan)"/> does. Kept for compatibility: prefer
    /// <see cref="PinWorkerCount(int, TimeSpan)"/>.
    /// </summary>
    /// <param name="workerCount">The new worker count, between 1 and <see cref="MaxWorkerCount"/>.</param>
    /// <param name="pinFor">How long the pin lasts: positive, or <see cref="Timeout.InfiniteTimeSpan"/> until unpinned.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="workerCount"/> is below 1 or above <see cref="MaxWorkerCount"/>, or <paramref name="pinFor"/> is neither positive nor infinite; nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down.</exception>
    public void Resize(int workerCount, TimeSpan pinFor)
    {
        ThrowIfInvalidPin(workerCount, pinFor, nameof(pinFor));
        SetWorkerCount(workerCount, pin: _settings.AdaptiveMode != AdaptiveMode.Off, pinFor);
    }

    /// <summary>
    /// Pins the worker count: sets it to <paramref name="workerCount"/> and holds it there until
    /// <see cref="UnpinWorkerCount"/>. The adaptive mode (On or Advisory, now or once turned on) then proposes nothing
    /// else, and a durable queue's cluster node keeps this count instead of the fleet-wide one.
    /// </summary>
    /// <param name="workerCount">The count to hold, between 1 and <see cref="MaxWorkerCount"/> (kept within the adaptive bounds while the mode is on).</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="workerCount"/> is below 1 or above <see cref="MaxWorkerCount"/>; nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down.</exception>
    /// <remarks>
    /// A pin survives <see cref="Reconfigure(Func{BoundedExecutorSettings, BoundedExecutorSettings})"/>: a
    /// reconfiguration that changes the count changes it now, and the adaptive mode's next decision brings it back to
    /// the pinned count. Pinning again replaces the pin. The decision log records the pin
    /// (<see cref="GetWorkerCountDecisions"/>, rule <c>Pinned</c>) and its end (<c>Unpinned</c>).
    /// </remarks>
    public void PinWorkerCount(int workerCount) => PinWorkerCount(workerCount, Timeout.InfiniteTimeSpan);

    /// <summary>
    /// Pins the worker count as <see cref="PinWorkerCount(int)"/> does, for <paramref name="duration"/>: when it runs
    /// out, the adaptive mode resumes from the count in force.
    /// </summary>
    /// <param name="workerCount">The count to hold, between 1 and <see cref="MaxWorkerCount"/>.</param>
    /// <param name="duration">How long the pin lasts: positive, or <see cref="Timeout.InfiniteTimeSpan"/> until unpinned.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="workerCount"/> is below 1 or above <see cref="MaxWorkerCount"/>, or <paramref name="duration"/> is neither positive nor infinite; nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down.</exception>
    public void PinWorkerCount(int workerCount, TimeSpan duration)
    {
        ThrowIfInvalidPin(workerCount, duration, nameof(duration));
        SetWorkerCount(workerCount, pin: true, duration);
    }

    /// <summary>
    /// Ends an operator's pin (<see cref="PinWorkerCount(int)"/>): the adaptive mode resumes from the count in force,
    /// and its next decision logs <c>Unpinned</c>. Does nothing when the count is not pinned.
    /// </summary>
    public void UnpinWorkerCount() => _adaptive.Unpin();

    /// <summary>
    /// Gets a value indicating whether the worker count is pinned now (<see cref="PinWorkerCount(int)"/>): not yet
    /// unpinned, and the pin's time, if it has one, not run out. A cheap read; the statistics snapshot reports the same
    /// with when the pin ends (<see cref="BoundedExecutorStatistics.WorkerCountPinnedUntil"/>).
    /// </summary>
    public bool IsWorkerCountPinned => _adaptive.TryGetPin(out _, out _);

    /// <summary>
    /// Gets the adaptive mode's decision log, oldest first: every change it made (or, in advisory mode, would have
    /// made), every operator's pin and every end of a pin, with the signals each was made on. It keeps the last 64.
    /// </summary>
    /// <returns>A copy of the log.</returns>
    public IReadOnlyList<WorkerCountDecision> GetWorkerCountDecisions() => _adaptive.GetDecisions();

    /// <summary>The longest pause <see cref="Pause(string, TimeSpan)"/> accepts with an end: 30 days.</summary>
    public static readonly TimeSpan MaxPauseDuration = TimeSpan.FromDays(30);

    /// <summary>The longest reason <see cref="Pause(string, TimeSpan)"/> accepts: 200 characters.</summary>
    public const int MaxPauseReasonLength = 200;

    /// <summary>
    /// Gets a value indicating whether the executor is paused now: its workers start no new item. Always
    /// <see langword="false"/> once shutdown has begun (a shutdown drains a paused executor as any other).
    /// </summary>
    public bool IsPaused => _pause.IsPaused && !_queue.IsShutdown;

    /// <summary>
    /// Pauses the executor until <see cref="Resume"/>: its workers start no new item; running items finish; the queue
    /// keeps accepting items up to its capacity, and then the rejection policy applies as usual.
    /// </summary>
    /// <param name="reason">Why, for the statistics, the health check and the logs: 1 to <see cref="MaxPauseReasonLength"/> characters, no control characters.</param>
    /// <exception cref="ArgumentException"><paramref name="reason"/> is empty, too long or holds a control character; nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down.</exception>
    /// <remarks>
    /// Pausing again replaces the pause (its reason and its end). A worker that was taking an item at the very instant
    /// of the pause may still start that one item. A shutdown while paused ends the pause: the drain runs the queued
    /// items, and at the shutdown's deadline the ones still queued are handed back, as without a pause.
    /// </remarks>
    public void Pause(string reason) => Pause(reason, Timeout.InfiniteTimeSpan);

    /// <summary>
    /// Pauses the executor as <see cref="Pause(string)"/> does, for <paramref name="duration"/>: then it resumes by
    /// itself. The executor's watchdog thread ends the pause on the executor's <see cref="TimeProvider"/>, so it resumes
    /// on time while the ThreadPool is starved.
    /// </summary>
    /// <param name="reason">Why: 1 to <see cref="MaxPauseReasonLength"/> characters, no control characters.</param>
    /// <param name="duration">How long: positive and at most <see cref="MaxPauseDuration"/>, or <see cref="Timeout.InfiniteTimeSpan"/> until resumed.</param>
    /// <exception cref="ArgumentNullException"><paramref name="reason"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="reason"/> is empty, too long or holds a control character; nothing changes.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="duration"/> is neither positive (up to <see cref="MaxPauseDuration"/>) nor infinite; nothing changes.</exception>
    /// <exception cref="InvalidOperationException">The executor is shut down.</exception>
    public void Pause(string reason, TimeSpan duration)
    {
        ArgumentNullException.ThrowIfNull(reason);
        if (GetPauseReasonError(reason) is { } error)
        {
            throw new ArgumentException(error, nameof(reason));
        }

        if (duration != Timeout.InfiniteTimeSpan && (duration <= TimeSpan.Zero || duration > MaxPauseDuration))
        {
            throw new ArgumentOutOfRangeException(nameof(duration), duration, $"A pause's duration must be positive and at most {MaxPauseDuration.TotalDays} days, or Timeout.InfiniteTimeSpan (until resumed).");
        }

        if (IsShutdown)
        {
            throw new InvalidOperationException($"Executor '{Name}' is shut down and can no longer be paused.");
        }

        var now = _timeProvider.GetUtcNow();
        _pause.Set(new PauseRecord(reason, now, duration == Timeout.InfiniteTimeSpan ? null : now + duration));
        _watchdog.Signal();

        // A worker waiting for a rate-limit permit gives up the wait, and parks, instead of starting an item.
        _permits.WakeWaiters();
    }

    /// <summary>Ends a pause: the workers start queued items again at once. Does nothing when the executor is not paused.</summary>
    /// <returns><see langword="true"/> if a pause was ended; otherwise <see langword="false"/>.</returns>
    public bool Resume()
    {
        if (_pause.Clear() is null || IsShutdown)
        {
            return false; // not paused, or shut down (which had ended the pause)
        }

        AfterResume();
        return true;
    }

    /// <summary>Returns why <paramref name="reason"/> is not a valid pause reason, or <see langword="null"/> when it is.</summary>
    /// <param name="reason">The reason to check.</param>
    /// <returns>The message, naming the reason, or <see langword="null"/>.</returns>
    public static string? GetPauseReasonError(string? reason)
    {
        if (string.IsNullOrWhiteSpace(reason))
        {
            return "A pause's reason must not be empty.";
        }

        if (reason.Length > MaxPauseReasonLength)
        {
            return $"A pause's reason must be at most {MaxPauseReasonLength} characters.";
        }

        return reason.Any(char.IsControl) ? "A pause's reason must not contain control characters (such as CR or LF)." : null;
    }

    /// <summary>On the watchdog thread: ends the pause if its end has come.</summary>
    internal void ResumeIfPauseEnded()
    {
        if (_pause.Current?.Until is not null && _pause.ClearIfEnded(_timeProvider.GetUtcNow()) is not null)
        {
            AfterResume();
        }
    }

    /// <summary>Gets when the pause in force ends, or <see langword="null"/> when none does; for the watchdog.</summary>
    internal DateTimeOffset? PauseEnds => _pause.Current?.Until;

    /// <summary>After a pause ends (an interlocked step): every parked worker wakes and re-checks the queue.</summary>
    private void AfterResume()
    {
        _pool.WakeAll();
        _producers.AdmitWaiting();
    }

    /// <summary>
    /// Stops accepting items at once, lets the workers drain the queue, and completes when every worker has exited.
    /// </summary>
    /// <param name="cancellationToken">
    /// The deadline. When it is cancelled before the drain ends, the workers stop taking items (running items are
    /// never interrupted) and every item still queued is handed back in <see cref="ShutdownResult.AbandonedItems"/>;
    /// awaited items' tasks are cancelled. The deadline takes effect on the thread that cancels the token; a token
    /// cancelled by a timer needs a ThreadPool thread for that, so under ThreadPool starvation prefer
    /// <see cref="ShutdownAsync(TimeSpan)"/>, whose deadline a dedicated thread enforces.
    /// </param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    public async Task<ShutdownResult> ShutdownAsync(CancellationToken cancellationToken = default)
    {
        BeginShutdown();
        if (IsWorkerThread)
        {
            return new ShutdownResult([], workersExited: false);
        }

        if (!_completion.Task.IsCompleted)
        {
            try
            {
                await _completion.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                var abandoned = AbandonQueuedItems();
                return new ShutdownResult(abandoned, _completion.Task.IsCompleted);
            }
        }

        return new ShutdownResult([], workersExited: true);
    }

    /// <summary>
    /// Shuts down as <see cref="ShutdownAsync(CancellationToken)"/> does, with a deadline <paramref name="timeout"/>
    /// from now. The executor's own watchdog thread enforces the deadline, so it holds even while the ThreadPool is
    /// starved: at the deadline no further item starts and the queued ones are handed back (only the caller's
    /// continuation after that needs a pool thread). Called from one of this executor's own workers, it begins the
    /// shutdown and returns at once (that worker cannot exit while it waits), with
    /// <see cref="ShutdownResult.WorkersExited"/> <see langword="false"/>.
    /// </summary>
    /// <param name="timeout">How long the drain may take; <see cref="Timeout.InfiniteTimeSpan"/> for no deadline.</param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="timeout"/> is negative (other than infinite).</exception>
    public Task<ShutdownResult> ShutdownAsync(TimeSpan timeout)
    {
        ValidateShutdownTimeout(timeout);
        return ShutdownCore(timeout);
    }

    /// <summary>
    /// Shuts down as <see cref="ShutdownAsync(TimeSpan)"/> does and blocks the calling thread until the drain ends or
    /// the deadline passes. It needs no ThreadPool thread at all. Called from one of this executor's own workers, it
    /// begins the shutdown and returns at once instead of deadlocking.
    /// </summary>
    /// <param name="timeout">How long the drain may take; <see cref="Timeout.InfiniteTimeSpan"/> for no deadline.</param>
    /// <returns>The items that never ran, if any, and whether all workers exited.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="timeout"/> is negative (other than infinite).</exception>
    public ShutdownResult Shutdown(TimeSpan timeout)
    {
        ValidateShutdownTimeout(timeout);

        // Waiting on the task blocks on a kernel event that the completing thread sets directly.
        return ShutdownCore(timeout).GetAwaiter().GetResult();
    }

    /// <summary>
    /// Shuts down and waits for the drain, blocking, for at most <see cref="BoundedExecutorOptions.DisposeTimeout"/>.
    /// Items still queued then are counted as abandoned and reported to <see cref="BoundedExecutorOptions.OnRejected"/>
    /// with <see cref="RejectionReason.Abandoned"/>. Running items are never interrupted. Returns at once if a shutdown
    /// deadline has already passed, or when called from one of this executor's own workers.
    /// </summary>
    public void Dispose()
    {
        if (_queue.IsAbandoned)
        {
            return;
        }

        ReportAbandonedOnDispose(Shutdown(_disposeTimeout));
    }

    /// <summary>
    /// Shuts down and waits for the drain for at most <see cref="BoundedExecutorOptions.DisposeTimeout"/>, as
    /// <see cref="Dispose"/> does, without blocking the caller. If a shutdown deadline has already passed
    /// (<see cref="ShutdownAsync(CancellationToken)"/> abandoned the queue), it returns at once instead of waiting
    /// again for items that are still running; <see cref="Completion"/> tells when they end.
    /// </summary>
    /// <returns>A task that completes when the executor is disposed.</returns>
    public async ValueTask DisposeAsync()
    {
        if (_queue.IsAbandoned)
        {
            return;
        }

        ReportAbandonedOnDispose(await ShutdownCore(_disposeTimeout).ConfigureAwait(false));
    }

    /// <summary>
    /// Takes one consistent snapshot of the executor's state and counters: every item submitted so far is in exactly
    /// one of queued, starting, running or an outcome, so <see cref="BoundedExecutorStatistics.Submitted"/> always
    /// equals their sum; and the running items are exactly those of the busy workers and of submitting threads.
    /// </summary>
    /// <returns>The snapshot.</returns>
    public BoundedExecutorStatistics GetStatistics()
    {
        var settings = _settings;
        var now = _itemClock.Now();
        var s = _outcomes.Read(_queue, _pool, now, settings.SlowItemThreshold, _itemClock);
        var oldestAge = s.Queued != 0 && _queue.TryReadOldestStamp(s.Claims, out var oldestEnqueued)
            ? _itemClock.Elapsed(oldestEnqueued, now)
            : TimeSpan.Zero;
        var pause = _queue.IsShutdown ? null : _pause.Current;

        return new BoundedExecutorStatistics
        {
            Name = Name,
            TargetWorkerCount = s.Workers.Target,
            LiveWorkerCount = s.Workers.Live,
            BusyWorkerCount = s.Workers.Busy,
            PeakWorkerCount = s.Workers.Peak,
            MaxWorkerCount = MaxWorkerCount,
            QueueLength = s.Queued,
            QueueCapacity = settings.QueueCapacity,
            OldestQueuedItemAge = oldestAge < TimeSpan.Zero ? TimeSpan.Zero : oldestAge,
            RejectionPolicy = settings.RejectionPolicy,
            WaitTimeout = settings.WaitTimeout,
            WaitingProducers = _producers.Count,
            Submitted = s.Submitted,
            Starting = s.Starting,
            Running = s.Running,
            RunningOnCallers = s.RunningOnCallers,
            Completed = s.Completed,
            Failed = s.Failed,
            Cancelled = s.Cancelled,
            Rejected = s.Rejected,
            Discarded = s.Discarded,
            Abandoned = s.Abandoned,
            CallerRuns = s.CallerRuns,
            CallbackFailures = _callbacks.Failures,
            ThreadPoolBlockingWaits = _callbacks.ThreadPoolBlockingWaits,
            WorkersReplaced = _pool.WorkersReplaced,
            SlowWorkerCount = s.Workers.Slow,
            SlowItemsReported = _watchdog.SlowItemsReported,
            LongQueueWaitsReported = _watchdog.LongQueueWaitsReported,
            SlowItemThreshold = settings.SlowItemThreshold,
            QueueWaitThreshold = settings.QueueWaitThreshold,
            PermitsPerSecond = settings.PermitsPerSecond,
            PermitBurst = settings.PermitBurst,
            IsRateLimited = _permits.Limiter is not null,
            RateLimitWaitingWorkers = _permits.Waiting,
            PermitsAcquired = _permits.Acquired,
            PermitsRefused = _permits.Refusals,
            RateLimitWaitTime = _permits.WaitTime,
            IsShutdown = _queue.IsShutdown,
            AdaptiveMode = settings.AdaptiveMode,
            AdaptiveMinWorkerCount = settings.AdaptiveBounds(MaxWorkerCount).Min,
            AdaptiveMaxWorkerCount = settings.AdaptiveBounds(MaxWorkerCount).Max,
            IsWorkerCountPinned = _adaptive.TryGetPin(out _, out var pinnedUntil),
            WorkerCountPinnedUntil = pinnedUntil,
            WorkerCountDecisions = _adaptive.Decisions,
            RunTimeBaseline = _adaptive.Baseline,
            IsPaused = pause is not null,
            PauseReason = pause?.Reason,
            PausedSince = pause?.Since,
            PausedUntil = pause?.Until,
        };
    }

    /// <summary>Lists the items running on worker threads now, with how long each has been running.</summary>
    /// <returns>One entry per busy worker; empty when every worker is idle.</returns>
    public IReadOnlyList<RunningWorkItem> GetRunningItems()
    {
        var now = _itemClock.Now();
        var runs = new List<(Worker Worker, RunSnapshot Run)>();
        _pool.ReadRuns(runs);
        return [.. runs.Select(r => new RunningWorkItem
        {
            Item = r.Run.Item.ToWorkItem(),
            WorkerName = r.Worker.Name,
            Elapsed = _itemClock.Elapsed(r.Run.StartedTimestamp, now),
        })];
    }

    /// <summary>
    /// <see cref="RunAsync{TResult}(Func{TResult}, CancellationToken)"/> for the library's own adapters, whose
    /// <paramref name="function"/> wraps the caller's work: <paramref name="describedBy"/> (the caller's delegate, or a
    /// task) is what <see cref="WorkItem.Description"/> then names.
    /// </summary>
    internal Task<TResult> RunAsync<TResult>(Func<TResult> function, object describedBy, CancellationToken cancellationToken) =>
        _submitter.Run<TResult>(function, describedBy, cancellationToken);

    /// <summary>
    /// Queues an item if there is room now, for a channel writer's <c>TryWrite</c>. Unlike
    /// <see cref="TryExecute{TState}(Action{TState}, TState)"/>, an item that finds the queue full (or the executor shut
    /// down) is left with its producer: it was never submitted, so it is neither counted nor reported, and a producer
    /// that retries after <see cref="WaitForRoomAsync"/> is not counted as rejected once per attempt.
    /// </summary>
    internal bool TryQueue<TState>(Action<TState> action, TState state) =>
        _submitter.TryQueue(_submitter.NewItem(action, state, StateInvoker<TState>.Instance));

    /// <summary>
    /// Completes with <see langword="true"/> as soon as the queue has room (at once if it has), whatever the policy, or
    /// <see langword="false"/> once the executor is shut down. Takes no slot: another producer may fill it first, as with
    /// any channel writer. The worker that frees a slot completes the wait itself, so no ThreadPool thread is needed for
    /// the wake-up (only for the awaiting producer's continuation).
    /// </summary>
    internal ValueTask<bool> WaitForRoomAsync(CancellationToken cancellationToken) => _submitter.WaitForRoomAsync(cancellationToken);

    /// <summary>
    /// Counts and reports a blocking wait for this executor if the current thread is a ThreadPool thread. Call it
    /// just before blocking, on the thread that blocks.
    /// </summary>
    internal void NoteBlockingWait(BlockingWaitKind kind) => _callbacks.BlockingWait(kind);

    /// <summary>Stops the drain: claims every unclaimed item at once and hands them back, oldest first.</summary>
    internal List<WorkItem> AbandonQueuedItems()
    {
        var claimed = _queue.Abandon(out var firstTicket);
        _pool.WakeAll();
        _permits.WakeWaiters();
        _producers.RejectAll();
        var abandoned = new List<WorkItem>(claimed);
        for (var i = 0; i < claimed; i++)
        {
            var item = _queue.ReadClaimed(firstTicket + i);
            if (TenantEntry.IsPlaceholder(item, out _))
            {
                continue; // a tenant's slot: its item (whichever it is) is handed back with the lanes below
            }

            if (_outcomes.Abandoned(item))
            {
                abandoned.Add(item.ToWorkItem());
            }
        }

        // Every item still in a tenant's lane, deferred ones included (TenantBook, F1): a worker that claimed a slot
        // before the deadline and resolves it after finds nothing and counts nothing.
        foreach (var entry in _tenants.TakeAll())
        {
            if (_outcomes.Abandoned(entry.Item))
            {
                abandoned.Add(entry.Item.ToWorkItem());
            }
        }

        return abandoned;
    }

    /// <summary>
    /// Puts new settings in force under the lifecycle lock, the worker count included (the pool starts workers at once,
    /// or owes retirements); returns <see langword="true"/> if parked workers must be woken to retire.
    /// </summary>
    private bool ApplyUnsynchronized(BoundedExecutorSettings settings)
    {
        System.Diagnostics.Debug.Assert(Monitor.IsEntered(_pool.SyncObj));
        var wakeWorkers = _pool.ResizeUnsynchronized(settings.WorkerCount);

        // A limiter the executor built and no longer uses: disposing it completes nothing (workers never queue on it).
        _permits.Apply(settings)?.Dispose();
        _tenants.Apply(settings.FairShare);
        _settings = settings;
        return wakeWorkers;
    }

    /// <summary>After the lifecycle lock is released: wakes whoever a settings change concerns.</summary>
    private void AfterChange(BoundedExecutorSettings previous, BoundedExecutorSettings current, bool wakeWorkers)
    {
        if (wakeWorkers)
        {
            // Parked workers re-check and the surplus retires; the others park again.
            _pool.WakeAll();
        }

        if (wakeWorkers || current.PermitsPerSecond != previous.PermitsPerSecond || current.PermitBurst != previous.PermitBurst || current.RateLimiter != previous.RateLimiter)
        {
            // Workers waiting for a permit ask the new limiter, or retire.
            _permits.WakeWaiters();
        }

        if (current.SlowItemThreshold != previous.SlowItemThreshold || current.AdaptiveMode != previous.AdaptiveMode)
        {
            _watchdog.Signal();
        }

        if (current.QueueCapacity > previous.QueueCapacity)
        {
            // The new room goes to the producers already waiting for it, oldest first.
            _producers.AdmitWaiting();
        }
    }

    private void ThrowIfInvalid(BoundedExecutorSettings settings, string parameterName)
    {
        var errors = settings.GetValidationErrors(MaxWorkerCount);
        if (errors.Count > 0)
        {
            throw new ArgumentException($"Invalid settings for executor '{Name}': {string.Join(" ", errors.Values)}", parameterName);
        }
    }

    private void ThrowIfInvalidPin(int workerCount, TimeSpan duration, string durationName)
    {
        if (workerCount < 1 || workerCount > MaxWorkerCount)
        {
            throw new ArgumentOutOfRangeException(nameof(workerCount), workerCount, $"The worker count of executor '{Name}' must be between 1 and MaxWorkerCount ({MaxWorkerCount}).");
        }

        if (duration <= TimeSpan.Zero && duration != Timeout.InfiniteTimeSpan)
        {
            throw new ArgumentOutOfRangeException(durationName, duration, "A pin's duration must be positive, or Timeout.InfiniteTimeSpan (until unpinned).");
        }
    }

    /// <summary>Sets the worker count, pinned first when <paramref name="pin"/> says so.</summary>
    private void SetWorkerCount(int workerCount, bool pin, TimeSpan pinFor)
    {
        if (pin && !IsShutdown)
        {
            // Pinned first, so that a decision made between the pin and the resize holds the operator's count too.
            _adaptive.Pin(_settings.WorkerCount, workerCount, pinFor);
        }

        BoundedExecutorSettings previous, current;
        bool wakeWorkers;
        lock (_pool.SyncObj)
        {
            ThrowIfShutdownUnsynchronized();
            previous = _settings;
            current = previous with { WorkerCount = workerCount };
            wakeWorkers = ApplyUnsynchronized(current);
        }

        AfterChange(previous, current, wakeWorkers);
    }

    private void ThrowIfShutdownUnsynchronized()
    {
        if (IsShutdown)
        {
            throw new InvalidOperationException($"Executor '{Name}' is shut down and can no longer be reconfigured.");
        }
    }

    private void BeginShutdown()
    {
        _queue.Freeze();

        // A shutdown ends a pause: the drain runs (the workers ignore a pause set after the freeze as well).
        _pause.Clear();

        // Parked workers wake to drain or exit; waiting producers are rejected.
        _pool.WakeAll();
        _producers.RejectAll();
        if (_pool.AllWorkersExited())
        {
            OnAllWorkersExited();
        }
    }

    private Task<ShutdownResult> ShutdownCore(TimeSpan timeout)
    {
        BeginShutdown();
        if (IsWorkerThread)
        {
            return Task.FromResult(new ShutdownResult([], workersExited: false));
        }

        // The watchdog thread enforces the deadline: no timer, no ThreadPool thread.
        var waiter = new ShutdownWaiter(Deadline.After(_timeProvider, timeout));
        return _watchdog.TryAddShutdownWaiter(waiter) ? waiter.Task : Task.FromResult(new ShutdownResult([], workersExited: true));
    }

    private static void ValidateShutdownTimeout(TimeSpan timeout)
    {
        if (timeout < TimeSpan.Zero && timeout != Timeout.InfiniteTimeSpan)
        {
            throw new ArgumentOutOfRangeException(nameof(timeout), timeout, "The shutdown timeout must not be negative (use Timeout.InfiniteTimeSpan for no deadline).");
        }
    }

    private void ReportAbandonedOnDispose(ShutdownResult result)
    {
        foreach (var item in result.AbandonedItems)
        {
            _callbacks.ItemRejected(item, RejectionReason.Abandoned);
        }
    }

    /// <summary>Completes the executor: every worker has exited after shutdown began.</summary>
    private void OnAllWorkersExited()
    {
        if (_completion.TrySetResult())
        {
            // The drain is over and nothing serves the limit any more: a CallerRuns submitter still waiting for a
            // permit gives up (its item is rejected as shut down) instead of waiting for good.
            _permits.WakeWaiters();
            _permits.DisposeOwned();
            _watchdog.ReleaseShutdownWaiters();
        }
    }

    // The worker pool's view of the executor (IWorkSource).
    bool IWorkSource.HasWork => ((_queue.Count != 0 || _tenants.DeferredMayStart) && !_pause.IsPaused) || _queue.IsShutdown || _queue.IsAbandoned;

    bool IWorkSource.IsDrained => _queue.IsAbandoned || (_queue.IsShutdown && _queue.Count == 0 && !_tenants.DeferredMayStart);

    bool IWorkSource.IsShutdown => _queue.IsShutdown;

    bool IWorkSource.IsAbandoned => _queue.IsAbandoned;

    /// <summary>
    /// Claims and runs one item on a worker. A method of its own, never inlined, so the item (delegate, state, captured
    /// context, awaited task) is not kept alive by the worker loop's frame while the worker idles.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    bool IWorkSource.TryRunOne(Worker worker)
    {
        // Paused: claim nothing (one volatile read while never paused). A shutdown overrides the pause, so the drain runs.
        if (_pause.IsPaused && !_queue.IsShutdown)
        {
            return false;
        }

        // A rate limit: a permit before the claim, so the item stays queued while the worker waits for one.
        System.Threading.RateLimiting.RateLimitLease? permit = null;
        if (_permits.Limiter is not null && !_permits.TryAcquire(ref permit, s_keepWaitingForPermit, this))
        {
            return false;
        }

        // A deferred tenant item the scheduler now lets start goes first, past the same pause and permit checks.
        if (_tenants.DeferredMayStart && _tenants.TakeDeferred() is { } deferred)
        {
            RunTenantItem(worker, deferred, permit);
            return true;
        }

        long remaining;
        QueuedItem item;
        TenantEntry? tenantEntry = null;
        while (true)
        {
            if (!_queue.TryClaim(ref worker.KnownAdmissions, out var ticket, out remaining))
            {
                _permits.Unused(permit); // another worker took the item: a permit is never held by an idle worker
                return false;
            }

            item = _queue.ReadClaimed(ticket);
            if (TenantEntry.IsPlaceholder(item, out var placeholder))
            {
                // A tenant's slot: run the scheduler's pick. None when every backlogged tenant is at its running bound
                // (deferred: the worker that finishes one of their items runs it) or after a shutdown deadline.
                tenantEntry = _tenants.Resolve();
                if (tenantEntry is null)
                {
                    AfterClaim(remaining);
                    _permits.Unused(permit);
                    return true;
                }

                item = tenantEntry.Item;
            }

            if (item.Awaited is not { } awaited || awaited.TryClaim())
            {
                break;
            }

            if (tenantEntry is not null)
            {
                TenantFinished(tenantEntry, ItemOutcome.Cancelled);
                tenantEntry = null;
            }

            worker.CountSkipped(); // its caller cancelled it while it was queued
            AfterClaim(remaining);
            if (permit is null || remaining == 0 || _pool.RetireOwed)
            {
                _permits.Unused(permit);
                return true;
            }

            // The permit goes at once to the next queued item, if this worker can claim it.
        }

        // Busy from here, before the claim's follow-up (which may admit waiting producers into the freed slot), so a
        // statistics snapshot sees the item as running rather than as taken but not started.
        var started = _itemClock.Now();
        worker.BeginRun(item, started);
        AfterClaim(remaining);
        if (tenantEntry is not null)
        {
            RecordTenantWait(tenantEntry, started);
        }

        var queueWaitThreshold = _settings.QueueWaitThreshold;
        if (queueWaitThreshold != Timeout.InfiniteTimeSpan)
        {
            _watchdog.CheckQueueWait(worker, item, started, queueWaitThreshold);
        }

        if (permit is not null)
        {
            // The permit is spent on this item; its lease ends with the item (a concurrency limiter's permit comes back).
            var permitted = _runner.RunOnWorker(worker, item);
            _permits.Release(permit);
            if (tenantEntry is not null)
            {
                TenantFinished(tenantEntry, permitted);
            }

            return true;
        }

        var outcome = _runner.RunOnWorker(worker, item);
        if (tenantEntry is not null)
        {
            TenantFinished(tenantEntry, outcome);
        }

        return true;
    }

    /// <summary>
    /// Runs a deferred tenant item the scheduler let start (<see cref="TenantBook.TakeDeferred"/>), on a worker that
    /// passed the pause check and holds a permit if a rate limit is in force.
    /// </summary>
    private void RunTenantItem(Worker worker, TenantEntry entry, System.Threading.RateLimiting.RateLimitLease? permit)
    {
        var item = entry.Item;
        if (item.Awaited is { } awaited && !awaited.TryClaim())
        {
            worker.CountSkipped(); // its caller cancelled it while it was deferred
            _permits.Unused(permit);
            TenantFinished(entry, ItemOutcome.Cancelled);
            return;
        }

        var started = _itemClock.Now();
        worker.BeginRun(item, started);
        RecordTenantWait(entry, started);
        var outcome = _runner.RunOnWorker(worker, item);
        if (permit is not null)
        {
            _permits.Release(permit);
        }

        TenantFinished(entry, outcome);
    }

    /// <summary>Records a starting tenant item's wait on its tenant's series, when someone listens.</summary>
    private void RecordTenantWait(TenantEntry entry, long started)
    {
        if (_instruments.TenantWaitEnabled && entry.Series is { } series)
        {
            _callbacks.RecordTenantWait(_itemClock.Elapsed(entry.Item.EnqueuedTimestamp, started), series);
        }
    }

    /// <summary>A tenant item finished or will not run; if a deferred item may now start, a worker is woken for it.</summary>
    private void TenantFinished(TenantEntry entry, ItemOutcome outcome)
    {
        if (_tenants.Finished(entry, outcome))
        {
            _pool.WakeOneUnlessOneSpins();
        }
    }

    /// <summary>A worker keeps waiting for a permit while items are queued, the queue is not abandoned, it need not retire and no pause is in force.</summary>
    private static readonly Func<BoundedExecutor, bool> s_keepWaitingForPermit =
        static executor => (executor._queue.Count != 0 || executor._tenants.DeferredMayStart) && !executor._queue.IsAbandoned && !executor._pool.RetireOwed
            && (!executor._pause.IsPaused || executor._queue.IsShutdown);

    void IWorkSource.OnAllWorkersExited() => OnAllWorkersExited();

    private void AfterClaim(long remaining)
    {
        if (_producers.Any)
        {
            // The freed slot goes to the oldest waiting producer, admitted by this thread.
            _producers.AdmitWaiting();
        }

        if (remaining > 0)
        {
            // More work is queued: make sure a parked worker helps (the cascade, one wake-up per claim).
            _pool.WakeOneUnlessOneSpins();
        }
        else if (_queue.IsShutdown)
        {
            // The drain is over: parked workers must wake up to exit.
            _pool.WakeAll();
        }
    }

    // The adaptive driver's view of the executor (IAdaptiveHost).
    AdaptiveReading IAdaptiveHost.ReadAdaptive(int minWorkerCount, int maxWorkerCount)
    {
        var settings = _settings;
        var now = _itemClock.Now();
        var s = _outcomes.Read(_queue, _pool, now, settings.SlowItemThreshold, _itemClock);
        var oldestAge = s.Queued != 0 && _queue.TryReadOldestStamp(s.Claims, out var oldestEnqueued)
            ? _itemClock.Elapsed(oldestEnqueued, now)
            : TimeSpan.Zero;
        return new AdaptiveReading(
            _timeProvider.GetTimestamp(),
            s.Workers.Completed,
            s.Workers.Failed,
            s.Submitted,
            _watchdog.SlowItemsReported,
            s.Workers.Busy,
            s.Workers.Target,
            s.Queued,
            oldestAge < TimeSpan.Zero ? TimeSpan.Zero : oldestAge,
            minWorkerCount,
            maxWorkerCount);
    }

    bool IAdaptiveHost.TryApplyAdaptiveCount(int oldCount, int newCount)
    {
        BoundedExecutorSettings previous, current;
        bool wakeWorkers;
        lock (_pool.SyncObj)
        {
            previous = _settings;
            if (IsShutdown || previous.AdaptiveMode != AdaptiveMode.On || previous.WorkerCount != oldCount || newCount < 1 || newCount > MaxWorkerCount)
            {
                return false;
            }

            current = previous with { WorkerCount = newCount };
            wakeWorkers = ApplyUnsynchronized(current);
        }

        AfterChange(previous, current, wakeWorkers);
        return true;
    }

    // The waiting producers' view of the executor (IProducerHost).
    int IProducerHost.QueueCapacity => Math.Max(0, _settings.QueueCapacity - _tenants.Deferred); // deferred tenant items are held too (TenantBook)

    void IProducerHost.OnAdmitted() => _pool.WakeOneUnlessOneSpins();

    void IProducerHost.Admitting(in QueuedItem item)
    {
        if (TenantEntry.IsPlaceholder(item, out var entry))
        {
            _tenants.Admit(entry); // before its slot is written (TenantBook, F1)
        }
    }

    RejectedExecutionException IProducerHost.Reject(in QueuedItem item, RejectionReason reason)
    {
        if (TenantEntry.IsPlaceholder(item, out var entry))
        {
            _tenants.Unreserve(entry.Tenant, refused: true);
            return _outcomes.NotRun(entry.Item, reason);
        }

        return _outcomes.NotRun(item, reason);
    }

    void IProducerHost.CancelledWhileWaiting(in QueuedItem item)
    {
        if (TenantEntry.IsPlaceholder(item, out var entry))
        {
            _tenants.Unreserve(entry.Tenant, refused: false);
            _outcomes.CancelledWhileWaiting(entry.Item);
            return;
        }

        _outcomes.CancelledWhileWaiting(item);
    }

    void IProducerHost.OnDeadlineAdded() => _watchdog.Signal();

    void IProducerHost.BlockingWait() => _callbacks.BlockingWait(BlockingWaitKind.WaitForRoom);
}
