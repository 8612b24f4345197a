namespace BoundedWork.Internal;

/// <summary>
/// Whether the executor's workers may start items: the operator's pause, its reason, when it began and when it ends.
/// </summary>
/// <remarks>
/// <para>
/// One reference, <c>_current</c>: <see langword="null"/> while not paused, the pause in force otherwise. It changes only
/// by an interlocked step (a full fence), and whoever ends a pause wakes every parked worker afterwards, so the pool's
/// lost-wake-up argument holds as for a resize: a worker that announces itself idle re-checks the source (which reads
/// this switch) after its announcement, and the resumer wakes the announced workers after its step.
/// </para>
/// <para>
/// Cost while never paused: one volatile read per claim (<see cref="IsPaused"/>), nothing else. While paused, a worker
/// claims nothing: the queue keeps accepting up to its capacity, and the items stay queued. A shutdown ends the pause's
/// effect (the source ignores the switch once shut down), so the drain and the shutdown deadline behave as without a
/// pause. A pause with an end is ended by the watchdog thread on the executor's clock, never by a timer.
/// </para>
/// </remarks>
internal sealed class PauseSwitch
{
    private PauseRecord? _current;

    /// <summary>Gets a value indicating whether a pause is in force (a volatile read).</summary>
    public bool IsPaused => Volatile.Read(ref _current) is not null;

    /// <summary>Gets the pause in force, or <see langword="null"/>.</summary>
    public PauseRecord? Current => Volatile.Read(ref _current);

    /// <summary>Puts a pause in force (replacing any other); returns the one it replaced.</summary>
    public PauseRecord? Set(PauseRecord pause) => Interlocked.Exchange(ref _current, pause);

    /// <summary>Ends the pause in force; returns it, or <see langword="null"/> when there was none.</summary>
    public PauseRecord? Clear() => Interlocked.Exchange(ref _current, null);

    /// <summary>Ends the pause in force if its end has come by <paramref name="now"/>; returns it, or <see langword="null"/>.</summary>
    public PauseRecord? ClearIfEnded(DateTimeOffset now)
    {
        var current = Volatile.Read(ref _current);
        if (current?.Until is not { } until || until > now)
        {
            return null;
        }

        return Interlocked.CompareExchange(ref _current, null, current) == current ? current : null;
    }
}

/// <summary>One pause: why, since when and, if it has one, its end.</summary>
internal sealed record PauseRecord(string Reason, DateTimeOffset Since, DateTimeOffset? Until);
