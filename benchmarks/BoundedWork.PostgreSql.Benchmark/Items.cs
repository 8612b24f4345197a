using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text.Json.Serialization;
using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>The benchmark's item: a sequence number, so the driver can match a handler start with its enqueue.</summary>
public sealed record BenchItem(int Number);

/// <summary>Source-generated JSON metadata of <see cref="BenchItem"/>.</summary>
[JsonSerializable(typeof(BenchItem))]
public sealed partial class BenchJson : JsonSerializerContext;

/// <summary>
/// What the handlers of one process did: how many items they handled, the monotonic time the last one ended, and,
/// when asked, the start time of each item (latency runs). Times are <see cref="Stopwatch.GetTimestamp"/> values:
/// on Linux that is CLOCK_MONOTONIC, one clock for every process of the machine.
/// </summary>
public sealed class Recorder(bool recordStarts)
{
    private readonly ConcurrentQueue<(int Number, long Started)>? _starts = recordStarts ? new() : null;
    private long _count;
    private long _lastEnded;

    public long Count => Interlocked.Read(ref _count);

    /// <summary>Gets when the last handled item ended; read after <see cref="Count"/>, it covers every item counted.</summary>
    public long LastEnded => Interlocked.Read(ref _lastEnded);

    public void Handled(int number, long started)
    {
        _starts?.Enqueue((number, started));
        var ended = Stopwatch.GetTimestamp();
        var seen = Interlocked.Read(ref _lastEnded);
        while (ended > seen)
        {
            var previous = Interlocked.CompareExchange(ref _lastEnded, ended, seen);
            if (previous == seen)
            {
                break;
            }

            seen = previous;
        }

        Interlocked.Increment(ref _count);
    }

    public bool TryTakeStart(out (int Number, long Started) start)
    {
        start = default;
        return _starts is not null && _starts.TryDequeue(out start);
    }
}

/// <summary>The empty handler: it only records that the item ran (no database access, no sleep).</summary>
public sealed class BenchHandler(Recorder recorder) : IBlockingWorkHandler<BenchItem>
{
    public void Handle(BenchItem item, CancellationToken cancellationToken) => recorder.Handled(item.Number, Stopwatch.GetTimestamp());
}
