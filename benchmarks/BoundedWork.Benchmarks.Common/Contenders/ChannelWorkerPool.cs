using System.Threading.Channels;

namespace BoundedWork.Benchmarks.Contenders;

/// <summary>
/// The baseline: what people write by hand. A bounded <see cref="Channel{T}"/> of <see cref="Action"/>
/// (FullMode = Wait) drained by N dedicated threads with the usual synchronous loop.
/// </summary>
/// <remarks>
/// The loop blocks on <c>WaitToReadAsync().AsTask()</c>, so a parked reader is woken through a ThreadPool
/// continuation (the channel's default <c>AllowSynchronousContinuations = false</c>) — unlike BoundedExecutor,
/// this baseline is not starvation-proof. It is the speed reference, not the design reference.
/// </remarks>
public sealed class ChannelWorkerPool : IDisposable
{
    private readonly Channel<Action> _channel;
    private readonly Thread[] _threads;

    public ChannelWorkerPool(int workers, int capacity)
    {
        _channel = Channel.CreateBounded<Action>(new BoundedChannelOptions(capacity)
        {
            FullMode = BoundedChannelFullMode.Wait,
            SingleReader = workers == 1,
            SingleWriter = false,
        });
        _threads = new Thread[workers];
        for (var i = 0; i < workers; i++)
        {
            _threads[i] = new Thread(static state => WorkerLoop((ChannelReader<Action>)state!))
            {
                IsBackground = true,
                Name = $"channel-worker#{i}",
            };
            _threads[i].Start(_channel.Reader);
        }
    }

    /// <summary>Gets the number of queued items (for hang reports).</summary>
    public int Count => _channel.Reader.Count;

    /// <summary>Writes without waiting if there is room; otherwise blocks until there is.</summary>
    public void Submit(Action action)
    {
        if (!_channel.Writer.TryWrite(action))
        {
            _channel.Writer.WriteAsync(action).AsTask().Wait();
        }
    }

    public void Dispose()
    {
        _channel.Writer.TryComplete();
        foreach (var thread in _threads)
        {
            thread.Join(TimeSpan.FromSeconds(10));
        }
    }

    private static void WorkerLoop(ChannelReader<Action> reader)
    {
        while (reader.WaitToReadAsync().AsTask().GetAwaiter().GetResult())
        {
            while (reader.TryRead(out var action))
            {
                action();
            }
        }
    }
}
