namespace BoundedWork;

/// <summary>
/// The start-up settings of a <see cref="BoundedExecutor"/>. The executor copies them when it is created; later changes
/// to this object have no effect on it. A running executor's runtime settings are one
/// <see cref="BoundedExecutorSettings"/> value: read <see cref="BoundedExecutor.Settings"/> and change them with
/// <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettings)"/>.
/// </summary>
public sealed class BoundedExecutorOptions
{
    /// <summary>The largest queue capacity an executor accepts.</summary>
    public const int MaxQueueCapacity = int.MaxValue;

    /// <summary>The largest worker count an executor accepts.</summary>
    public const int MaxWorkerLimit = 4096;

    /// <summary>
    /// Gets or sets the executor's name, used for its worker threads (<c>payments#3</c>), in messages and in metrics.
    /// </summary>
    /// <value>Defaults to <c>"bounded-executor"</c>.</value>
    public string Name { get; set; } = "bounded-executor";

    /// <summary>Gets or sets the number of dedicated worker threads to start with.</summary>
    /// <value>Defaults to <see cref="Environment.ProcessorCount"/>. Must be between 1 and <see cref="MaxWorkerCount"/>.</value>
    public int WorkerCount { get; set; } = DefaultWorkerCount(Environment.ProcessorCount);

    /// <summary>
    /// Gets or sets the hard maximum worker count. No caller, including an admin endpoint or a configuration
    /// reload, can resize the executor beyond it.
    /// </summary>
    /// <value>
    /// Defaults to 64, or the processor count on machines with more than 64 logical processors (so the default
    /// <see cref="WorkerCount"/> is always valid). Must be between 1 and <see cref="MaxWorkerLimit"/>.
    /// </value>
    public int MaxWorkerCount { get; set; } = DefaultMaxWorkerCount(Environment.ProcessorCount);

    /// <summary>Gets or sets how many items may wait in the queue (items being run are not counted).</summary>
    /// <value>Defaults to 1024. Must be at least 1.</value>
    /// <remarks>
    /// The queue's storage starts at up to 1,024 slots and grows with the longest queue reached, never with the
    /// capacity alone; what it grew to is kept for the executor's lifetime (about 56 bytes per slot, at most twice the
    /// longest queue's length, rounded up to a power of two).
    /// </remarks>
    public int QueueCapacity { get; set; } = 1024;

    /// <summary>Gets or sets what happens to a new item when the queue is full.</summary>
    /// <value>Defaults to <see cref="BoundedWork.RejectionPolicy.Abort"/>.</value>
    public RejectionPolicy RejectionPolicy { get; set; } = RejectionPolicy.Abort;

    /// <summary>
    /// Gets or sets how long the <see cref="BoundedWork.RejectionPolicy.Wait"/> policy waits for room before rejecting.
    /// </summary>
    /// <value>Defaults to 30 seconds. Must be positive or <see cref="Timeout.InfiniteTimeSpan"/>.</value>
    public TimeSpan WaitTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how long <see cref="BoundedExecutor.Dispose"/> and <see cref="BoundedExecutor.DisposeAsync"/> wait
    /// for the queue to drain. Items still queued then are abandoned and reported to <see cref="OnRejected"/>.
    /// </summary>
    /// <value>Defaults to 30 seconds. Must not be negative; <see cref="Timeout.InfiniteTimeSpan"/> waits for the whole drain.</value>
    public TimeSpan DisposeTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how long an item may run before it is reported as slow (<see cref="OnSlowItem"/>, the
    /// <c>boundedwork.items.slow</c> metric, <see cref="BoundedExecutorStatistics.SlowWorkerCount"/>). A dedicated
    /// watchdog thread looks, so a report never waits for a worker or for the ThreadPool. The item is not interrupted.
    /// </summary>
    /// <value>Defaults to 30 seconds. Must be positive, or <see cref="Timeout.InfiniteTimeSpan"/> to turn the alarm off.</value>
    public TimeSpan SlowItemThreshold { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Gets or sets how long an item may wait in the queue before it is reported (<see cref="OnSlowItem"/> with
    /// <see cref="SlowItemKind.Queued"/>, when a worker takes it, and the metric).
    /// </summary>
    /// <value>Defaults to <see cref="Timeout.InfiniteTimeSpan"/> (off). Otherwise must be positive.</value>
    public TimeSpan QueueWaitThreshold { get; set; } = Timeout.InfiniteTimeSpan;

    /// <summary>
    /// Gets or sets the callback told about each item that passed <see cref="SlowItemThreshold"/> (once per item,
    /// from the watchdog thread, while the item still runs) or <see cref="QueueWaitThreshold"/> (on the worker
    /// that took it, before it runs). An exception it throws is swallowed and counted in
    /// <see cref="BoundedExecutorStatistics.CallbackFailures"/>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/> (slow items are only counted).</value>
    public Action<SlowItemArguments>? OnSlowItem { get; set; }

    /// <summary>
    /// Gets or sets a value indicating whether the submitter's <see cref="ExecutionContext"/> (AsyncLocal values,
    /// logging scopes, the current <c>Activity</c>) flows to the item. Turn it off for raw speed.
    /// </summary>
    /// <value>Defaults to <see langword="true"/>.</value>
    public bool FlowExecutionContext { get; set; } = true;

    /// <summary>
    /// Gets or sets how many items per second the workers may start (0: no rate limit); see
    /// <see cref="BoundedExecutorSettings.PermitsPerSecond"/>. Changeable at runtime.
    /// </summary>
    /// <value>Defaults to 0: no rate limit.</value>
    public int PermitsPerSecond { get; set; }

    /// <summary>
    /// Gets or sets how many permits may accumulate while idle (see <see cref="BoundedExecutorSettings.PermitBurst"/>).
    /// Changeable at runtime.
    /// </summary>
    /// <value>Defaults to 1.</value>
    public int PermitBurst { get; set; } = 1;

    /// <summary>
    /// Gets or sets a rate limiter of your own that workers take a permit from before they start an item (see
    /// <see cref="BoundedExecutorSettings.RateLimiter"/>); create it once, since the executor uses the instance it is
    /// given. Changeable at runtime.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>.</value>
    public System.Threading.RateLimiting.RateLimiter? RateLimiter { get; set; }

    /// <summary>
    /// Gets or sets the callback told about every fire-and-forget item that threw. It runs on the worker thread;
    /// an exception it throws is swallowed and counted in <see cref="BoundedExecutorStatistics.CallbackFailures"/>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/> (the failure is only counted).</value>
    public Action<WorkItemFailedArguments>? OnError { get; set; }

    /// <summary>
    /// Gets or sets the callback told about every item that was rejected, discarded or evicted, fire-and-forget
    /// and awaited alike, on the thread that made the decision. Items abandoned at a shutdown deadline are not
    /// passed here: <see cref="BoundedExecutor.ShutdownAsync(CancellationToken)"/> returns them.
    /// </summary>
    /// <value>Defaults to <see langword="null"/> (the item is only counted, and the caller told where it can be).</value>
    public Action<WorkItemRejectedArguments>? OnRejected { get; set; }

    /// <summary>
    /// Gets or sets the callback told each time a ThreadPool thread is about to block waiting for this executor
    /// (see <see cref="BlockingWaitKind"/>): the pattern that starves the shared pool, worth a log line with the
    /// caller's stack. It runs on the blocking thread; an exception it throws is swallowed and counted in
    /// <see cref="BoundedExecutorStatistics.CallbackFailures"/>. Every such wait is also counted in
    /// <see cref="BoundedExecutorStatistics.ThreadPoolBlockingWaits"/>, callback or not.
    /// </summary>
    /// <value>Defaults to <see langword="null"/> (the wait is only counted).</value>
    public Action<ThreadPoolBlockingWaitArguments>? OnThreadPoolBlockingWait { get; set; }

    /// <summary>
    /// Gets or sets the factory that creates the executor's <c>BoundedWork</c> meter (pass the one from dependency
    /// injection so metrics are scoped to the host).
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: the executor creates its own meter.</value>
    public System.Diagnostics.Metrics.IMeterFactory? MeterFactory { get; set; }

    /// <summary>Gets or sets the clock used for the wait timeout.</summary>
    /// <value>Defaults to <see cref="TimeProvider.System"/>.</value>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>Gets or sets whether the executor finds its own worker count (see <see cref="BoundedExecutorSettings.AdaptiveMode"/>).</summary>
    /// <value>Defaults to <see cref="AdaptiveMode.Off"/>; <see cref="WorkerCount"/> is then the count it starts at.</value>
    public AdaptiveMode AdaptiveMode { get; set; }

    /// <summary>Gets or sets the fewest workers the adaptive mode runs (see <see cref="BoundedExecutorSettings.AdaptiveMinWorkerCount"/>).</summary>
    /// <value>Defaults to 1.</value>
    public int AdaptiveMinWorkerCount { get; set; } = 1;

    /// <summary>Gets or sets the most workers the adaptive mode runs, at most <see cref="MaxWorkerCount"/> (see <see cref="BoundedExecutorSettings.AdaptiveMaxWorkerCount"/>).</summary>
    /// <value>Defaults to <see langword="null"/>: up to <see cref="MaxWorkerCount"/>.</value>
    public int? AdaptiveMaxWorkerCount { get; set; }

    /// <summary>Gets or sets fair share across tenants (see <see cref="BoundedExecutorSettings.FairShare"/>).</summary>
    /// <value>Defaults to <see langword="null"/>: off.</value>
    public FairShareSettings? FairShare { get; set; }

    /// <summary>Gets or sets what a worker-count decision of the adaptive mode is reported to (every entry of its decision log).</summary>
    /// <value>Defaults to <see langword="null"/>. Called on the executor's watchdog thread; exceptions are counted and ignored.</value>
    public Action<WorkerCountDecision>? OnWorkerCountDecision { get; set; }

    /// <summary>Gets or sets the adaptive controller's tuning; tests and the simulation change it.</summary>
    internal Internal.Adaptive.AdaptiveParameters AdaptiveParameters { get; set; } = Internal.Adaptive.AdaptiveParameters.Default;

    /// <summary>The default hard maximum for a machine with <paramref name="processorCount"/> logical processors.</summary>
    internal static int DefaultMaxWorkerCount(int processorCount) => Math.Clamp(processorCount, 64, MaxWorkerLimit);

    /// <summary>The default worker count for a machine with <paramref name="processorCount"/> logical processors.</summary>
    internal static int DefaultWorkerCount(int processorCount) => Math.Clamp(processorCount, 1, MaxWorkerLimit);

    /// <summary>Gets the runtime settings an executor created from these options starts with.</summary>
    /// <returns>The settings; later changes to these options do not change them.</returns>
    public BoundedExecutorSettings ToSettings() => new()
    {
        WorkerCount = WorkerCount,
        QueueCapacity = QueueCapacity,
        RejectionPolicy = RejectionPolicy,
        WaitTimeout = WaitTimeout,
        SlowItemThreshold = SlowItemThreshold,
        QueueWaitThreshold = QueueWaitThreshold,
        PermitsPerSecond = PermitsPerSecond,
        PermitBurst = PermitBurst,
        RateLimiter = RateLimiter,
        AdaptiveMode = AdaptiveMode,
        AdaptiveMinWorkerCount = AdaptiveMinWorkerCount,
        AdaptiveMaxWorkerCount = AdaptiveMaxWorkerCount,
        FairShare = FairShare,
    };

    /// <summary>
    /// Checks every setting: the fixed ones here, the runtime ones with <see cref="BoundedExecutorSettings.GetValidationErrors"/>.
    /// </summary>
    /// <returns>
    /// One message per invalid setting, naming the setting and its value, keyed by the setting's name; empty when the
    /// options are valid.
    /// </returns>
    public IReadOnlyDictionary<string, string> GetValidationErrors()
    {
        var errors = new Dictionary<string, string>(StringComparer.Ordinal);
        if (string.IsNullOrWhiteSpace(Name))
        {
            errors[nameof(Name)] = "Name must not be empty.";
        }

        if (MaxWorkerCount < 1 || MaxWorkerCount > MaxWorkerLimit)
        {
            errors[nameof(MaxWorkerCount)] = $"MaxWorkerCount must be between 1 and {MaxWorkerLimit} (was {MaxWorkerCount}).";
        }

        ToSettings().AddValidationErrors(errors, MaxWorkerCount);
        if (DisposeTimeout < TimeSpan.Zero && DisposeTimeout != Timeout.InfiniteTimeSpan)
        {
            errors[nameof(DisposeTimeout)] = $"DisposeTimeout must not be negative, or Timeout.InfiniteTimeSpan (was {DisposeTimeout}).";
        }

        if (TimeProvider is null)
        {
            errors[nameof(TimeProvider)] = "TimeProvider must not be null.";
        }

        return errors;
    }
}
