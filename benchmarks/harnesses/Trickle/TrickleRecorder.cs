using System.Diagnostics;

namespace BoundedWork.Benchmarks.Trickle;

/// <summary>
/// Preallocated items and their timestamps: item <c>k</c> records when it was submitted (by the pacer, just before
/// the submit call) and when it started (its first instruction on the consumer). Nothing is allocated per item by
/// the harness, so the contenders' own costs are what the CPU clock sees.
/// </summary>
internal sealed class TrickleRecorder : IDisposable
{
    private readonly long[] _submitted;
    private readonly long[] _started;
    private readonly ManualResetEventSlim _done = new(initialState: false);
    private int _remaining;

    public TrickleRecorder(int count)
    {
        _submitted = new long[count];
        _started = new long[count];
        _remaining = count;
        Items = new TrickleItem[count];
        for (var i = 0; i < count; i++)
        {
            Items[i] = new TrickleItem(this, i);
        }
    }

    public TrickleItem[] Items { get; }

    /// <summary>Gets the number of items not yet started.</summary>
    public int Remaining => Volatile.Read(ref _remaining);

    public void MarkSubmitted(int index) => _submitted[index] = Stopwatch.GetTimestamp();

    public void MarkStarted(int index)
    {
        _started[index] = Stopwatch.GetTimestamp();
        if (Interlocked.Decrement(ref _remaining) == 0)
        {
            _done.Set();
        }
    }

    /// <summary>Waits until every item has run.</summary>
    public bool WaitAll(TimeSpan timeout) => _done.Wait(timeout);

    /// <summary>Submit-to-start latencies in microseconds of items <paramref name="from"/> onwards, sorted.</summary>
    public double[] SortedLatencies(int from)
    {
        var latencies = new double[_submitted.Length - from];
        for (var i = from; i < _submitted.Length; i++)
        {
            latencies[i - from] = Stopwatch.GetElapsedTime(_submitted[i], _started[i]).TotalMicroseconds;
        }

        Array.Sort(latencies);
        return latencies;
    }

    public void Dispose() => _done.Dispose();
}

/// <summary>The tiny item: it records its start time and counts itself done.</summary>
internal sealed class TrickleItem
{
    private readonly TrickleRecorder _recorder;
    private readonly int _index;

    public TrickleItem(TrickleRecorder recorder, int index)
    {
        _recorder = recorder;
        _index = index;
        Run = Start;
    }

    /// <summary>Gets the item as a cached delegate (submitting it allocates nothing).</summary>
    public Action Run { get; }

    private void Start() => _recorder.MarkStarted(_index);
}
