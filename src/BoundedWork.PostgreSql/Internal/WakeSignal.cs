using System.Threading.Channels;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Wakes the claim loop: any number of <see cref="Set"/> calls while it is busy leave one pending wake-up, so a signal
/// that arrives during a claim query is seen by the next wait.
/// </summary>
internal sealed class WakeSignal
{
    private readonly Channel<bool> _signals = Channel.CreateBounded<bool>(new BoundedChannelOptions(1)
    {
        FullMode = BoundedChannelFullMode.DropWrite,
        SingleReader = true,
    });

    public void Set() => _signals.Writer.TryWrite(true);

    /// <summary>Waits for a signal, the timeout or the token (without throwing); consumes the signal.</summary>
    public async Task WaitAsync(TimeSpan timeout, CancellationToken cancellationToken)
    {
        if (_signals.Reader.TryRead(out _))
        {
            return;
        }

        using var timer = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timer.CancelAfter(timeout);
        try
        {
            await _signals.Reader.ReadAsync(timer.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // The timeout (poll), or the token (the caller's loop ends).
        }
    }
}
