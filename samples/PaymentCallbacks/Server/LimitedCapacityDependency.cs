using System.Diagnostics;
using Microsoft.Extensions.Options;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Server;

/// <summary>
/// The side effect in front of a dependency of limited capacity (<see cref="DownstreamOptions"/>): a database with K
/// connections. A call takes a connection (blocking while all K are taken, as a synchronous client's pool does), then
/// blocks for the side effect's delay, stretched by the drift and by contention past the knee, then does the CPU part.
/// Its whole duration (the wait for a connection included) is the item's run time the executor sees, and is counted.
/// </summary>
internal sealed class LimitedCapacityDependency : IPaymentDependency, IDisposable
{
    private readonly SideEffectOptions _effect;
    private readonly DownstreamOptions _downstream;
    private readonly SemaphoreSlim _connections;
    private readonly long _started = Stopwatch.GetTimestamp();
    private int _inFlight;
    private int _peakInFlight;
    private int _serving;
    private int _peakServing;
    private long _calls;

    /// <summary>Initializes a new instance of the <see cref="LimitedCapacityDependency"/> class.</summary>
    /// <param name="effect">The side effect's delay and CPU part.</param>
    /// <param name="downstream">The capacity, contention penalty and drift.</param>
    public LimitedCapacityDependency(IOptions<SideEffectOptions> effect, IOptions<DownstreamOptions> downstream)
    {
        _effect = effect.Value;
        _downstream = downstream.Value;
        _connections = new SemaphoreSlim(_downstream.Capacity, _downstream.Capacity);
    }

    /// <summary>Gets the call durations so far.</summary>
    public RunTimeHistogram RunTimes { get; } = new();

    /// <inheritdoc />
    public void Call(PaymentCallback callback)
    {
        var start = Stopwatch.GetTimestamp();
        RaisePeak(ref _peakInFlight, Interlocked.Increment(ref _inFlight));
        _connections.Wait();
        RaisePeak(ref _peakServing, Interlocked.Increment(ref _serving));
        try
        {
            var capacity = _downstream.Capacity;
            var contention = 1 + (_downstream.ContentionPenalty * Math.Max(0, Volatile.Read(ref _inFlight) - capacity) / capacity);
            var delay = _effect.MinDelayMs == _effect.MaxDelayMs
                ? _effect.MinDelayMs
                : _effect.MinDelayMs + (Random.Shared.NextDouble() * (_effect.MaxDelayMs - _effect.MinDelayMs));
            var stretched = delay * _downstream.SpeedFactor(Stopwatch.GetElapsedTime(_started).TotalSeconds) * contention;
            // Whole milliseconds (what a sleep honours), rounded up or down at random so the mean is kept.
            var whole = (int)Math.Floor(stretched) + (Random.Shared.NextDouble() < stretched % 1 ? 1 : 0);
            if (whole > 0)
            {
                Thread.Sleep(whole);
            }

            SlowDependency.Hash(callback, _effect.CpuIterations);
        }
        finally
        {
            Interlocked.Decrement(ref _serving);
            _connections.Release();
            Interlocked.Decrement(ref _inFlight);
            Interlocked.Increment(ref _calls);
            RunTimes.Record(Stopwatch.GetElapsedTime(start));
        }
    }

    /// <summary>Reads the counters.</summary>
    /// <returns>The dependency's part of <c>/stats/capacity</c>.</returns>
    public DependencyStats Read() => new(
        _downstream.Capacity, Volatile.Read(ref _inFlight), Volatile.Read(ref _peakInFlight), Volatile.Read(ref _peakServing), Interlocked.Read(ref _calls),
        _downstream.SpeedFactor(Stopwatch.GetElapsedTime(_started).TotalSeconds), RunTimes.Snapshot());

    /// <inheritdoc />
    public void Dispose() => _connections.Dispose();

    private static void RaisePeak(ref int peakField, int calls)
    {
        var peak = Volatile.Read(ref peakField);
        while (calls > peak)
        {
            var seen = Interlocked.CompareExchange(ref peakField, calls, peak);
            if (seen == peak)
            {
                return;
            }

            peak = seen;
        }
    }
}
