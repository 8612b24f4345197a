using System.Threading.Channels;

namespace BoundedWork.Internal;

/// <summary>
/// A <see cref="ChannelWriter{T}"/> whose items run <c>handler(item)</c> on the executor: existing channel-based
/// producers plug into an executor unchanged. <c>WriteAsync</c> follows the executor's rejection policy;
/// <c>TryWrite</c> queues the item or, as with any channel, leaves it with the producer (uncounted) when there is no
/// room; <c>WaitToWriteAsync</c> waits for room under every policy, so the usual
/// <c>while (await WaitToWriteAsync()) if (TryWrite(x)) break;</c> loop neither spins nor counts rejections.
/// Completing the writer stops this writer only, never the executor.
/// </summary>
internal sealed class ExecutorChannelWriter<T>(BoundedExecutor executor, Action<T> handler) : ChannelWriter<T>
{
    private int _completed;

    private bool IsCompleted => Volatile.Read(ref _completed) != 0;

    public override bool TryComplete(Exception? error = null) => Interlocked.Exchange(ref _completed, 1) == 0;

    public override bool TryWrite(T item) => !IsCompleted && executor.TryQueue(handler, item);

    public override ValueTask<bool> WaitToWriteAsync(CancellationToken cancellationToken = default) =>
        IsCompleted ? new ValueTask<bool>(false) : executor.WaitForRoomAsync(cancellationToken);

    public override ValueTask WriteAsync(T item, CancellationToken cancellationToken = default)
    {
        if (IsCompleted)
        {
            return ValueTask.FromException(new ChannelClosedException());
        }

        var written = executor.ExecuteAsync(handler, item, cancellationToken);
        return written.IsCompletedSuccessfully ? written : AwaitAsync(written);
    }

    private static async ValueTask AwaitAsync(ValueTask written)
    {
        try
        {
            await written.ConfigureAwait(false);
        }
        catch (RejectedExecutionException ex) when (ex.Reason == RejectionReason.ShutDown)
        {
            // To a channel-based producer, a shut-down executor is a closed channel.
            throw new ChannelClosedException(ex.Message, ex);
        }
    }
}
