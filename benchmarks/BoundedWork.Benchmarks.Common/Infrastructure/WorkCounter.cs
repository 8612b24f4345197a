namespace BoundedWork.Benchmarks.Infrastructure;

/// <summary>
/// The benchmarks' work item and its finish line: every item decrements the counter, and the item that brings it
/// to zero sets an event the benchmark thread waits on. <see cref="Signal"/> is the "tiny item" all contenders run.
/// </summary>
public sealed class WorkCounter : IDisposable
{
    /// <summary>How long one operation may take before it is reported as a hang instead of a slow result.</summary>
    public static readonly TimeSpan HangTimeout = TimeSpan.FromSeconds(60);

    private readonly ManualResetEventSlim _done = new(initialState: false);
    private int _remaining;

    public WorkCounter()
    {
        // One cached delegate, so submitting it allocates nothing.
        Work = Signal;
    }

    /// <summary>Gets the item as a cached <see cref="Action"/> (no allocation per submit).</summary>
    public Action Work { get; }

    /// <summary>Gets the number of items not yet run.</summary>
    public int Remaining => Volatile.Read(ref _remaining);

    /// <summary>Arms the counter for the next operation.</summary>
    public void Reset(int items)
    {
        _done.Reset();
        Volatile.Write(ref _remaining, items);
    }

    /// <summary>The work item: one interlocked decrement; the last item sets the event.</summary>
    public void Signal()
    {
        if (Interlocked.Decrement(ref _remaining) == 0)
        {
            _done.Set();
        }
    }

    /// <summary>Waits until every item of the operation has run; throws with details if that takes too long.</summary>
    /// <param name="describe">Describes the contender's state for the hang report.</param>
    public void Wait(Func<string> describe)
    {
        if (!_done.Wait(HangTimeout))
        {
            var message = $"HANG: {Remaining} item(s) still not run after {HangTimeout.TotalSeconds:0} s. {describe()}";
            Console.Error.WriteLine(message);
            throw new TimeoutException(message);
        }
    }

    public void Dispose() => _done.Dispose();
}
