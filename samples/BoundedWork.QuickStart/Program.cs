using System.Diagnostics;
using BoundedWork;

// BoundedWork quick start: blocking "legacy" calls run on an executor's own threads, so the shared
// ThreadPool stays free for everything else. Run with: dotnet run --project samples/BoundedWork.QuickStart
const int BlockingCalls = 48;
var blockingCall = TimeSpan.FromMilliseconds(250);

await using var executor = new BoundedExecutor(new BoundedExecutorOptions
{
    Name = "legacy",
    WorkerCount = 8,
    MaxWorkerCount = 32,
    QueueCapacity = 256,
    RejectionPolicy = RejectionPolicy.Wait,
    OnError = e => Console.WriteLine($"[{e.ExecutorName}] item failed: {e.Exception.Message}"),
    OnRejected = r => Console.WriteLine($"[{r.ExecutorName}] item not run: {r.Reason}"),
});

// 1. Await the result of a blocking call from async code.
var customer = await executor.RunAsync(() => LegacyCrm.GetCustomer(42));
Console.WriteLine($"RunAsync result: {customer}");

// 2. Fire-and-forget side effects (the payment-callback shape); a failure is reported, never fatal.
executor.Execute(() => LegacyCrm.SendMail("receipt for order 42"));
executor.Execute(() => throw new InvalidOperationException("mail server down"));

// 3. The problem and the fix, side by side: the same blocking calls, first on the shared pool, then on the
//    executor, while a separate thread times how long the ThreadPool takes to start a trivial work item
//    (as a request, a timer or an await continuation would need it to).
Console.WriteLine();
Console.WriteLine($"{BlockingCalls} blocking calls of {blockingCall.TotalMilliseconds} ms each; how long the ThreadPool takes to start a trivial item:");
var onPool = MeasurePoolLatency(done => ThreadPool.UnsafeQueueUserWorkItem(
    static state => { Thread.Sleep(state.Call); state.Done.Signal(); }, (Call: blockingCall, Done: done), preferLocal: false));
Console.WriteLine($"  blocking calls on the shared ThreadPool: worst {onPool.TotalMilliseconds,8:F1} ms");
var onExecutor = MeasurePoolLatency(done => executor.Execute(() => { Thread.Sleep(blockingCall); done.Signal(); }));
Console.WriteLine($"  blocking calls on BoundedExecutor:       worst {onExecutor.TotalMilliseconds,8:F1} ms");

// 4. Operators change the worker count at runtime and read one consistent snapshot.
executor.Reconfigure(settings => settings with { WorkerCount = 16 });
var statistics = executor.GetStatistics();
Console.WriteLine();
Console.WriteLine($"Statistics: workers {statistics.LiveWorkerCount}/{statistics.TargetWorkerCount} (max {statistics.MaxWorkerCount}), " +
    $"queue {statistics.QueueLength}/{statistics.QueueCapacity}, submitted {statistics.Submitted}, completed {statistics.Completed}, failed {statistics.Failed}");

// 5. Graceful shutdown with a deadline: anything still queued at the deadline is handed back, never lost.
var shutdown = await executor.ShutdownAsync(TimeSpan.FromSeconds(5));
Console.WriteLine($"Shut down: drained={shutdown.Drained}, abandoned={shutdown.AbandonedItems.Count}");

// Starts the blocking calls, then probes the pool from a dedicated thread every 10 ms until they are done.
TimeSpan MeasurePoolLatency(Action<CountdownEvent> startOneCall)
{
    using var done = new CountdownEvent(BlockingCalls);
    var worst = TimeSpan.Zero;
    var prober = new Thread(() =>
    {
        for (var i = 0; i < BlockingCalls; i++)
        {
            startOneCall(done);
        }

        while (!done.IsSet)
        {
            using var ran = new ManualResetEventSlim();
            var started = Stopwatch.GetTimestamp();
            ThreadPool.UnsafeQueueUserWorkItem(static gate => gate.Set(), ran, preferLocal: false);
            ran.Wait();
            var latency = Stopwatch.GetElapsedTime(started);
            worst = latency > worst ? latency : worst;
            done.Wait(10);
        }
    });
    prober.Start();
    prober.Join();
    return worst;
}

internal static class LegacyCrm
{
    public static string GetCustomer(int id)
    {
        Thread.Sleep(50); // a synchronous SDK call
        return $"customer #{id}";
    }

    public static void SendMail(string text)
    {
        Thread.Sleep(20);
        Console.WriteLine($"mail sent: {text}");
    }
}
