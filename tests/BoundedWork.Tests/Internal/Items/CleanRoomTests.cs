using System.Runtime.CompilerServices;

namespace BoundedWork.Tests.Internal.Items;

/// <summary>Nothing of one item reaches the next item or the submitter.</summary>
public sealed class CleanRoomTests
{
    private static readonly AsyncLocal<string?> s_local = new();

    [Fact]
    public async Task CallerRuns_FireAndForget_ItemsAsyncLocalWritesDoNotLeakIntoTheCaller()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.CallerRuns);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        s_local.Value = "caller";
        var ranOn = -1;

        executor.Execute(() =>
        {
            ranOn = Environment.CurrentManagedThreadId;
            s_local.Value = "leaked from the item";
        });

        Assert.Equal(Environment.CurrentManagedThreadId, ranOn);
        Assert.Equal("caller", s_local.Value);
        gate.Open();
    }

    [Fact]
    public async Task CallerRuns_ItemThatSetsASynchronizationContext_LeavesTheCallersInPlace()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.CallerRuns);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        var before = SynchronizationContext.Current;

        executor.Execute(() => SynchronizationContext.SetSynchronizationContext(new SynchronizationContext()));

        Assert.Same(before, SynchronizationContext.Current);
        gate.Open();
    }

    [Fact]
    public async Task ASynchronizationContextSetByOneItem_IsGoneWhenTheNextItemRunsOnTheSameWorker()
    {
        await using var executor = TestKit.Create(workers: 1);

        var first = await executor.RunAsync(() =>
        {
            SynchronizationContext.SetSynchronizationContext(new SynchronizationContext());
            return Environment.CurrentManagedThreadId;
        });
        var seen = new TaskCompletionSource<(int Thread, SynchronizationContext? Context)>(TaskCreationOptions.RunContinuationsAsynchronously);
        executor.Execute(() => seen.SetResult((Environment.CurrentManagedThreadId, SynchronizationContext.Current)));

        var (thread, context) = await seen.Task.WaitAsync(TestKit.Safety);
        Assert.Equal(first, thread);
        Assert.Null(context);
    }

    [Fact]
    public async Task AnIdleWorker_KeepsNothingOfItsLastItemAlive()
    {
        await using var executor = TestKit.Create(workers: 1);
        var (stateRef, resultRef) = await RunOneOfEachAsync(executor);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety), "The worker never went idle.");

        for (var i = 0; i < 3 && (stateRef.IsAlive || resultRef.IsAlive); i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        Assert.False(stateRef.IsAlive, "The last fire-and-forget item's state is still reachable from the idle worker.");
        Assert.False(resultRef.IsAlive, "The last RunAsync result is still reachable from the idle worker.");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<(WeakReference State, WeakReference Result)> RunOneOfEachAsync(BoundedExecutor executor)
    {
        var state = new byte[1024 * 1024];
        var stateRef = new WeakReference(state);
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        executor.Execute(static s => ((TaskCompletionSource)s[0]!).SetResult(), new object?[] { done, state });
        await done.Task.WaitAsync(TestKit.Safety);
        var resultRef = await ResultRefAsync(executor);
        return (stateRef, resultRef);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<WeakReference> ResultRefAsync(BoundedExecutor executor)
    {
        var result = await executor.RunAsync(() => new byte[1024 * 1024]);
        return new WeakReference(result);
    }
}
