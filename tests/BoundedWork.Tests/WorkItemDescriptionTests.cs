using System.Collections.Concurrent;
using BoundedWork.Internal;
using BoundedWork.Synchronous;

namespace BoundedWork.Tests;

/// <summary>Items are described by the type and method a person wrote, never by the compiler's generated names.</summary>
public sealed class WorkItemDescriptionTests
{
    private static readonly string Here = typeof(WorkItemDescriptionTests).FullName!;

    [Theory]
    [InlineData("<<Main>$>b__0_7", "Main", "lambda")]
    [InlineData("<Run>b__3_0", "Run", "lambda")]
    [InlineData("<Run>g__Send|3_1", "Run.Send", "local function")]
    [InlineData("<<Main>$>g__Notify|0_2", "Main.Notify", "local function")]
    [InlineData("<.ctor>b__0_0", "ctor", "lambda")]
    [InlineData("<Main>$", "Main", null)]
    [InlineData("Send", "Send", null)]
    [InlineData("<unbalanced", "<unbalanced", null)]
    public void DecodeMethodName_CompilerNames_ReadAsTheMethodAPersonWrote(string compiled, string name, string? kind)
    {
        Assert.Equal((name, kind), WorkDescription.DecodeMethodName(compiled));
    }

    [Fact]
    public async Task GetRunningItems_ALambda_IsDescribedByTheMethodThatDeclaresIt()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        using var started = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();

        var running = Assert.Single(executor.GetRunningItems());
        gate.Open();

        Assert.Equal($"{typeof(Gate).FullName}.get_Blocker (lambda)", running.Item.Description);
        executor.Execute(() =>
        {
            started.Set();
            release.Wait(TestKit.Safety);
        });
        started.WaitOrFail("the item to start");
        var lambda = Assert.Single(executor.GetRunningItems());
        release.Set();
        Assert.Equal($"{Here}.{nameof(GetRunningItems_ALambda_IsDescribedByTheMethodThatDeclaresIt)} (lambda)", lambda.Item.Description);
    }

    [Fact]
    public async Task Description_OfEverySubmitShape_NamesTheCallersOwnCode()
    {
        var described = new ConcurrentQueue<string>();
        var executor = TestKit.Create(workers: 1, configure: o => o.OnRejected = args => described.Enqueue(args.Item.Description));
        await executor.ShutdownAsync();
        var captured = 42;
        void SendReceipt() => GC.KeepAlive(captured);
        var scheduler = executor.AsTaskScheduler();
        var bound = executor.Bind(new List<int>());

        executor.TryExecute(() => GC.KeepAlive(captured));
        executor.TryExecute(static () => { });
        executor.TryExecute(NamedWork);
        executor.TryExecute(SendReceipt);
        executor.TryExecute(static state => GC.KeepAlive(state), "state");
        await Assert.ThrowsAsync<RejectedExecutionException>(() => executor.RunAsync(() => captured));
        await Assert.ThrowsAsync<RejectedExecutionException>(() => bound.RunAsync(list => list.Count));
        Assert.Throws<RejectedExecutionException>(() => executor.RunAndWait(NamedWork));
        var task = Task.Factory.StartNew(() => { }, CancellationToken.None, TaskCreationOptions.None, scheduler);
        await task.WaitAsync(TestKit.Safety); // shut down: it runs on the rescue thread, and the executor reports the item

        var method = $"{Here}.{nameof(Description_OfEverySubmitShape_NamesTheCallersOwnCode)}";
        Assert.Equal(
            [
                $"{method} (lambda)",
                $"{method} (lambda)",
                $"{Here}.{nameof(NamedWork)}",
                $"{method}.{nameof(SendReceipt)} (local function)",
                $"{method} (lambda)",
                $"{method} (lambda)",
                $"{method} (lambda)",
                $"{Here}.{nameof(NamedWork)}",
                $"Task {task.Id} (TaskScheduler)",
            ],
            described);
        Assert.DoesNotContain(described, d => d.Contains('<', StringComparison.Ordinal));
    }

    [Fact]
    public void Description_NestedAndGenericTypes_JoinWithDotsWithoutArity()
    {
        Action work = Nested<int>.Work;
        var item = new WorkItem(work, null, QueuedItem.InvokeAction, isAwaited: false);

        Assert.Equal($"{Here}.Nested.Work", item.Description);
    }

    private static void NamedWork()
    {
    }

    private static class Nested<T>
    {
        public static void Work() => GC.KeepAlive(typeof(T));
    }
}
