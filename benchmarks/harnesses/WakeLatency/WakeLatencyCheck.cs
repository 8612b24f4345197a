using System.Diagnostics;
using System.Globalization;
using System.Threading.Tasks.Dataflow;
using BoundedWork.Benchmarks.Contenders;
using BoundedWork.Benchmarks.Infrastructure;

namespace BoundedWork.Benchmarks.WakeLatency;

/// <summary>
/// The wake-latency harness (<c>[samples]</c>, 400 by default): latency of one item submitted to a contender whose
/// single consumer has gone idle (parked), measured with a stopwatch from submit until the submitter sees the item finished.
/// </summary>
/// <remarks>
/// The BenchmarkDotNet suite's <c>LatencyBenchmarks</c> submits items back to back, so a consumer that spins before
/// parking (BoundedExecutor's workers do) is still awake when the next item arrives: that is "hot" latency. This
/// harness sleeps 5 ms between items so every consumer has parked, which is the case of sparse traffic.
/// </remarks>
internal static class WakeLatencyCheck
{
    private const string Usage = "dotnet run -c Release --project benchmarks/harnesses/WakeLatency -- [samples]";

    /// <summary>The queue bound of every contender, as in the BenchmarkDotNet suite.</summary>
    private const int Capacity = 1024;

    private static readonly TimeSpan Gap = TimeSpan.FromMilliseconds(5);

    public static int Run(IReadOnlyList<string> args)
    {
        var samples = (int)HarnessProgram.Number(args, 0, "samples", fallback: 400, minimum: 1, Usage);
        Console.WriteLine($"Wake-from-idle latency, 1 consumer, {samples} samples {Gap.TotalMilliseconds:0} ms apart (µs):");
        Console.WriteLine($"| Contender | Median | P90 | P99 | Max |");
        Console.WriteLine($"| --- | ---: | ---: | ---: | ---: |");

        using var counter = new WorkCounter();
        Func<string> describe = static () => string.Empty;

        using (var channel = new ChannelWorkerPool(1, Capacity))
        {
            Report("RawChannel", Measure(samples, () =>
            {
                counter.Reset(1);
                channel.Submit(counter.Work);
                counter.Wait(describe);
            }));
        }

        var executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "wake-check",
            WorkerCount = 1,
            QueueCapacity = Capacity,
            RejectionPolicy = RejectionPolicy.Wait,
            FlowExecutionContext = false,
        });
        Report("Executor_Execute", Measure(samples, () =>
        {
            counter.Reset(1);
            executor.Execute(counter.Work);
            counter.Wait(describe);
        }));
        Report("Executor_RunAsync_Wait", Measure(samples, () =>
        {
            counter.Reset(1);
            executor.RunAsync(counter.Work).Wait();
        }));
        executor.ShutdownAsync(TimeSpan.FromSeconds(10)).GetAwaiter().GetResult();

        Report("ThreadPool_UnsafeQueue", Measure(samples, () =>
        {
            counter.Reset(1);
            ThreadPool.UnsafeQueueUserWorkItem(static c => c.Signal(), counter, preferLocal: false);
            counter.Wait(describe);
        }));

        var block = new ActionBlock<Action>(static action => action(), new ExecutionDataflowBlockOptions
        {
            MaxDegreeOfParallelism = 1,
            BoundedCapacity = Capacity,
        });
        Report("Dataflow_ActionBlock", Measure(samples, () =>
        {
            counter.Reset(1);
            block.Post(counter.Work);
            counter.Wait(describe);
        }));
        block.Complete();

        using (var limiter = new LimiterGate(1, Capacity, counter.Work))
        {
            Report("Limiter_ConcurrencyLimiter", Measure(samples, () =>
            {
                counter.Reset(1);
                limiter.Submit();
                counter.Wait(describe);
            }));
        }

        return 0;
    }

    private static double[] Measure(int samples, Action roundTrip)
    {
        // Warm up (JIT, thread creation), then sample with a gap long enough for the consumer to park.
        for (var i = 0; i < 20; i++)
        {
            roundTrip();
        }

        var results = new double[samples];
        for (var i = 0; i < samples; i++)
        {
            Thread.Sleep(Gap);
            var start = Stopwatch.GetTimestamp();
            roundTrip();
            results[i] = Stopwatch.GetElapsedTime(start).TotalMicroseconds;
        }

        Array.Sort(results);
        return results;
    }

    private static void Report(string name, double[] sorted)
    {
        static double At(double[] values, double quantile) => values[(int)Math.Min(values.Length - 1, Math.Round(quantile * (values.Length - 1)))];
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"| {name} | {At(sorted, 0.5):0.0} | {At(sorted, 0.9):0.0} | {At(sorted, 0.99):0.0} | {sorted[^1]:0.0} |"));
    }
}
