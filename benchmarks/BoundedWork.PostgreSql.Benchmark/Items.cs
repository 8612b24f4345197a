using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text.Json.Serialization;
using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The benchmark's item: a sequence number, so the driver can match a handler start with its enqueue, and, in the
/// cluster shape's keyed cases, an ordering key; in the fair-share shape, its tenant (the handler's witness records it;
/// the queue takes it from the enqueue's options). Both are left out of the payload when null, so the other rows store
/// what they always stored.
/// </summary>
public sealed record BenchItem(
    int Number,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? Key = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? Tenant = null);

/// <summary>Source-generated JSON metadata of <see cref="BenchItem"/>.</summary>
[JsonSerializable(typeof(BenchItem))]
public sealed partial class BenchJson : JsonSerializerContext;

/// <summary>
/// What the handlers of one process did: how many items they handled, the monotonic time the last one ended, and,
/// when asked, the start time of each item (latency runs) or its start and end (the cluster shape's binding runs).
/// Times are <see cref="Stopwatch.GetTimestamp"/> values: on Linux that is CLOCK_MONOTONIC, one clock for every
/// process of the machine. <see cref="HandlerDelay"/> makes each handler block that long (0: it returns at once).
/// </summary>
public sealed class Recorder(bool recordStarts, bool recordSpans = false)
{
    private readonly ConcurrentQueue<(int Number, long Started)>? _starts = recordStarts ? new() : null;
    private readonly ConcurrentQueue<(int Number, long Started, long Ended)>? _spans = recordSpans ? new() : null;
    private long _count;
    private long _lastEnded;

    /// <summary>Gets how long each handler blocks (<see cref="Thread.Sleep(TimeSpan)"/>), as a blocking call to a dependency would.</summary>
    public TimeSpan HandlerDelay { get; init; }

    /// <summary>Gets the witness the handlers record their own start and end in (the fair-share shape; null: none).</summary>
    public Witness? Witness { get; init; }

    public long Count => Interlocked.Read(ref _count);

    /// <summary>Gets when the last handled item ended; read after <see cref="Count"/>, it covers every item counted.</summary>
    public long LastEnded => Interlocked.Read(ref _lastEnded);

    public void Handled(int number, long started)
    {
        _starts?.Enqueue((number, started));
        var ended = Stopwatch.GetTimestamp();
        _spans?.Enqueue((number, started, ended));
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

    public bool TryTakeSpan(out (int Number, long Started, long Ended) span)
    {
        span = default;
        return _spans is not null && _spans.TryDequeue(out span);
    }
}

/// <summary>
/// The handler: it records that the item ran (no database access); it blocks for <see cref="Recorder.HandlerDelay"/>
/// first when that is set (the cluster shape's binding runs), and otherwise returns at once.
/// </summary>
public sealed class BenchHandler(Recorder recorder) : IBlockingWorkHandler<BenchItem>
{
    public void Handle(BenchItem item, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        if (recorder.HandlerDelay > TimeSpan.Zero)
        {
            Thread.Sleep(recorder.HandlerDelay);
        }

        recorder.Witness?.Record(item, started, Stopwatch.GetTimestamp());
        recorder.Handled(item.Number, started);
    }
}
