namespace BoundedWork.Internal;

/// <summary>
/// One worker's park/unpark handshake: a single permit guarded by a monitor. <see cref="Unpark"/> before
/// <see cref="Park"/> leaves the permit, so the park returns at once: no wake-up is ever lost. Parking is a kernel
/// wait with no spinning (idle workers must not burn CPU) and needs no ThreadPool thread; unparking is a monitor
/// pulse from the waking thread.
/// </summary>
internal sealed class Parker
{
    private readonly object _sync = new();
    private bool _permit;

    /// <summary>Blocks until a permit is available, then consumes it. <see cref="Thread.Interrupt"/> does not end the wait.</summary>
    public void Park()
    {
        while (true)
        {
            try
            {
                lock (_sync)
                {
                    while (!_permit)
                    {
                        Monitor.Wait(_sync);
                    }

                    _permit = false;
                }

                break;
            }
            catch (ThreadInterruptedException)
            {
                // Thread.Interrupt on a parked worker must neither kill it nor wake it without a permit (the idle
                // list would then be stale): absorb it and keep waiting. Worker threads belong to the executor.
            }
        }
    }

    /// <summary>Makes the permit available and wakes the parked thread, if any.</summary>
    public void Unpark()
    {
        lock (_sync)
        {
            _permit = true;
            Monitor.Pulse(_sync);
        }
    }
}
