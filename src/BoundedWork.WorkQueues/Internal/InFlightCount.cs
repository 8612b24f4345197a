namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Counts a work queue's accepted items that have no outcome yet, and tells the stopping host when the count reaches
/// zero.
/// </summary>
/// <remarks>
/// <para>
/// The handshake: the stopper publishes its signal (<see cref="WhenIdle"/>) and then reads the count; the last item to
/// finish (<see cref="Decrement"/>) lowers the count and then reads the signal. Each side writes one location and then
/// reads the other (Dekker's pattern), so a wake-up is lost only if both reads miss the other side's write: the
/// stopper reads a count above zero and the finisher reads no signal. Then nobody completes the signal and the
/// stopper waits out its whole timeout.
/// </para>
/// <para>
/// A volatile write followed by a volatile read does not prevent that: a release store and a later acquire load may
/// be reordered (the store waits in the core's store buffer while the load runs ahead, even on x64). So both writes
/// here are interlocked operations, each a full fence: <see cref="Interlocked.CompareExchange{T}(ref T, T, T)"/> for the
/// signal and <see cref="Interlocked.Decrement(ref int)"/> for the count. With a full fence between each side's write
/// and its read, the two writes are ordered one before the other, and the side whose write came second reads the
/// other's: either the stopper reads zero and completes the signal itself, or the finisher reads the signal and
/// completes it. Both may; completing twice is harmless (<see cref="TaskCompletionSource.TrySetResult"/>).
/// </para>
/// </remarks>
internal sealed class InFlightCount
{
    private int _count;
    private TaskCompletionSource? _idle;

    /// <summary>Gets the number of items counted in and not yet out.</summary>
    public int Value => Volatile.Read(ref _count);

    public void Increment() => Interlocked.Increment(ref _count);

    /// <summary>Counts one item out; the last one completes the signal if a stopper waits.</summary>
    public void Decrement()
    {
        if (Interlocked.Decrement(ref _count) == 0 && Volatile.Read(ref _idle) is { } idle)
        {
            idle.TrySetResult();
        }
    }

    /// <summary>Returns a task that completes once the count is zero (at once if it is); every call gets the same task.</summary>
    public Task WhenIdle()
    {
        var idle = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        idle = Interlocked.CompareExchange(ref _idle, idle, null) ?? idle;
        if (Volatile.Read(ref _count) == 0)
        {
            idle.TrySetResult();
        }

        return idle.Task;
    }
}
