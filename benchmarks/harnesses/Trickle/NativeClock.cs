using System.Diagnostics;
using System.Runtime.InteropServices;

namespace BoundedWork.Benchmarks.Trickle;

/// <summary>
/// The clocks of the trickle benchmark. On Linux: <c>CLOCK_MONOTONIC</c> for pacing, an absolute
/// <c>clock_nanosleep</c> to wait for a deadline, and <c>CLOCK_PROCESS_CPUTIME_ID</c> for the process's CPU time
/// (nanosecond resolution; <see cref="Process.TotalProcessorTime"/> reads <c>/proc</c> in 10 ms ticks there, too
/// coarse for microseconds per item). Elsewhere: <see cref="Stopwatch"/> and <see cref="Process.TotalProcessorTime"/>,
/// and the pacer sleeps then spins (see <see cref="Pacer"/>).
/// </summary>
internal static partial class NativeClock
{
    private const int ClockMonotonic = 1;
    private const int ClockProcessCpuTime = 2;
    private const int TimerAbsolute = 1;
    private const int Interrupted = 4; // EINTR
    private const int SetTimerSlack = 29; // PR_SET_TIMERSLACK

    /// <summary>Gets whether the precise Linux clocks are used.</summary>
    public static bool IsPrecise { get; } = OperatingSystem.IsLinux() && Environment.Is64BitProcess;

    /// <summary>Gets the monotonic clock in nanoseconds (the pacer's time base).</summary>
    public static long NowNanoseconds()
    {
        if (IsPrecise && GetTime(ClockMonotonic, out var now) == 0)
        {
            return (now.Seconds * 1_000_000_000L) + now.Nanoseconds;
        }

        return (long)(Stopwatch.GetTimestamp() * (1e9 / Stopwatch.Frequency));
    }

    /// <summary>Gets the CPU time used so far by every thread of this process (user + kernel).</summary>
    public static TimeSpan ProcessCpuTime()
    {
        if (IsPrecise && GetTime(ClockProcessCpuTime, out var cpu) == 0)
        {
            return TimeSpan.FromTicks((cpu.Seconds * TimeSpan.TicksPerSecond) + (cpu.Nanoseconds / 100));
        }

        using var process = Process.GetCurrentProcess();
        return process.TotalProcessorTime;
    }

    /// <summary>
    /// Sleeps in the kernel until the monotonic clock reaches <paramref name="deadlineNanoseconds"/> (returns at once if
    /// it has passed). Absolute deadlines do not drift: oversleeping one period does not delay the next deadline.
    /// </summary>
    /// <returns><see langword="false"/> if the precise sleep is not available here (the caller falls back).</returns>
    public static bool SleepUntil(long deadlineNanoseconds)
    {
        if (!IsPrecise)
        {
            return false;
        }

        var request = new TimeSpec { Seconds = deadlineNanoseconds / 1_000_000_000L, Nanoseconds = deadlineNanoseconds % 1_000_000_000L };
        int result;
        do
        {
            result = SleepAbsolute(ClockMonotonic, TimerAbsolute, in request, IntPtr.Zero);
        }
        while (result == Interrupted);

        return result == 0;
    }

    /// <summary>
    /// Lowers the calling thread's timer slack (by default the kernel may delay a sleeper's wake-up by up to 50 µs to
    /// batch timers) to 1 µs, so a deadline of 50 µs from now (20,000 items/s) is kept. Linux only; a no-op elsewhere.
    /// </summary>
    public static bool TryReduceTimerSlack() => IsPrecise && ProcessControl(SetTimerSlack, 1_000, 0, 0, 0) == 0;

    [LibraryImport("libc", EntryPoint = "clock_gettime")]
    private static partial int GetTime(int clock, out TimeSpec time);

    [LibraryImport("libc", EntryPoint = "clock_nanosleep")]
    private static partial int SleepAbsolute(int clock, int flags, in TimeSpec request, IntPtr remaining);

    [LibraryImport("libc", EntryPoint = "prctl")]
    private static partial int ProcessControl(int option, nuint argument2, nuint argument3, nuint argument4, nuint argument5);

    [StructLayout(LayoutKind.Sequential)]
    private struct TimeSpec
    {
        public long Seconds;
        public long Nanoseconds;
    }
}
