using BoundedWork.Diagnostics.Internal;

namespace BoundedWork.Diagnostics.Tests;

/// <summary>
/// The diagnosis names the action a blocked thread runs when its stack shows only generated code (an MVC action the
/// JIT inlined into MVC's compiled invoker), and words the wait as a user would.
/// </summary>
public sealed class AttributionTests
{
    private static readonly Frame[] s_poolBottom =
    [
        new("System.Threading.ThreadPoolWorkQueue.Dispatch()", "System.Private.CoreLib"),
        new("System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart()", "System.Private.CoreLib"),
        new("System.Threading.Thread.StartCallback()", "System.Private.CoreLib"),
    ];

    // A Release MVC app's blocked thread, as dotnet-stack shows it: the action is inlined into lambda_method3.
    private static readonly Frame[] s_inlinedResult =
    [
        new("System.Threading.LowLevelMonitor.WaitCore(int32)", "System.Private.CoreLib"),
        new("System.Threading.Monitor.Wait(class System.Object,int32)", "System.Private.CoreLib"),
        new("System.Threading.ManualResetEventSlim.Wait(int32,value class System.Threading.CancellationToken)", "System.Private.CoreLib"),
        new("System.Threading.Tasks.Task.SpinThenBlockingWait(int32,value class System.Threading.CancellationToken)", "System.Private.CoreLib"),
        new("System.Threading.Tasks.Task.InternalWaitCore(int32,value class System.Threading.CancellationToken)", "System.Private.CoreLib"),
        new("System.Threading.Tasks.Task`1[System.Int32].GetResultCore(bool)", "System.Private.CoreLib"),
        new("dynamicClass.lambda_method3(pMT: 00007F1C2D3E4F50,class System.Object,class System.Object[])", ""),
        new("Microsoft.AspNetCore.Mvc.Infrastructure.ActionMethodExecutor+SyncObjectResultExecutor.Execute(class Microsoft.AspNetCore.Mvc.Infrastructure.IActionResultTypeMapper,class Microsoft.Extensions.Internal.ObjectMethodExecutor,class System.Object,class System.Object[])", "Microsoft.AspNetCore.Mvc.Core"),
        new("Microsoft.AspNetCore.Mvc.Infrastructure.ControllerActionInvoker.InvokeActionMethodAsync()", "Microsoft.AspNetCore.Mvc.Core"),
        .. s_poolBottom,
    ];

    private static List<CounterSample> Queued() =>
    [
        new(new DateTime(2026, 1, 1, 0, 0, 0, DateTimeKind.Utc), CounterNames.PoolQueue, null, 40),
        new(new DateTime(2026, 1, 1, 0, 0, 1, DateTimeKind.Utc), CounterNames.PoolQueue, null, 90),
    ];

    [Fact]
    public void Diagnose_InlinedActionAndItsThreadsWork_NamesTheActionAndTheWaitNeverTheGeneratedMethod()
    {
        var samples = Enumerable.Range(1, 6).Select(t => new ThreadSample(t, s_inlinedResult)).ToList();
        var work = Enumerable.Range(1, 6).ToDictionary(t => t, _ => "OrdersController.Get (route orders/{id:int})");

        var report = Diagnosis.Diagnose(1, Queued(), samples, work);

        Assert.True(report.Starved);
        var site = Assert.Single(report.BlockingSites);
        Assert.Equal("OrdersController.Get (route orders/{id:int})", site.Method);
        Assert.Equal("waits on Task.Result: sync over async", site.Meaning);
        Assert.StartsWith("STARVED: 6 of 6 pool threads are blocked in OrdersController.Get (route orders/{id:int}) (waits on Task.Result: sync over async)", report.Verdict, StringComparison.Ordinal);
        Assert.All(report.Advice.Concat(report.Evidence).Append(report.Verdict), line =>
        {
            Assert.DoesNotContain("lambda_method", line, StringComparison.Ordinal);
            Assert.DoesNotContain("dynamicClass", line, StringComparison.Ordinal);
            Assert.DoesNotContain("InternalWaitCore", line, StringComparison.Ordinal);
        });
    }

    [Fact]
    public void Diagnose_InlinedActionWithoutItsWork_NeverAdvisesTheGeneratedMethod()
    {
        var samples = Enumerable.Range(1, 6).Select(t => new ThreadSample(t, s_inlinedResult)).ToList();

        var report = Diagnosis.Diagnose(1, Queued(), samples);

        Assert.True(report.Starved);
        Assert.All(report.Advice.Append(report.Verdict), line => Assert.DoesNotContain("lambda_method", line, StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("Thread.Sleep", "polls with Thread.Sleep (or pauses in it)")]
    [InlineData("Task`1.get_Result", "waits on Task.Result: sync over async")]
    [InlineData("Task.Wait", "waits on Task.Wait: sync over async")]
    [InlineData("Task.InternalWait", "waits on Task.Result (or GetAwaiter().GetResult()): sync over async")]
    [InlineData("TaskAwaiter.GetResult", "waits on GetAwaiter().GetResult(): sync over async")]
    [InlineData("Monitor.Enter", "waits for a lock (Monitor.Enter)")]
    [InlineData("Socket.Receive", "synchronous I/O (Socket.Receive)")]
    public void Meaning_Waits_InAUsersWords(string wait, string expected) => Assert.Equal(expected, Diagnosis.Meaning(wait));

    [Theory]
    [InlineData("dynamicClass.lambda_method3(pMT: 00007F1C2D3E4F50,class System.Object,class System.Object[])", true)]
    [InlineData("Shop.OrdersController.Get(int32)", false)]
    public void IsGenerated_DynamicMethods(string method, bool expected) => Assert.Equal(expected, Diagnosis.IsGenerated(method));

    [Theory]
    [InlineData("System.Threading.Tasks.Task`1[System.Int32].GetResultCore(bool)", "Task`1.GetResultCore")]
    [InlineData("System.Threading.Tasks.Task`1[System.Collections.Generic.List`1[System.Int32]].get_Result()", "Task`1.get_Result")]
    public void Readable_GenericTypes_LoseTheirTypeArguments(string method, string expected) => Assert.Equal(expected, Diagnosis.Readable(method));
}
