namespace BoundedWork.Internal.Adaptive;

/// <summary>
/// Wires the adaptive controller into an executor: on each watchdog pass while the mode is not Off it reads the
/// executor (<see cref="IAdaptiveHost.ReadAdaptive"/>), feeds the <see cref="AdaptiveSampler"/>, hands each finished
/// interval to the <see cref="AdaptiveController"/>, applies its decision (On) or only records it (Advisory), and keeps
/// the bounded decision log.
/// </summary>
/// <remarks>
/// <para>
/// Cost: nothing per item. A look is one statistics-style read of counters the executor keeps anyway (the workers'
/// completed and failed counts, the queue's admissions and claims, the oldest item's stamp), every
/// <see cref="LookInterval"/> on the watchdog thread, never on the ThreadPool.
/// </para>
/// <para>
/// The log holds the decisions that change (or, advisory, would change) the count, the ends of pins and operators'
/// pins: at most <see cref="LogCapacity"/>, oldest dropped first. Holds are not logged (one per interval); the
/// number of logged decisions is <see cref="Decisions"/>.
/// </para>
/// <para>
/// Thread safety: <see cref="Tick"/> runs on the watchdog (and on a test's thread); <see cref="_tickLock"/>
/// serializes it. <see cref="Pin"/>, <see cref="Unpin"/> and the readers may be called from any thread. No user code
/// runs under either lock: the callback and the metric are called after the lock is released.
/// </para>
/// </remarks>
internal sealed class AdaptiveDriver
{
    /// <summary>How many decisions the log keeps.</summary>
    public const int LogCapacity = 64;

    private readonly IAdaptiveHost _host;
    private readonly ExecutorCallbacks _callbacks;
    private readonly TimeProvider _time;
    private readonly AdaptiveController _controller;
    private readonly Lock _tickLock = new();
    private readonly Lock _logLock = new();
    private readonly Queue<WorkerCountDecision> _log = new();
    private AdaptiveSampler _sampler;
    private AdaptiveMode _lastMode;
    private long _decisions;

    public AdaptiveDriver(IAdaptiveHost host, ExecutorCallbacks callbacks, AdaptiveParameters parameters, TimeProvider time)
    {
        _host = host;
        _callbacks = callbacks;
        _time = time;
        _controller = new AdaptiveController(parameters, time);
        _sampler = new AdaptiveSampler(parameters, time);
        LookInterval = parameters.Interval / 5;
    }

    /// <summary>Gets how often the watchdog looks while the mode is not Off: five looks per measurement interval.</summary>
    public TimeSpan LookInterval { get; }

    /// <summary>Gets how many decisions were logged, ever.</summary>
    public long Decisions => Interlocked.Read(ref _decisions);

    /// <summary>Gets the run-time baseline the controller measured, if any.</summary>
    public TimeSpan? Baseline => _controller.Baseline;

    /// <summary>Reads the pin, if any (see <see cref="AdaptiveController.TryGetPin"/>).</summary>
    public bool TryGetPin(out int count, out DateTimeOffset? until) => _controller.TryGetPin(out count, out until);

    /// <summary>Gets the log, oldest first.</summary>
    public IReadOnlyList<WorkerCountDecision> GetDecisions()
    {
        lock (_logLock)
        {
            return [.. _log];
        }
    }

    /// <summary>One watchdog pass: a look, and a decision when the look ends an interval.</summary>
    public void Tick()
    {
        WorkerCountDecision? logged;
        lock (_tickLock)
        {
            var settings = _host.Settings;
            var mode = settings.AdaptiveMode;
            if (mode != _lastMode && _lastMode == AdaptiveMode.Off)
            {
                // Turned on: the intervals start now, not at the last look before it was turned off.
                _sampler = new AdaptiveSampler(_controller.Parameters, _time);
            }

            _lastMode = mode;
            if (mode == AdaptiveMode.Off)
            {
                return;
            }

            _controller.Advisory = mode == AdaptiveMode.Advisory;
            var (min, max) = settings.AdaptiveBounds(_host.MaxWorkerCount);
            var reading = _host.ReadAdaptive(min, max);
            if (!_sampler.Observe(reading, out var sample))
            {
                return;
            }

            var decision = _controller.Decide(sample);
            if (!decision.IsChange && decision.Rule != AdaptiveRule.Unpinned)
            {
                return;
            }

            var applied = decision.Applied && decision.IsChange && _host.TryApplyAdaptiveCount(decision.OldCount, decision.NewCount);
            logged = ToRecord(decision, applied || (decision.Applied && !decision.IsChange));
        }

        Log(logged);
    }

    /// <summary>Pins the count an operator chose, and logs the pin.</summary>
    public void Pin(int oldCount, int count, TimeSpan? duration)
    {
        _controller.Pin(count, duration);
        var until = duration is { } d && d != Timeout.InfiniteTimeSpan ? $" for {d}" : " until unpinned";
        Log(new WorkerCountDecision
        {
            ExecutorName = _host.Name,
            Time = _time.GetUtcNow(),
            OldCount = oldCount,
            NewCount = count,
            Rule = nameof(AdaptiveRule.Pinned),
            Applied = true,
            RunTimeBaseline = _controller.Baseline,
            Description = $"pinned {oldCount} -> {count} by an operator{until}",
        });
    }

    /// <summary>Ends a pin; the next decision logs <c>Unpinned</c>.</summary>
    public void Unpin() => _controller.Unpin();

    private WorkerCountDecision ToRecord(AdaptiveDecision decision, bool applied)
    {
        var s = decision.Signals;
        return new WorkerCountDecision
        {
            ExecutorName = _host.Name,
            Time = decision.Time,
            OldCount = decision.OldCount,
            NewCount = decision.NewCount,
            Rule = decision.Rule.ToString(),
            Applied = applied,
            MinQueueWait = s.MinQueueWait,
            QueueLength = s.QueueLength,
            CompletedPerSecond = s.CompletedPerSecond,
            ArrivalsPerSecond = s.ArrivalsPerSecond,
            FailureShare = s.FailureShare,
            RunTime = s.RunTime,
            RunTimeBaseline = s.Baseline,
            BusyWorkers = s.BusyWorkers,
            Description = decision.Applied && !applied && decision.IsChange
                ? decision + " (not applied: the count changed meanwhile)"
                : decision.ToString(),
        };
    }

    private void Log(WorkerCountDecision decision)
    {
        lock (_logLock)
        {
            if (_log.Count == LogCapacity)
            {
                _log.Dequeue();
            }

            _log.Enqueue(decision);
        }

        Interlocked.Increment(ref _decisions);
        _callbacks.WorkerCountDecided(decision);
    }
}

/// <summary>The executor as the adaptive driver sees it.</summary>
internal interface IAdaptiveHost
{
    /// <summary>Gets the executor's name.</summary>
    string Name { get; }

    /// <summary>Gets the hard maximum worker count.</summary>
    int MaxWorkerCount { get; }

    /// <summary>Gets the settings in force.</summary>
    BoundedExecutorSettings Settings { get; }

    /// <summary>Reads the counters and gauges one look needs, with the adaptive bounds in force.</summary>
    AdaptiveReading ReadAdaptive(int minWorkerCount, int maxWorkerCount);

    /// <summary>Sets the worker count to <paramref name="newCount"/> if it still is <paramref name="oldCount"/>, the mode is On and the executor runs.</summary>
    bool TryApplyAdaptiveCount(int oldCount, int newCount);
}
