using System.Diagnostics;
using System.Globalization;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks.IdleCpu;

/// <summary>
/// The idle-CPU harness (<c>[seconds]</c>, 2 by default): checks that an idle executor costs no CPU. Parked workers
/// must block, not spin or poll. Measures the process's CPU time over a quiet window with no executor (the control), then again with
/// an executor of 4 workers that has run some work and gone idle, and prints both.
/// </summary>
internal static class IdleCpuCheck
{
    private const string Usage = "dotnet run -c Release --project benchmarks/harnesses/IdleCpu -- [seconds]";

    /// <summary>Idle CPU above the control by more than this fails the check (5% of one core over 2 s).</summary>
    private static readonly TimeSpan Tolerance = TimeSpan.FromMilliseconds(100);

    public static int Run(IReadOnlyList<string> args)
    {
        var seconds = HarnessProgram.Number(args, 0, "seconds", fallback: 2.0, minimum: 0.1, Usage);
        var window = TimeSpan.FromSeconds(seconds);

        // Let start-up work (JIT, tiering, GC) settle before the control window.
        Thread.Sleep(500);
        var control = MeasureCpu(window);
        Console.WriteLine($"Control (no executor), {seconds:0.#} s idle: {control.TotalMilliseconds:0.0} ms CPU");

        var executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "idle-check",
            WorkerCount = 4,
            QueueCapacity = 1024,
            RejectionPolicy = RejectionPolicy.Wait,
        });
        try
        {
            // Run some work so every worker has claimed, spun and parked at least once.
            const int items = 10_000;
            using var done = new CountdownEvent(items);
            for (var i = 0; i < items; i++)
            {
                executor.Execute(static d => d.Signal(), done);
            }

            if (!done.Wait(TimeSpan.FromSeconds(30)))
            {
                Console.Error.WriteLine($"FAIL: the warm-up items did not finish in 30 s. {executor.GetStatistics()}");
                return 1;
            }

            Thread.Sleep(500);
            var before = executor.GetStatistics();
            var idle = MeasureCpu(window);
            var after = executor.GetStatistics();
            Console.WriteLine($"Executor with {after.LiveWorkerCount} idle workers, {seconds:0.#} s idle: {idle.TotalMilliseconds:0.0} ms CPU");
            Console.WriteLine($"  busy workers {after.BusyWorkerCount}, queue {after.QueueLength}, completed {after.Completed} (before window: {before.Completed})");

            var excess = idle - control;
            var passed = excess <= Tolerance;
            Console.WriteLine(passed
                ? $"PASS: idle executor used {excess.TotalMilliseconds:+0.0;-0.0;0.0} ms CPU compared with the control (tolerance {Tolerance.TotalMilliseconds:0} ms)."
                : $"FAIL: idle executor used {excess.TotalMilliseconds:+0.0;-0.0;0.0} ms CPU compared with the control (tolerance {Tolerance.TotalMilliseconds:0} ms): workers are spinning or polling.");
            return passed ? 0 : 1;
        }
        finally
        {
            executor.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult();
        }
    }

    private static TimeSpan MeasureCpu(TimeSpan window)
    {
        using var process = Process.GetCurrentProcess();
        var start = process.TotalProcessorTime;
        Thread.Sleep(window);
        process.Refresh();
        return process.TotalProcessorTime - start;
    }
}
