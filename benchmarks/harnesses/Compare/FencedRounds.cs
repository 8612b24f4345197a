using System.Diagnostics;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks.Compare;

/// <summary>
/// The timed part of a <c>compare</c> round, the same as the Java harness's: start the clock, let the producers
/// submit their items, then submit one fence item per worker. Each fence item waits on a barrier of workers + 1
/// parties and the harness joins it. The queue is FIFO and there are exactly <c>workers</c> consumers, so once
/// every consumer is inside a fence item, every earlier item has finished: the clock stops there. So the items need
/// no "items left" countdown of the harness's own: they do only what <see cref="CompareItem"/> says.
/// </summary>
internal sealed class FencedRounds : IDisposable
{
    private readonly ProducerGang _producers;
    private readonly Barrier _fence;
    private readonly Action _fenceItem;
    private readonly Action<Action> _submit;
    private readonly Func<string> _describe;
    private readonly int _items;

    /// <param name="producers">Producer threads.</param>
    /// <param name="workers">The contender's consumer count: exactly this many fence items are submitted.</param>
    /// <param name="items">Items per round, split between the producers.</param>
    /// <param name="produce">The submit loop (producer index, item count), calling the contender's API directly.</param>
    /// <param name="submit">Submits one fence item the way producers submit theirs.</param>
    /// <param name="describe">Describes the contender's state for hang reports.</param>
    public FencedRounds(int producers, int workers, int items, Action<int, int> produce, Action<Action> submit, Func<string> describe)
    {
        _items = items;
        _submit = submit;
        _describe = describe;
        _fence = new Barrier(workers + 1);
        Workers = workers;
        _fenceItem = () =>
        {
            if (!_fence.SignalAndWait(WorkCounter.HangTimeout))
            {
                Console.Error.WriteLine("HANG: a fence item waited 60 s for the others.");
            }
        };
        _producers = new ProducerGang(producers, items, produce);
    }

    /// <summary>Gets the number of fence items per round (one per consumer).</summary>
    public int Workers { get; }

    /// <summary>
    /// Runs one round and returns its time, allocations and ThreadPool work items per item (fence items excluded from
    /// the count). Allocations and work items are process-wide, read outside the clock, and belong to this contender:
    /// the other contender's threads are parked while this one runs.
    /// </summary>
    public RoundResult Run()
    {
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
        var workItemsBefore = ThreadPool.CompletedWorkItemCount;
        var start = Stopwatch.GetTimestamp();
        _producers.Run(_describe);
        for (var i = 0; i < Workers; i++)
        {
            _submit(_fenceItem);
        }

        if (!_fence.SignalAndWait(WorkCounter.HangTimeout))
        {
            var message = $"HANG: the fence was not reached in {WorkCounter.HangTimeout.TotalSeconds:0} s. {_describe()}";
            Console.Error.WriteLine(message);
            throw new TimeoutException(message);
        }

        var elapsed = Stopwatch.GetElapsedTime(start);
        return new RoundResult(
            elapsed.TotalNanoseconds / _items,
            (double)(GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore) / _items,
            (double)(ThreadPool.CompletedWorkItemCount - workItemsBefore) / _items);
    }

    public void Dispose()
    {
        _producers.Dispose();
        _fence.Dispose();
    }
}

/// <summary>One round of the <c>compare</c> harness, per item.</summary>
/// <param name="Nanoseconds">Wall-clock time per item.</param>
/// <param name="AllocatedBytes">Bytes allocated by the whole process per item.</param>
/// <param name="ThreadPoolItems">ThreadPool work items completed per item.</param>
internal readonly record struct RoundResult(double Nanoseconds, double AllocatedBytes, double ThreadPoolItems);
