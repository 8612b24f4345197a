using BoundedWork.Diagnostics.Internal;

namespace BoundedWork.Cli.Tests;

/// <summary>The doctor's reading of counters and stacks, on synthetic samples; names made readable.</summary>
public sealed class DiagnosisTests
{
    [Theory]
    [InlineData("PaymentCallbacks.Server.SlowDependency.Call(class PaymentCallbacks.Server.PaymentCallback)", "SlowDependency.Call")]
    [InlineData("PaymentCallbacks.Server.CallbackServer+<>c.<MapEndpoints>b__6_2(class PaymentCallbacks.Server.PaymentCallback)", "CallbackServer.MapEndpoints (lambda)")]
    [InlineData("Program+<>c.<<Main>$>b__0_7()", "Program.Main (lambda)")]
    [InlineData("Shop.Orders+<>c__DisplayClass3_0.<Handle>b__1()", "Orders.Handle (lambda)")]
    [InlineData("Shop.Orders+<HandleAsync>d__4.MoveNext()", "Orders.HandleAsync (async)")]
    [InlineData("System.Threading.Thread.Sleep(int32)", "Thread.Sleep")]
    [InlineData("Main", "Main")]
    public void Readable_CompilerNames_BecomeTypeAndMethod(string method, string expected) =>
        Assert.Equal(expected, Diagnosis.Readable(method));

    private static readonly Frame[] s_poolBottom =
    [
        new("System.Threading.ThreadPoolWorkQueue.Dispatch()", "System.Private.CoreLib"),
        new("System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart()", "System.Private.CoreLib"),
        new("System.Threading.Thread.StartCallback()", "System.Private.CoreLib"),
    ];

    private static readonly Frame[] s_blocked =
    [
        new("System.Threading.Thread.Sleep(int32)", "System.Private.CoreLib"),
        new("Crm.LegacyCrm.GetCustomer(int32)", "Crm"),
        new("Shop.CallbackEndpoint.Handle(class Shop.Callback)", "Shop"),
        new("Microsoft.AspNetCore.Routing.EndpointMiddleware.Invoke(class Microsoft.AspNetCore.Http.HttpContext)", "Microsoft.AspNetCore.Routing"),
        .. s_poolBottom,
    ];

    private static readonly Frame[] s_computing =
    [
        new("Shop.Prices.Compute(int32)", "Shop"),
        .. s_poolBottom,
    ];

    private static readonly Frame[] s_idle =
    [
        new("System.Threading.LowLevelLifoSemaphore.WaitForSignal(int32)", "System.Private.CoreLib"),
        new("System.Threading.LowLevelLifoSemaphore.Wait(int32,bool)", "System.Private.CoreLib"),
        new("System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart()", "System.Private.CoreLib"),
        new("System.Threading.Thread.StartCallback()", "System.Private.CoreLib"),
    ];

    [Fact]
    public void Diagnose_QueueInEveryReadingAndMostPoolThreadsBlocked_StarvedNamingTheUserFrames()
    {
        var report = Diagnosis.Diagnose(42, Pool(queue: [40, 80, 120], threads: [8, 9, 10]), Threads((s_blocked, 8), (s_idle, 1), (s_computing, 1)));

        Assert.True(report.Starved);
        Assert.Equal((10, 8, 1, 1), (report.PoolThreads, report.BlockedPoolThreads, report.RunningPoolThreads, report.IdlePoolThreads));
        var site = Assert.Single(report.BlockingSites);
        Assert.Equal(new BlockingSite("LegacyCrm.GetCustomer", "CallbackEndpoint.Handle", "Thread.Sleep", 8), site);
        Assert.StartsWith("STARVED: 8 of 10 pool threads are blocked in LegacyCrm.GetCustomer, called from CallbackEndpoint.Handle", report.Verdict, StringComparison.Ordinal);
        Assert.Contains(report.Advice, a => a.Contains("AddBoundedExecutor", StringComparison.Ordinal));
    }

    [Fact]
    public void Diagnose_QueueWhileThePoolParksMostThreads_StarvedJudgedOnTheThreadsRunningWork()
    {
        // Seen on the sample: 22 pool threads, 19 parked by the pool, 3 blocked, 140+ items queued in every reading.
        var report = Diagnosis.Diagnose(42, Pool(queue: [142, 146, 144], threads: [22, 22, 22]), Threads((s_blocked, 3), (s_idle, 19)));

        Assert.True(report.Starved, report.Verdict);
        Assert.Contains(report.Evidence, e => e.StartsWith("Idle pool threads while work was queued: 19", StringComparison.Ordinal));
    }

    [Fact]
    public void Diagnose_QueueButThreadsComputing_BusyNotStarved()
    {
        var report = Diagnosis.Diagnose(42, Pool(queue: [40, 80, 120], threads: [2, 2, 2]), Threads((s_computing, 2), (s_blocked, 0)));

        Assert.False(report.Starved);
        Assert.Contains("busy rather than blocked", report.Verdict, StringComparison.Ordinal);
    }

    [Fact]
    public void Diagnose_BlockedThreadsButTheQueueEmptiesSometimes_NotStarved()
    {
        var report = Diagnosis.Diagnose(42, Pool(queue: [3, 0, 2], threads: [4, 4, 4]), Threads((s_blocked, 4)));

        Assert.False(report.Starved);
        Assert.Equal(4, report.BlockedPoolThreads);
        Assert.Contains(report.Evidence, e => e.Contains("empty in 1 of 3 readings", StringComparison.Ordinal));
    }

    [Fact]
    public void Diagnose_ExecutorMeters_ReportedWithResizeAdviceWhenSaturated()
    {
        var at = DateTime.UtcNow;
        List<CounterSample> counters =
        [
            .. Pool(queue: [0, 0], threads: [2, 2]),
            new(at, "boundedwork.queue.length", "payments", 1500),
            new(at, "boundedwork.workers", "payments", 8),
            new(at, "boundedwork.workers.busy", "payments", 8),
        ];

        var report = Diagnosis.Diagnose(42, counters, Threads((s_idle, 2)));

        Assert.False(report.Starved);
        Assert.Equal(new ExecutorReading("payments", 1500, 8, 8), Assert.Single(report.Executors));
        Assert.Contains(report.Advice, a => a.Contains("bw resize payments", StringComparison.Ordinal));
    }

    [Fact]
    public void Diagnose_OneItemQueued_SaysOneItem()
    {
        var at = DateTime.UtcNow;
        List<CounterSample> counters =
        [
            .. Pool(queue: [0, 0], threads: [2, 2]),
            new(at, "boundedwork.queue.length", "payments", 1),
            new(at, "boundedwork.workers", "payments", 8),
            new(at, "boundedwork.workers.busy", "payments", 8),
        ];

        var report = Diagnosis.Diagnose(42, counters, Threads((s_idle, 2)));

        Assert.Contains(report.Advice, a => a.Contains("all 8 workers busy and 1 item queued", StringComparison.Ordinal));
    }

    private static List<CounterSample> Pool(double[] queue, double[] threads)
    {
        var start = DateTime.UtcNow;
        return
        [
            .. queue.Select((q, i) => new CounterSample(start.AddSeconds(i), "threadpool-queue-length", null, q)),
            .. threads.Select((t, i) => new CounterSample(start.AddSeconds(i), "threadpool-thread-count", null, t)),
        ];
    }

    /// <summary>Three samples per thread, every thread in the given stack; thread ids numbered in order.</summary>
    private static List<ThreadSample> Threads(params (Frame[] Stack, int Count)[] groups)
    {
        var samples = new List<ThreadSample>();
        var id = 100;
        foreach (var (stack, count) in groups)
        {
            for (var t = 0; t < count; t++, id++)
            {
                samples.AddRange(Enumerable.Range(0, 3).Select(_ => new ThreadSample(id, stack)));
            }
        }

        return samples;
    }
}
