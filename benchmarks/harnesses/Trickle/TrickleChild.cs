using System.Globalization;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks.Trickle;

/// <summary>
/// <c>--child NAME RATE WARMUP SECONDS</c>: one row of the trickle benchmark, in a process of its own so that
/// the process CPU clock sees only this contender. A dedicated pacer thread submits items at RATE per second for
/// WARMUP + SECONDS seconds without a break; the CPU clock is read when the first measured item is due and again
/// when the schedule has ended and every item has run. Prints one tab-separated <c>RESULT</c> line.
/// </summary>
internal static class TrickleChild
{
    /// <summary>The first argument that makes the trickle program run one row instead of the harness.</summary>
    public const string Verb = "--child";

    public static int Run(ReadOnlySpan<string> args)
    {
        if (args.Length != 4)
        {
            Console.Error.WriteLine($"Usage: {Verb} NAME RATE WARMUP-SECONDS SECONDS");
            return 2;
        }

        var name = args[0];
        var rate = double.Parse(args[1], CultureInfo.InvariantCulture);
        var warmupSeconds = double.Parse(args[2], CultureInfo.InvariantCulture);
        var seconds = double.Parse(args[3], CultureInfo.InvariantCulture);
        var warmupItems = (int)Math.Ceiling(rate * warmupSeconds);
        var measuredItems = (int)Math.Round(rate * seconds);
        var total = warmupItems + measuredItems;

        using var recorder = new TrickleRecorder(total);
        using var contender = TrickleContender.Create(name);

        // Everything is allocated; start the window with a clean heap.
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();

        Measurement? measurement = null;
        Exception? failure = null;
        var pacerThread = new Thread(() =>
        {
            try
            {
                RequestContext.Enter(); // the pacer submits as request code would, with a request's ExecutionContext
                measurement = Pace(contender, recorder, rate, warmupItems, total);
            }
            catch (Exception ex)
            {
                failure = ex;
            }
        })
        {
            Name = "trickle-pacer",
            IsBackground = true,
        };
        pacerThread.Start();
        pacerThread.Join();
        if (failure is not null || measurement is null)
        {
            Console.Error.WriteLine($"{name} at {rate}/s failed: {failure}");
            return 1;
        }

        contender.Verify(total);
        var latencies = recorder.SortedLatencies(warmupItems);
        var m = measurement.Value;
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"RESULT\t{name}\t{rate}\t{measuredItems}\t{m.WallSeconds:0.000000}\t{m.CpuSeconds:0.000000}\t{Quantile(latencies, 0.5):0.0}\t{Quantile(latencies, 0.99):0.0}\t{latencies[^1]:0.0}\t{m.LagP99Microseconds:0.0}\t{m.Method}"));
        return 0;
    }

    private static Measurement Pace(TrickleContender contender, TrickleRecorder recorder, double rate, int warmupItems, int total)
    {
        // Start 20 ms from now, so the first deadlines are not already late.
        var pacer = new Pacer(rate, NativeClock.NowNanoseconds() + 20_000_000);
        var lags = new long[total - warmupItems];
        var items = recorder.Items;
        var cpuStart = TimeSpan.Zero;
        var wallStart = 0L;
        for (var k = 0; k < total; k++)
        {
            var lag = pacer.WaitFor(k);
            if (k == warmupItems)
            {
                cpuStart = NativeClock.ProcessCpuTime();
                wallStart = NativeClock.NowNanoseconds();
            }

            if (k >= warmupItems)
            {
                lags[k - warmupItems] = lag;
            }

            recorder.MarkSubmitted(k);
            contender.Submit(items[k]);
        }

        // The window covers whole periods: up to when the item after the last would be due, or later if the last
        // items are still running.
        pacer.WaitFor(total);
        if (!recorder.WaitAll(TimeSpan.FromSeconds(60)))
        {
            throw new TimeoutException($"HANG: {recorder.Remaining} item(s) had not run 60 s after the last submit. {contender.Describe()}");
        }

        var cpu = NativeClock.ProcessCpuTime() - cpuStart;
        var wall = NativeClock.NowNanoseconds() - wallStart;
        Array.Sort(lags);
        return new Measurement(wall / 1e9, cpu.TotalSeconds, lags[(int)((lags.Length - 1) * 0.99)] / 1e3, pacer.Method);
    }

    private static double Quantile(double[] sorted, double quantile) =>
        sorted[(int)Math.Min(sorted.Length - 1, Math.Round(quantile * (sorted.Length - 1)))];

    private readonly record struct Measurement(double WallSeconds, double CpuSeconds, double LagP99Microseconds, string Method);
}
