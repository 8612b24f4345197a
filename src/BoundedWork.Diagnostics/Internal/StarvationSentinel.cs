using System.Diagnostics;
using System.Diagnostics.Tracing;
using BoundedWork.Hosting;
using Microsoft.Diagnostics.NETCore.Client;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace BoundedWork.Diagnostics.Internal;

/// <summary>
/// The starvation sentinel. One dedicated thread (never the pool: it must run while the pool is starved) wakes every
/// probe interval on a kernel wait, reads the probe it queued to the pool last time (how long it waited for a pool
/// thread) and the pool's queue length, and queues the next. A probe older than the starvation threshold means
/// starved; starved for longer than DiagnoseAfter, and no diagnosis within the last DiagnosisInterval, the same thread
/// diagnoses: it opens an EventPipe session on the process's own diagnostics port (the runtime serves it from a
/// native thread), samples every thread's stack for SampleDuration, and reads them with the same rule and words as
/// <c>bw doctor</c>, the in-flight MVC actions naming what the stacks do not. Every call on that path is synchronous
/// on this thread or a second dedicated one: none needs a pool thread.
/// <para>
/// Bounds: one diagnosis at a time per process (<see cref="s_diagnosing"/>, whatever the number of hosts), at most one
/// per DiagnosisInterval per sentinel, a trace file deleted after reading. A failure of a diagnosis is logged and the
/// sentinel goes on; a process without a diagnostics port is told once and watched on.
/// </para>
/// </summary>
internal sealed class StarvationSentinel : IThreadPoolDiagnosisSource, IHealthCheck, IHostedService, IDisposable
{
    public const string LoggerCategory = "BoundedWork.Diagnostics.StarvationSentinel";
    public const string ActivityName = "BoundedWork.ThreadPoolDiagnosis";
    public const string DiagnosisEventName = "threadpool.starvation";

    // The BoundedWork activity source (AddBoundedWorkInstrumentation() on a tracer provider listens to it): one
    // activity per starvation diagnosis, with one event that carries it.
    private static readonly ActivitySource s_activitySource = new(BoundedWorkDiagnostics.ActivitySourceName, typeof(StarvationSentinel).Assembly.GetName().Version?.ToString());
    private static int s_diagnosing;

    private readonly StarvationSentinelOptions _options;
    private readonly ILogger _logger;
    private readonly ManualResetEventSlim _stop = new(false);
    private readonly Lock _sync = new();
    private readonly List<(DateTime At, long Pending, int Threads, long Completed)> _readings = [];
    private ActionTracker? _actions;
    private Thread? _thread;

    private long _probeQueuedAt;
    private long _lastProbeLatency = -1;
    private long _starvedSince;
    private long _lastDiagnosisAt;
    private volatile bool _starvedNow;
    private volatile ThreadPoolDiagnosis? _last;
    private volatile string? _limitation;

    public StarvationSentinel(IOptions<StarvationSentinelOptions> options, ILoggerFactory loggerFactory)
    {
        _options = options.Value;
        _logger = loggerFactory.CreateLogger(LoggerCategory);
    }

    public ThreadPoolDiagnosis? LastDiagnosis => _last;

    public string? Limitation => _limitation;

    /// <summary>Gets the probe's wait: the last probe's, or the one still waiting if it has waited longer.</summary>
    public TimeSpan QueueLatency
    {
        get
        {
            var latency = Volatile.Read(ref _lastProbeLatency) is var last and >= 0 ? Stopwatch.GetElapsedTime(0, last) : TimeSpan.Zero;
            var queuedAt = Volatile.Read(ref _probeQueuedAt);
            return queuedAt != 0 && Stopwatch.GetElapsedTime(queuedAt) is var waiting && waiting > latency ? waiting : latency;
        }
    }

    public Task StartAsync(CancellationToken cancellationToken)
    {
        lock (_sync)
        {
            if (_thread is not null)
            {
                return Task.CompletedTask;
            }

            if (DiagnosticsPortOff() is { } reason)
            {
                CannotDiagnose(reason);
            }
            else
            {
                _actions = ActionTracker.Start();
            }

            _thread = new Thread(static state => ((StarvationSentinel)state!).Run())
            {
                IsBackground = true,
                Name = "BoundedWork starvation sentinel",
            };
            _thread.UnsafeStart(this);
        }

        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken)
    {
        _stop.Set();
        Thread? thread;
        lock (_sync)
        {
            thread = _thread;
        }

        thread?.Join(TimeSpan.FromSeconds(5));
        return Task.CompletedTask;
    }

    public void Dispose()
    {
        StopAsync(CancellationToken.None).GetAwaiter().GetResult();
        _actions?.Dispose();
    }

    /// <summary>Keeps <paramref name="diagnosis"/> as the last one, for the health check and the console.</summary>
    internal void Publish(ThreadPoolDiagnosis diagnosis) => _last = diagnosis;

    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        var last = _last;
        var data = new Dictionary<string, object>
        {
            ["starved"] = _starvedNow,
            ["queueLatencyMs"] = Math.Round(QueueLatency.TotalMilliseconds, 3),
        };
        if (last is not null)
        {
            data["lastDiagnosis"] = last.Verdict;
            data["diagnosedAt"] = last.DiagnosedAt;
            data["blockingSites"] = last.BlockingSites;
            data["advice"] = last.Advice;
        }

        if (_limitation is { } limitation)
        {
            data["limitation"] = limitation;
        }

        return Task.FromResult(_starvedNow
            ? new HealthCheckResult(HealthStatus.Degraded, $"The ThreadPool is starved: a work item waited {QueueLatency.TotalSeconds:0.0} s for a pool thread.{(last?.IsStarved == true ? " Last diagnosis: " + last.Verdict : "")}", data: data)
            : HealthCheckResult.Healthy(last is null ? "The ThreadPool starts work without delay." : $"The ThreadPool starts work without delay. Last diagnosis ({last.DiagnosedAt:u}): {last.Verdict}", data));
    }

    private void Run()
    {
        do
        {
            try
            {
                Tick();
            }
#pragma warning disable CA1031 // Nothing crashes the process: a failed tick is logged and the sentinel goes on.
            catch (Exception exception)
#pragma warning restore CA1031
            {
                SentinelLog.DiagnosisFailed(_logger, exception);
            }
        }
        while (!_stop.Wait(_options.ProbeInterval));
    }

    private void Tick()
    {
        var latency = QueueLatency;
        if (Volatile.Read(ref _probeQueuedAt) == 0)
        {
            Volatile.Write(ref _probeQueuedAt, Stopwatch.GetTimestamp());
            ThreadPool.UnsafeQueueUserWorkItem(static sentinel => sentinel.OnProbeStarted(), this, preferLocal: false);
        }

        var now = Stopwatch.GetTimestamp();
        if (latency < _options.StarvationThreshold)
        {
            _starvedNow = false;
            _starvedSince = 0;
            _readings.Clear();
            return;
        }

        _starvedNow = true;
        if (_starvedSince == 0)
        {
            _starvedSince = now;
        }

        Read();
        if (Stopwatch.GetElapsedTime(_starvedSince, now) < _options.DiagnoseAfter
            || (_lastDiagnosisAt != 0 && Stopwatch.GetElapsedTime(_lastDiagnosisAt, now) < _options.DiagnosisInterval))
        {
            return;
        }

        _lastDiagnosisAt = now;
        if (_limitation is { } limitation)
        {
            SentinelLog.StarvationDetected(_logger, latency.TotalSeconds, ThreadPool.PendingWorkItemCount, ThreadPool.ThreadCount, limitation);
            return;
        }

        if (Interlocked.CompareExchange(ref s_diagnosing, 1, 0) != 0)
        {
            return; // another sentinel of this process is diagnosing now: one diagnosis at a time
        }

        try
        {
            Diagnose();
        }
        finally
        {
            Volatile.Write(ref s_diagnosing, 0);
        }
    }

    private void Read()
    {
        _readings.Add((DateTime.UtcNow, ThreadPool.PendingWorkItemCount, ThreadPool.ThreadCount, ThreadPool.CompletedWorkItemCount));
        if (_readings.Count > 120)
        {
            _readings.RemoveAt(0);
        }
    }

    private void OnProbeStarted()
    {
        var queuedAt = Volatile.Read(ref _probeQueuedAt);
        Volatile.Write(ref _lastProbeLatency, Stopwatch.GetTimestamp() - queuedAt);
        Volatile.Write(ref _probeQueuedAt, 0);
    }

    private void Diagnose()
    {
        var started = Stopwatch.GetTimestamp();
        IReadOnlyList<ThreadSample> samples;
        IReadOnlyDictionary<int, string>? work;
        try
        {
            (samples, work) = SelfSampler.Sample(_options.SampleDuration, _actions, _stop);
        }
        catch (Exception exception) when (exception is ServerNotAvailableException or UnsupportedCommandException or ServerErrorException
            or UnauthorizedAccessException or PlatformNotSupportedException or IOException or TimeoutException)
        {
            CannotDiagnose(exception.Message);
            SentinelLog.StarvationDetected(_logger, QueueLatency.TotalSeconds, ThreadPool.PendingWorkItemCount, ThreadPool.ThreadCount, _limitation!);
            return;
        }

        Read();
        var counters = new List<CounterSample>();
        for (var i = 0; i < _readings.Count; i++)
        {
            var r = _readings[i];
            counters.Add(new CounterSample(r.At, CounterNames.PoolQueue, null, r.Pending));
            counters.Add(new CounterSample(r.At, CounterNames.PoolThreads, null, r.Threads));
            if (i > 0 && (r.At - _readings[i - 1].At).TotalSeconds is var seconds and > 0)
            {
                counters.Add(new CounterSample(r.At, CounterNames.PoolCompleted, null, Math.Round((r.Completed - _readings[i - 1].Completed) / seconds)));
            }
        }

        var report = Diagnosis.Diagnose(Environment.ProcessId, counters, samples, work);
        var sites = report.BlockingSites.Select(s => $"{s.Threads} of {report.PoolThreads} pool threads blocked in {s.Method}{(s.CalledFrom is null ? "" : $", called from {s.CalledFrom}")}: {s.Meaning}").ToList();
        var diagnosis = new ThreadPoolDiagnosis
        {
            DiagnosedAt = DateTimeOffset.UtcNow,
            IsStarved = report.Starved,
            Verdict = report.Verdict,
            BlockingSites = sites,
            Evidence = report.Evidence,
            Advice = report.Advice,
        };
        Publish(diagnosis);
        var took = Stopwatch.GetElapsedTime(started);
        if (!report.Starved)
        {
            SentinelLog.SlowNotStarved(_logger, report.Verdict, took.TotalMilliseconds);
            return;
        }

        SentinelLog.StarvationDiagnosed(_logger, report.Verdict, string.Join("; ", sites), string.Join(" ", report.Evidence), string.Join(Environment.NewLine, report.Advice), took.TotalMilliseconds);
        using var activity = s_activitySource.StartActivity(ActivityName, ActivityKind.Internal);
        activity?.AddEvent(new ActivityEvent(DiagnosisEventName, diagnosis.DiagnosedAt, new ActivityTagsCollection
        {
            ["threadpool.starved"] = true,
            ["threadpool.verdict"] = report.Verdict,
            ["threadpool.blocking_sites"] = sites.ToArray(),
            ["threadpool.evidence"] = report.Evidence.ToArray(),
            ["threadpool.advice"] = report.Advice.ToArray(),
        }));
    }

    private void CannotDiagnose(string reason)
    {
        if (_limitation is not null)
        {
            return;
        }

        _limitation = reason;
        _actions?.Dispose(); // nothing will read the running actions
        _actions = null;
        SentinelLog.CannotDiagnose(_logger, reason);
    }

    private static string? DiagnosticsPortOff()
    {
        foreach (var name in (string[])["DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics", "DOTNET_EnableDiagnostics_IPC"])
        {
            if (Environment.GetEnvironmentVariable(name) == "0")
            {
                return $"{name}=0 turns the runtime's diagnostics port off.";
            }
        }

        return OperatingSystem.IsBrowser() || OperatingSystem.IsWasi() ? "this platform has no diagnostics port." : null;
    }
}

/// <summary>The sentinel's log events.</summary>
internal static partial class SentinelLog
{
    [LoggerMessage(EventId = 400, EventName = "ThreadPoolStarvationDiagnosed", Level = LogLevel.Warning,
        Message = "ThreadPool starvation diagnosed. {Verdict} Blocking: {BlockingSites}. Evidence: {Evidence} What to do: {Advice} (diagnosed in {DiagnosisMs:0} ms)")]
    public static partial void StarvationDiagnosed(ILogger logger, string verdict, string blockingSites, string evidence, string advice, double diagnosisMs);

    [LoggerMessage(EventId = 401, EventName = "ThreadPoolSlowNotStarved", Level = LogLevel.Information,
        Message = "The ThreadPool was slow to start work, but not starved: {Verdict} (diagnosed in {DiagnosisMs:0} ms)")]
    public static partial void SlowNotStarved(ILogger logger, string verdict, double diagnosisMs);

    [LoggerMessage(EventId = 402, EventName = "ThreadPoolStarvationNotDiagnosable", Level = LogLevel.Warning,
        Message = "The starvation sentinel can detect ThreadPool starvation but not diagnose it: {Reason} It goes on watching.")]
    public static partial void CannotDiagnose(ILogger logger, string reason);

    [LoggerMessage(EventId = 403, EventName = "ThreadPoolStarvationDetected", Level = LogLevel.Warning,
        Message = "The ThreadPool is starved: a work item waited {Seconds:0.0} s for a pool thread ({Pending} items pending, {Threads} threads). The sentinel cannot name the code: {Reason}")]
    public static partial void StarvationDetected(ILogger logger, double seconds, long pending, int threads, string reason);

    [LoggerMessage(EventId = 404, EventName = "ThreadPoolDiagnosisFailed", Level = LogLevel.Error,
        Message = "The starvation sentinel failed to diagnose the ThreadPool; it goes on watching.")]
    public static partial void DiagnosisFailed(ILogger logger, Exception exception);
}
