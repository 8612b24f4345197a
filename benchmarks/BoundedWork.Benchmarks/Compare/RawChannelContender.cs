using BoundedWork.Benchmarks.Contenders;

namespace BoundedWork.Benchmarks.Compare;

/// <summary>
/// The raw baseline of the throughput suite (<see cref="ChannelWorkerPool"/>): a bounded <c>Channel&lt;Action&gt;</c>
/// of 1024 with <c>FullMode = Wait</c>, drained by W dedicated threads; a producer that finds it full blocks on
/// <c>WriteAsync(...).AsTask().Wait()</c>.
/// </summary>
internal sealed class RawChannelContender : ICompareContender
{
    private static readonly Action s_empty = static () => { };

    private readonly ChannelWorkerPool _pool;
    private readonly FencedRounds _rounds;

    public RawChannelContender(int producers, int workers, int items)
    {
        _pool = new ChannelWorkerPool(workers, CompareHarness.Capacity);
        var pool = _pool;
        _rounds = new FencedRounds(
            producers,
            workers,
            items,
            (_, count) =>
            {
                for (var i = 0; i < count; i++)
                {
                    pool.Submit(s_empty);
                }
            },
            pool.Submit,
            () => $"Channel: {pool.Count} queued.");
    }

    public string Name => "raw-channel";

    public RoundResult RunRound()
    {
        var result = _rounds.Run();
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
