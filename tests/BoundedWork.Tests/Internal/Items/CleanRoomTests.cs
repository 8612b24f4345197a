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

    /// <remarks>
    /// The items are submitted and awaited by synchronous helpers, not async ones: an async helper's state machine (its
    /// hoisted locals in a Debug build, the awaited task holding the result) stays reachable from the thread that
    /// completed it until that thread has returned from its continuation, which can be after this test has resumed on
    /// another thread and collected: what made this test fail once under load, with nothing of the item left on the
    /// worker. A synchronous helper's frame is gone when it returns, so only the executor can still hold the item here.
    /// </remarks>
    [Fact]
    public async Task AnIdleWorker_KeepsNothingOfItsLastItemAlive()
    {
        await using var executor = TestKit.Create(workers: 1);
        var stateRef = FireAndForgetState(executor);
        var resultRef = RunAsyncResult(executor);

        // The worker announces itself idle only after it has left the frame that ran the RunAsync item (run after the
        // fire-and-forget one, on the same worker) and cleared what it published of it.
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety), "The worker never went idle.");

        for (var i = 0; i < 3 && (stateRef.IsAlive || resultRef.IsAlive); i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        Assert.False(stateRef.IsAlive, "The last fire-and-forget item's state is still reachable from the idle worker.");
        Assert.False(resultRef.IsAlive, "The last RunAsync result is still reachable from the idle worker.");
    }

    /// <summary>Runs a fire-and-forget item whose state is a large array, waits for it, and returns a weak reference to the state.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static WeakReference FireAndForgetState(BoundedExecutor executor)
    {
        var state = new byte[1024 * 1024];
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        executor.Execute(static s => ((TaskCompletionSource)s[0]!).SetResult(), new object?[] { done, state });
        Assert.True(done.Task.Wait(TestKit.Safety), "The fire-and-forget item never ran.");
        return new WeakReference(state);
    }

    /// <summary>Runs a RunAsync item whose result is a large array, waits for it, and returns a weak reference to the result.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static WeakReference RunAsyncResult(BoundedExecutor executor)
    {
        var run = executor.RunAsync(() => new byte[1024 * 1024]);
        Assert.True(run.Wait(TestKit.Safety), "The RunAsync item never ran.");
        return new WeakReference(run.Result);
    }
}
