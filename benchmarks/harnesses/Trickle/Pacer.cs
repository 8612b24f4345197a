namespace BoundedWork.Benchmarks.Trickle;

/// <summary>
/// Releases items at a fixed rate from one dedicated thread: item <c>k</c> is due at <c>start + k / rate</c>, an
/// absolute schedule, so a late wake-up never shifts later items and the average rate is exact.
/// </summary>
/// <remarks>
/// On Linux the pacer sleeps in the kernel until each deadline (<c>clock_nanosleep</c> with <c>TIMER_ABSTIME</c> on
/// <c>CLOCK_MONOTONIC</c>, timer slack lowered to 1 µs), so it costs one wake-up per item and burns no CPU while
/// waiting; its own cost is in the idle baseline, which paces the same way. If a wake-up comes late, the overdue
/// item goes at once (the schedule catches up); the lag is recorded and reported. Elsewhere it sleeps with
/// <see cref="Thread.Sleep(int)"/> until 2 ms before the deadline and spins the rest, which costs CPU (the same in the
/// baseline and every contender, so the net figures stay comparable but noisier).
/// </remarks>
internal sealed class Pacer
{
    private const long SpinWindowNanoseconds = 2_000_000;

    private readonly long _startNanoseconds;
    private readonly double _periodNanoseconds;

    public Pacer(double itemsPerSecond, long startNanoseconds)
    {
        _periodNanoseconds = 1e9 / itemsPerSecond;
        _startNanoseconds = startNanoseconds;
        Method = NativeClock.TryReduceTimerSlack()
            ? "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME), timer slack 1 µs"
            : "Thread.Sleep to 2 ms before each deadline, then spin";
    }

    /// <summary>Gets how the pacer waits (printed with the results).</summary>
    public string Method { get; }

    /// <summary>Gets the deadline of item <paramref name="index"/> in monotonic nanoseconds.</summary>
    public long DeadlineOf(long index) => _startNanoseconds + (long)(index * _periodNanoseconds);

    /// <summary>Waits until item <paramref name="index"/> is due; returns how late the wake-up was, in nanoseconds.</summary>
    public long WaitFor(long index)
    {
        var deadline = DeadlineOf(index);
        if (!NativeClock.SleepUntil(deadline))
        {
            SleepThenSpin(deadline);
        }

        return NativeClock.NowNanoseconds() - deadline;
    }

    private static void SleepThenSpin(long deadline)
    {
        var remaining = deadline - NativeClock.NowNanoseconds();
        if (remaining > SpinWindowNanoseconds)
        {
            Thread.Sleep(TimeSpan.FromTicks((remaining - SpinWindowNanoseconds) / 100));
        }

        while (NativeClock.NowNanoseconds() < deadline)
        {
            Thread.SpinWait(20);
        }
    }
}
