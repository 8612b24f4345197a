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
//    executor, while we time how long the ThreadPool takes to run a trivial work item.
Console.WriteLine();
Console.WriteLine($"{BlockingCalls} blocking calls of {blockingCall.TotalMilliseconds} ms each, ThreadPool probe latency:");
var onPool = await MeasureAsync(() => Task.WhenAll(Enumerable.Range(0, BlockingCalls).Select(_ => Task.Run(() => Thread.Sleep(blockingCall)))));
Console.WriteLine($"  on the shared ThreadPool (Task.Run): worst probe {onPool.TotalMilliseconds,7:F1} ms");
var onExecutor = await MeasureAsync(() => Task.WhenAll(Enumerable.Range(0, BlockingCalls).Select(_ => executor.RunAsync(() => Thread.Sleep(blockingCall)))));
Console.WriteLine($"  on BoundedExecutor 'legacy':         worst probe {onExecutor.TotalMilliseconds,7:F1} ms");

// 4. Operators resize at runtime and read one consistent snapshot.
executor.Resize(16);
var statistics = executor.GetStatistics();
Console.WriteLine();
Console.WriteLine($"Statistics: workers {statistics.LiveWorkerCount}/{statistics.TargetWorkerCount} (max {statistics.MaxWorkerCount}), " +
    $"queue {statistics.QueueLength}/{statistics.QueueCapacity}, submitted {statistics.Submitted}, completed {statistics.Completed}, failed {statistics.Failed}");

// 5. Graceful shutdown with a deadline: anything still queued at the deadline is handed back, never lost.
var shutdown = await executor.ShutdownAsync(TimeSpan.FromSeconds(5));
Console.WriteLine($"Shut down: drained={shutdown.Drained}, abandoned={shutdown.AbandonedItems.Count}");

static async Task<TimeSpan> MeasureAsync(Func<Task> load)
{
    var running = load();
    var worst = TimeSpan.Zero;
    while (!running.IsCompleted)
    {
        var started = Stopwatch.GetTimestamp();
        await Task.Run(() => { });
        var latency = Stopwatch.GetElapsedTime(started);
        worst = latency > worst ? latency : worst;
        await Task.Delay(10);
    }

    await running;
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
