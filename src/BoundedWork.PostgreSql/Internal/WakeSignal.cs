namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Wakes the claim loop: any number of <see cref="Set"/> calls while it is busy leave one pending wake-up, so a signal
/// that arrives during a claim query is seen by the next wait. A kernel event: waking needs no ThreadPool thread.
/// </summary>
internal sealed class WakeSignal : IDisposable
{
    private readonly AutoResetEvent _event = new(false);

    public void Set() => _event.Set();

    /// <summary>Waits for a signal, the timeout or the token (without throwing); consumes the signal.</summary>
    public void Wait(TimeSpan timeout, CancellationToken cancellationToken) =>
        WaitHandle.WaitAny([_event, cancellationToken.WaitHandle], timeout);

    public void Dispose() => _event.Dispose();
}
