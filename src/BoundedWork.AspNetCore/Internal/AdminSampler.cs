using System.Diagnostics;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Samples every executor and the shared ThreadPool once per second on a dedicated thread, and keeps a fixed window
/// of history: queue depth for the dashboard's charts (and, for adaptive executors, the worker count, the oldest queued
/// item's age and the busy workers), outcome counters for the rates. It runs on its own thread
/// and waits on a kernel event, so it keeps sampling, and keeps measuring how long the pool takes to start a work
/// item, while the pool is starved.
/// </summary>
internal sealed class AdminSampler : IDisposable
{
    public static readonly TimeSpan Interval = TimeSpan.FromSeconds(1);

    /// <summary>A work item that waited at least this long for a pool thread means the pool is starved.</summary>
    public static readonly TimeSpan StarvationThreshold = TimeSpan.FromSeconds(1);

    private static readonly TimeSpan s_rateWindow = TimeSpan.FromMinutes(1);

    private readonly IBoundedExecutorRegistry _registry;
    private readonly ILogger _logger;
    private readonly int _capacity;
    private readonly Lock _sync = new();
    private readonly Dictionary<string, Ring<ExecutorSample>> _executors = new(StringComparer.OrdinalIgnoreCase);
    private readonly Ring<PoolSample> _pool;
    private readonly ManualResetEventSlim _stop = new(false);
    private readonly IThreadPoolDiagnosisSource? _diagnoses;
    private Thread? _thread;

    // The ThreadPool probe: the timestamp a probe was queued at (0 when none is outstanding), and how long the last
    // one waited to start, in Stopwatch ticks.
    private long _probeQueuedAt;
    private long _lastProbeLatency = -1;

    public AdminSampler(IBoundedExecutorRegistry registry, ILoggerFactory loggerFactory, IOptions<BoundedWorkAdminOptions> options, IEnumerable<IThreadPoolDiagnosisSource>? diagnoses = null)
    {
        _diagnoses = diagnoses?.FirstOrDefault();
        _registry = registry;
        _logger = loggerFactory.CreateLogger(AdminLog.Category);
        _capacity = (int)Math.Ceiling(options.Value.History / Interval);
        _pool = new Ring<PoolSample>(_capacity);
    }

    public void Start()
    {
        lock (_sync)
        {
            if (_thread is not null)
            {
                return;
            }

            _thread = new Thread(static state => ((AdminSampler)state!).Run())
            {
                IsBackground = true,
                Name = "BoundedWork admin sampler",
            };
            _thread.UnsafeStart(this);
        }
    }

    public void Stop()
    {
        _stop.Set();
        Thread? thread;
        lock (_sync)
        {
            thread = _thread;
        }

        thread?.Join(TimeSpan.FromSeconds(5));
    }

    public void Dispose()
    {
        Stop();
        _stop.Dispose();
    }

    /// <summary>Computes the rates of <paramref name="now"/> against the oldest sample of the last minute.</summary>
    public RatesView GetRates(BoundedExecutorStatistics now)
    {
        var nowTimestamp = Stopwatch.GetTimestamp();
        ExecutorSample? baseline = null;
        lock (_sync)
        {
            if (_executors.TryGetValue(now.Name, out var ring))
            {
                baseline = ring.OldestSince(nowTimestamp - (long)(s_rateWindow.TotalSeconds * Stopwatch.Frequency), static s => s.Timestamp);
            }
        }

        if (baseline is not { } b)
        {
            return new RatesView(0, null, null, null, null, null, null);
        }

        var seconds = Stopwatch.GetElapsedTime(b.Timestamp, nowTimestamp).TotalSeconds;
        if (seconds < 0.5)
        {
            return new RatesView(Math.Round(seconds, 3), null, null, null, null, null, null);
        }

        return new RatesView(
            Math.Round(seconds, 3),
            Rate(now.Submitted, b.Submitted),
            Rate(now.Completed, b.Completed),
            Rate(now.Failed, b.Failed),
            Rate(now.Cancelled, b.Cancelled),
            Rate(now.Rejected, b.Rejected),
            Rate(now.Discarded, b.Discarded));

        double Rate(long current, long then) => Math.Round(Math.Max(0, current - then) / seconds, 3);
    }

    /// <summary>
    /// The executor's history, oldest first: its queue length and, for an executor whose adaptive mode is not Off
    /// (<paramref name="adaptive"/>), the series the dashboard's adaptive chart draws (see <see cref="HistoryView"/>).
    /// </summary>
    public HistoryView GetHistory(string executorName, bool adaptive = false)
    {
        ExecutorSample[] samples;
        lock (_sync)
        {
            samples = _executors.TryGetValue(executorName, out var ring) ? ring.Select(static s => s) : [];
        }

        var lengths = Array.ConvertAll(samples, static s => s.QueueLength);
        if (!adaptive)
        {
            return new HistoryView(Interval.TotalSeconds, lengths);
        }

        var runTimes = new double?[samples.Length];
        for (var i = 1; i < samples.Length; i++)
        {
            var (before, after) = (samples[i - 1], samples[i]);
            runTimes[i] = RunTimeMs(before.BusyWorkers, after.BusyWorkers, before.Finished, after.Finished, Stopwatch.GetElapsedTime(before.Timestamp, after.Timestamp).TotalSeconds);
        }

        return new HistoryView(
            Interval.TotalSeconds,
            lengths,
            Array.ConvertAll(samples, static s => s.TargetWorkers),
            Array.ConvertAll(samples, static s => s.OldestQueuedItemAgeMs),
            runTimes);
    }

    /// <summary>
    /// An item's mean run time between two samples by Little's law, as the adaptive mode measures it: busy workers
    /// (the mean of the two samples) divided by the items finished per second; <see langword="null"/> when none
    /// finished. The dashboard computes the same between two refreshes.
    /// </summary>
    public static double? RunTimeMs(int busyBefore, int busyAfter, long finishedBefore, long finishedAfter, double seconds)
    {
        var finished = finishedAfter - finishedBefore;
        if (finished <= 0 || seconds <= 0)
        {
            return null;
        }

        return Math.Round((busyBefore + busyAfter) / 2.0 / (finished / seconds) * 1000, 3);
    }

    public ThreadPoolResponse GetThreadPool(bool includeHistory)
    {
        var nowTimestamp = Stopwatch.GetTimestamp();
        ThreadPool.GetMinThreads(out var minThreads, out var minIo);
        ThreadPool.GetMaxThreads(out var maxThreads, out var maxIo);
        var threadCount = ThreadPool.ThreadCount;
        var pending = ThreadPool.PendingWorkItemCount;
        var completed = ThreadPool.CompletedWorkItemCount;

        double? latencyMs = null;
        var last = Volatile.Read(ref _lastProbeLatency);
        if (last >= 0)
        {
            latencyMs = Stopwatch.GetElapsedTime(0, last).TotalMilliseconds;
        }

        var queuedAt = Volatile.Read(ref _probeQueuedAt);
        if (queuedAt != 0)
        {
            var waiting = Stopwatch.GetElapsedTime(queuedAt, nowTimestamp).TotalMilliseconds;
            latencyMs = Math.Max(latencyMs ?? 0, waiting);
        }

        var thresholdMs = StarvationThreshold.TotalMilliseconds;
        var starved = latencyMs >= thresholdMs;
        var starvation = starved
            ? $"A work item queued to the ThreadPool waited {latencyMs / 1000:0.0} s for a thread ({pending} items pending, {threadCount} threads, minimum {minThreads}): code is blocking pool threads."
            : null;

        double? completedPerSecond = null;
        ThreadPoolHistoryView? history = null;
        lock (_sync)
        {
            var baseline = _pool.OldestSince(nowTimestamp - (long)(s_rateWindow.TotalSeconds * Stopwatch.Frequency), static s => s.Timestamp);
            if (baseline is { } b && Stopwatch.GetElapsedTime(b.Timestamp, nowTimestamp).TotalSeconds is var seconds && seconds >= 0.5)
            {
                completedPerSecond = Math.Round(Math.Max(0, completed - b.Completed) / seconds, 3);
            }

            if (includeHistory)
            {
                history = new ThreadPoolHistoryView(Interval.TotalSeconds, _pool.Select(static s => s.Pending), _pool.Select(static s => s.ThreadCount));
            }
        }

        return new ThreadPoolResponse(
            DateTimeOffset.UtcNow,
            threadCount,
            pending,
            completed,
            completedPerSecond,
            minThreads,
            maxThreads,
            minIo,
            maxIo,
            latencyMs is { } ms ? Math.Round(ms, 3) : null,
            starved,
            thresholdMs,
            starvation,
            history,
            _diagnoses?.LastDiagnosis is { } d ? new ThreadPoolDiagnosisView(d.DiagnosedAt, d.IsStarved, d.Verdict, d.BlockingSites, d.Evidence, d.Advice) : null,
            _diagnoses?.Limitation);
    }

    /// <summary>Takes one sample now (the sampler thread calls this every second).</summary>
    public void SampleOnce()
    {
        ProbeThreadPool();
        var poolSample = new PoolSample(Stopwatch.GetTimestamp(), ThreadPool.PendingWorkItemCount, ThreadPool.ThreadCount, ThreadPool.CompletedWorkItemCount);
        lock (_sync)
        {
            _pool.Add(poolSample);
        }

        foreach (var name in _registry.Names)
        {
            BoundedExecutorStatistics stats;
            try
            {
                if (!_registry.TryGetExecutor(name, out var executor))
                {
                    continue;
                }

                stats = executor.GetStatistics();
            }
            catch (Exception exception)
            {
                _logger.SamplerFailed(name, exception);
                continue;
            }

            var sample = new ExecutorSample(Stopwatch.GetTimestamp(), stats);
            lock (_sync)
            {
                if (!_executors.TryGetValue(name, out var ring))
                {
                    ring = new Ring<ExecutorSample>(_capacity);
                    _executors.Add(name, ring);
                }

                ring.Add(sample);
            }
        }
    }

    private void Run()
    {
        do
        {
            SampleOnce();
        }
        while (!_stop.Wait(Interval));
    }

    private void ProbeThreadPool()
    {
        if (Volatile.Read(ref _probeQueuedAt) != 0)
        {
            return; // the last probe has not started yet: the pool is busy or starved, and GetThreadPool shows its age
        }

        Volatile.Write(ref _probeQueuedAt, Stopwatch.GetTimestamp());
        ThreadPool.UnsafeQueueUserWorkItem(static sampler => sampler.OnProbeStarted(), this, preferLocal: false);
    }

    private void OnProbeStarted()
    {
        var queuedAt = Volatile.Read(ref _probeQueuedAt);
        Volatile.Write(ref _lastProbeLatency, Stopwatch.GetTimestamp() - queuedAt);
        Volatile.Write(ref _probeQueuedAt, 0);
    }

    private readonly record struct ExecutorSample(
        long Timestamp,
        int QueueLength,
        long Submitted,
        long Completed,
        long Failed,
        long Cancelled,
        long Rejected,
        long Discarded,
        int TargetWorkers,
        int BusyWorkers,
        double OldestQueuedItemAgeMs)
    {
        public ExecutorSample(long timestamp, BoundedExecutorStatistics s)
            : this(timestamp, s.QueueLength, s.Submitted, s.Completed, s.Failed, s.Cancelled, s.Rejected, s.Discarded, s.TargetWorkerCount, s.BusyWorkerCount, Math.Round(s.OldestQueuedItemAge.TotalMilliseconds, 3))
        {
        }

        /// <summary>Gets the items that ran and finished, completed or failed (as the adaptive mode counts them).</summary>
        public long Finished => Completed + Failed;
    }

    private readonly record struct PoolSample(long Timestamp, long Pending, int ThreadCount, long Completed);

    /// <summary>A fixed-size ring of samples, oldest overwritten first. Not thread-safe: the sampler's lock guards it.</summary>
    private sealed class Ring<T>(int capacity)
        where T : struct
    {
        private readonly T[] _items = new T[capacity];
        private int _next;
        private int _count;

        public void Add(T item)
        {
            _items[_next] = item;
            _next = (_next + 1) % _items.Length;
            _count = Math.Min(_count + 1, _items.Length);
        }

        public TResult[] Select<TResult>(Func<T, TResult> selector)
        {
            var result = new TResult[_count];
            var start = (_next - _count + _items.Length) % _items.Length;
            for (var i = 0; i < _count; i++)
            {
                result[i] = selector(_items[(start + i) % _items.Length]);
            }

            return result;
        }

        /// <summary>Returns the oldest sample taken at or after <paramref name="since"/>, or <see langword="null"/>.</summary>
        public T? OldestSince(long since, Func<T, long> timestamp)
        {
            var start = (_next - _count + _items.Length) % _items.Length;
            for (var i = 0; i < _count; i++)
            {
                var item = _items[(start + i) % _items.Length];
                if (timestamp(item) >= since)
                {
                    return item;
                }
            }

            return null;
        }
    }
}
