using System.Diagnostics;
using Microsoft.Extensions.Hosting;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Server;

/// <summary>
/// Samples the shared ThreadPool from a dedicated thread (a sampler on the pool could not report the pool being
/// starved): thread count, pending work items, and a queue-delay probe — a trivial item queued to the pool whose
/// wait before running is the delay any request or continuation queued at that moment also sees.
/// </summary>
internal sealed class ThreadPoolSampler : IHostedService, IDisposable
{
    private readonly TimeSpan _interval;
    private readonly ManualResetEventSlim _stop = new();
    private readonly Lock _lock = new();
    private Thread? _thread;
    private long _probeQueuedAt;
    private double _lastProbeDelayMs;
    private ThreadPoolStats _current = new(0, 0, 0, 0, 0, 0, 0);
    private int _peakThreads;
    private long _peakPending;
    private double _peakDelayMs;
    private int _samples;

    /// <summary>Initializes a sampler taking one sample per <paramref name="interval"/>.</summary>
    /// <param name="interval">The sampling interval.</param>
    public ThreadPoolSampler(TimeSpan interval) => _interval = interval;

    /// <summary>Gets the latest sample and the peaks since start or the last <see cref="ResetPeaks"/>.</summary>
    public ThreadPoolStats Current
    {
        get
        {
            lock (_lock)
            {
                return _current;
            }
        }
    }

    /// <summary>Starts the sampling thread.</summary>
    /// <param name="cancellationToken">Unused.</param>
    /// <returns>A completed task.</returns>
    public Task StartAsync(CancellationToken cancellationToken)
    {
        _thread = new Thread(Loop) { IsBackground = true, Name = "threadpool sampler" };
        _thread.UnsafeStart();
        return Task.CompletedTask;
    }

    /// <summary>Stops the sampling thread.</summary>
    /// <param name="cancellationToken">Unused.</param>
    /// <returns>A completed task.</returns>
    public Task StopAsync(CancellationToken cancellationToken)
    {
        _stop.Set();
        _thread?.Join(TimeSpan.FromSeconds(2));
        return Task.CompletedTask;
    }

    /// <summary>Starts the peaks again from the current sample (the benchmark calls this after its warm-up).</summary>
    public void ResetPeaks()
    {
        lock (_lock)
        {
            _peakThreads = _current.Threads;
            _peakPending = _current.PendingItems;
            _peakDelayMs = _current.QueueDelayMs;
            _samples = 0;
            _current = _current with { PeakThreads = _peakThreads, PeakPendingItems = _peakPending, PeakQueueDelayMs = _peakDelayMs, Samples = 0 };
        }
    }

    /// <inheritdoc />
    public void Dispose() => _stop.Dispose();

    private void Loop()
    {
        do
        {
            Sample();
        }
        while (!_stop.Wait(_interval));
    }

    private void Sample()
    {
        // One probe in flight at a time: while it has not run, its age so far is the delay (a lower bound).
        var queuedAt = Volatile.Read(ref _probeQueuedAt);
        double delayMs;
        if (queuedAt == 0)
        {
            delayMs = Volatile.Read(ref _lastProbeDelayMs);
            Volatile.Write(ref _probeQueuedAt, Stopwatch.GetTimestamp());
            ThreadPool.UnsafeQueueUserWorkItem(static sampler => sampler.OnProbe(), this, preferLocal: false);
        }
        else
        {
            delayMs = Math.Max(Volatile.Read(ref _lastProbeDelayMs), Stopwatch.GetElapsedTime(queuedAt).TotalMilliseconds);
        }

        var threads = ThreadPool.ThreadCount;
        var pending = ThreadPool.PendingWorkItemCount;
        lock (_lock)
        {
            _peakThreads = Math.Max(_peakThreads, threads);
            _peakPending = Math.Max(_peakPending, pending);
            _peakDelayMs = Math.Max(_peakDelayMs, delayMs);
            _samples++;
            _current = new ThreadPoolStats(threads, pending, delayMs, _peakThreads, _peakPending, _peakDelayMs, _samples);
        }
    }

    private void OnProbe()
    {
        var queuedAt = Volatile.Read(ref _probeQueuedAt);
        Volatile.Write(ref _lastProbeDelayMs, Stopwatch.GetElapsedTime(queuedAt).TotalMilliseconds);
        Volatile.Write(ref _probeQueuedAt, 0);
    }
}
