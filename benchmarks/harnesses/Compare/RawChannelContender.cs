using BoundedWork.Benchmarks.Contenders;

namespace BoundedWork.Benchmarks.Compare;

/// <summary>
/// The raw baseline of the throughput suite (<see cref="ChannelWorkerPool"/>): a bounded <c>Channel&lt;Action&gt;</c>
/// of 1024 with <c>FullMode = Wait</c>, drained by W dedicated threads; a producer that finds it full blocks on
/// <c>WriteAsync(...).AsTask().Wait()</c>.
/// </summary>
internal sealed class RawChannelContender : ICompareContender
{
    private readonly ChannelWorkerPool _pool;
    private readonly FencedRounds _rounds;
    private readonly CompareItem _item;
    private readonly int _items;

    public RawChannelContender(int producers, int workers, int items, string item)
    {
        _items = items;
        _item = new CompareItem(item);
        _pool = new ChannelWorkerPool(workers, CompareHarness.Capacity);
        var pool = _pool;
        var work = _item.Work;
        _rounds = new FencedRounds(
            producers,
            workers,
            items,
            (_, count) =>
            {
                for (var i = 0; i < count; i++)
                {
                    pool.Submit(work);
                }
            },
            pool.Submit,
            () => $"Channel: {pool.Count} queued.");
    }

    public string Name => "raw-channel";

    public RoundResult RunRound()
    {
        var countBefore = _item.Count;
        var result = _rounds.Run();
        _item.CheckRound(countBefore, _items, Name);
        if (_pool.Count != 0)
        {
            throw new InvalidOperationException($"The channel still holds {_pool.Count} item(s) after the fence.");
        }

        return result;
    }

    public void Dispose()
    {
        _rounds.Dispose();
        _pool.Dispose();
    }
}
