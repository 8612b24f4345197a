using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace BoundedWork.Internal;

/// <summary>
/// One executor's metrics. Gauges and counters are observed from <see cref="BoundedExecutor.GetStatistics"/> when
/// a listener collects, so they cost nothing per item; the two histograms are recorded per item only while
/// someone listens to them.
/// </summary>
internal sealed class ExecutorInstruments : IDisposable
{
    private readonly Meter _meter;
    private readonly bool _ownsMeter;
    private readonly KeyValuePair<string, object?> _executorTag;
    private readonly Histogram<double> _waitDuration;
    private readonly Histogram<double> _runDuration;
    private readonly Histogram<double> _tenantWaitDuration;
    private readonly Counter<long> _slowItems;
    private readonly Histogram<double> _permitWait;
    private readonly Counter<long> _workerCountDecisions;
    private readonly Lock _snapshotLock = new();
    private BoundedExecutorStatistics? _snapshot;
    private int _observed;

    public ExecutorInstruments(BoundedExecutor executor, IMeterFactory? meterFactory)
    {
        _executorTag = new(BoundedWorkDiagnostics.ExecutorTag, executor.Name);
        if (meterFactory is null)
        {
            _meter = new Meter(BoundedWorkDiagnostics.MeterName);
            _ownsMeter = true;
        }
        else
        {
            // Tagged with the executor so the factory hands each executor its own meter.
            _meter = meterFactory.Create(new MeterOptions(BoundedWorkDiagnostics.MeterName) { Tags = [_executorTag] });
        }

        _permitWait = _meter.CreateHistogram<double>("boundedwork.ratelimit.wait.duration", "s", "Time a worker waited for a rate-limit permit after a refusal.");
        _slowItems = _meter.CreateCounter<long>("boundedwork.items.slow", "{item}", "Items reported for running, or waiting in the queue, longer than their threshold.");
        _workerCountDecisions = _meter.CreateCounter<long>("boundedwork.workers.decisions", "{decision}", "Worker-count decisions of the adaptive mode (changes made or, in advisory mode, proposed; pins and their ends), by rule.");
        _waitDuration = _meter.CreateHistogram<double>("boundedwork.item.wait.duration", "s", "Time items spent in the queue before a worker took them.");
        _runDuration = _meter.CreateHistogram<double>("boundedwork.item.run.duration", "s", "Time items took to run on a worker.");
        _tenantWaitDuration = _meter.CreateHistogram<double>("boundedwork.tenant.wait.duration", "s", "Time each tenant's items waited before a worker started them (fair share; tenants past the series limit as \"(other)\").");
    }

    /// <summary>
    /// Publishes the observable instruments, whose callbacks read the executor's statistics. Called as the last step of
    /// the executor's constructor: a listener already subscribed to the meter may observe an instrument the moment it
    /// is created, from any thread, so the executor must be whole by then.
    /// </summary>
    public void PublishObservables(BoundedExecutor executor)
    {
        var tag = _executorTag;
        _meter.CreateObservableUpDownCounter("boundedwork.queue.length", () => new Measurement<int>(Snapshot(executor, 0).QueueLength, tag), "{item}", "Items waiting in the queue.");
        _meter.CreateObservableUpDownCounter("boundedwork.queue.capacity", () => new Measurement<int>(Snapshot(executor, 1).QueueCapacity, tag), "{item}", "How many items the queue can hold.");
        _meter.CreateObservableUpDownCounter("boundedwork.workers", () => new Measurement<int>(Snapshot(executor, 2).LiveWorkerCount, tag), "{thread}", "Live worker threads.");
        _meter.CreateObservableUpDownCounter("boundedwork.workers.target", () => new Measurement<int>(Snapshot(executor, 3).TargetWorkerCount, tag), "{thread}", "The worker count the executor converges to.");
        _meter.CreateObservableUpDownCounter("boundedwork.workers.busy", () => new Measurement<int>(Snapshot(executor, 4).BusyWorkerCount, tag), "{thread}", "Workers running an item.");
        _meter.CreateObservableCounter("boundedwork.items.submitted", () => new Measurement<long>(Snapshot(executor, 5).Submitted, tag), "{item}", "Items submitted.");
        _meter.CreateObservableCounter("boundedwork.items", () => Outcomes(Snapshot(executor, 6), tag), "{item}", "Items by outcome.");
        _meter.CreateObservableUpDownCounter("boundedwork.tenant.items.queued", () => Tenants(executor, tag, static t => t.Queued), "{item}", "Items of each tenant queued now (fair share; tenants past the series limit as \"(other)\").");
        _meter.CreateObservableUpDownCounter("boundedwork.tenant.items.running", () => Tenants(executor, tag, static t => t.Running), "{item}", "Items of each tenant running now (fair share).");
        _meter.CreateObservableCounter("boundedwork.tenant.items", () => TenantOutcomes(executor, tag), "{item}", "Items of each tenant by outcome: completed, failed, refused (fair share).");
        _meter.CreateObservableCounter("boundedwork.threadpool.blocking_waits", () => new Measurement<long>(Snapshot(executor, 7).ThreadPoolBlockingWaits, tag), "{wait}", "Times a ThreadPool thread blocked waiting for the executor.");
        _meter.CreateObservableUpDownCounter("boundedwork.workers.slow", () => new Measurement<int>(Snapshot(executor, 8).SlowWorkerCount, tag), "{thread}", "Workers running an item for longer than the slow-item threshold.");
        _meter.CreateObservableUpDownCounter("boundedwork.items.running", () => new Measurement<long>(Snapshot(executor, 9).Running, tag), "{item}", "Items running now, on busy workers or on submitting threads.");
        _meter.CreateObservableUpDownCounter("boundedwork.items.starting", () => new Measurement<long>(Snapshot(executor, 10).Starting, tag), "{item}", "Items taken from the queue that have not started yet.");
        _meter.CreateObservableUpDownCounter("boundedwork.ratelimit.waiting", () => new Measurement<int>(Snapshot(executor, 11).RateLimitWaitingWorkers, tag), "{thread}", "Workers (and CallerRuns submitters) waiting for a rate-limit permit now.");
        _meter.CreateObservableCounter("boundedwork.ratelimit.permits", () => new Measurement<long>(Snapshot(executor, 12).PermitsAcquired, tag), "{permit}", "Rate-limit permits taken to start items.");
        _meter.CreateObservableCounter("boundedwork.ratelimit.refusals", () => new Measurement<long>(Snapshot(executor, 13).PermitsRefused, tag), "{permit}", "Times a permit was refused and the worker waited for one.");
        _meter.CreateObservableUpDownCounter("boundedwork.paused", () => new Measurement<int>(Snapshot(executor, 14).IsPaused ? 1 : 0, tag), "{pause}", "1 while the executor is paused (its workers start no new item), else 0.");
    }

    /// <summary>
    /// One statistics snapshot per collection: each observable instrument takes the current snapshot, and the first
    /// instrument to ask twice (the start of the next collection) takes a new one. So all instruments of one
    /// collection agree with each other (submitted equals queued + starting + running + outcomes), without any timing guess.
    /// </summary>
    private BoundedExecutorStatistics Snapshot(BoundedExecutor executor, int instrument)
    {
        lock (_snapshotLock)
        {
            var bit = 1 << instrument;
            if (_snapshot is null || (_observed & bit) != 0)
            {
                _snapshot = executor.GetStatistics();
                _observed = 0;
            }

            _observed |= bit;
            return _snapshot;
        }
    }

    public bool WaitDurationEnabled => _waitDuration.Enabled;

    public bool RunDurationEnabled => _runDuration.Enabled;

    public void RecordWait(TimeSpan waited) => _waitDuration.Record(waited.TotalSeconds, _executorTag);

    public void RecordPermitWait(TimeSpan waited)
    {
        if (_permitWait.Enabled)
        {
            _permitWait.Record(waited.TotalSeconds, _executorTag);
        }
    }

    public void RecordRun(TimeSpan ran) => _runDuration.Record(ran.TotalSeconds, _executorTag);

    public bool TenantWaitEnabled => _tenantWaitDuration.Enabled;

    public void RecordTenantWait(TimeSpan waited, string series) =>
        _tenantWaitDuration.Record(waited.TotalSeconds, _executorTag, new KeyValuePair<string, object?>(BoundedWorkDiagnostics.TenantTag, series));

    public void RecordSlowItem(SlowItemKind kind) =>
        _slowItems.Add(1, _executorTag, new KeyValuePair<string, object?>("boundedwork.slow.kind", kind == SlowItemKind.Running ? "running" : "queued"));

    public void RecordWorkerCountDecision(WorkerCountDecision decision) =>
        _workerCountDecisions.Add(
            1,
            _executorTag,
            new KeyValuePair<string, object?>("boundedwork.decision.rule", decision.Rule),
            new KeyValuePair<string, object?>("boundedwork.decision.applied", decision.Applied));

    public void Dispose()
    {
        if (_ownsMeter)
        {
            _meter.Dispose();
        }
    }

    private static IEnumerable<Measurement<int>> Tenants(BoundedExecutor executor, KeyValuePair<string, object?> tag, Func<TenantStatistics, int> read) =>
        executor.Tenants.ReadSeries().Select(t => new Measurement<int>(read(t), tag, new KeyValuePair<string, object?>(BoundedWorkDiagnostics.TenantTag, t.Tenant)));

    private static IEnumerable<Measurement<long>> TenantOutcomes(BoundedExecutor executor, KeyValuePair<string, object?> tag) =>
        executor.Tenants.ReadSeries().SelectMany(t => new[]
        {
            TenantOutcome(t.Completed, "completed", t.Tenant, tag),
            TenantOutcome(t.Failed, "failed", t.Tenant, tag),
            TenantOutcome(t.Refused, "refused", t.Tenant, tag),
        });

    private static Measurement<long> TenantOutcome(long value, string outcome, string tenant, KeyValuePair<string, object?> executor) =>
        new(value, executor, new KeyValuePair<string, object?>(BoundedWorkDiagnostics.TenantTag, tenant), new KeyValuePair<string, object?>(BoundedWorkDiagnostics.OutcomeTag, outcome));

    private static Measurement<long>[] Outcomes(BoundedExecutorStatistics s, KeyValuePair<string, object?> executor) =>
    [
        Outcome(s.Completed, "completed", executor),
        Outcome(s.Failed, "failed", executor),
        Outcome(s.Cancelled, "cancelled", executor),
        Outcome(s.Rejected, "rejected", executor),
        Outcome(s.Discarded, "discarded", executor),
        Outcome(s.Abandoned, "abandoned", executor),
    ];

    private static Measurement<long> Outcome(long value, string outcome, KeyValuePair<string, object?> executor) =>
        new(value, executor, new KeyValuePair<string, object?>(BoundedWorkDiagnostics.OutcomeTag, outcome));
}
