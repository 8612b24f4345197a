using System.Threading.Channels;

namespace BoundedWork.Tests;

/// <summary>
/// Pins down the BCL behaviour the executor's design relies on, so a runtime change that breaks an assumption
/// fails here first.
/// </summary>
[Collection(StarvationCollection.Name)]
public sealed class AssumptionTests
{
    [Fact]
    public async Task Channel_ByDefault_CompletesAWaitingReaderOnTheThreadPool()
    {
        // This is why workers never wait with WaitToReadAsync: the wake-up would need a pool thread.
        var channel = Channel.CreateBounded<int>(4);
        var onPool = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        var wait = channel.Reader.WaitToReadAsync();
        Assert.False(wait.IsCompleted);

        // Registered from a plain thread: no SynchronizationContext for the channel to post to.
        var registrar = new Thread(() => wait.GetAwaiter().UnsafeOnCompleted(() => onPool.TrySetResult(Thread.CurrentThread.IsThreadPoolThread)));
        registrar.Start();
        registrar.Join();

        var writer = new Thread(() => channel.Writer.TryWrite(1));
        writer.Start();
        writer.Join();

        Assert.True(await onPool.Task.WaitAsync(TestKit.Safety));
    }

    [Fact]
    public void TaskWait_OnATaskWithAsynchronousContinuations_IsReleasedWithoutThePool()
    {
        // Sync waiters for room block on such a task; completing it must wake them inline, not through the pool.
        var source = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        var waiterThread = new Thread(() => source.Task.Wait());
        waiterThread.Start();
        Assert.True(SpinWait.SpinUntil(() => (waiterThread.ThreadState & ThreadState.WaitSleepJoin) != 0, TestKit.Safety));

        using (ThreadPoolStarvation.Begin())
        {
            source.SetResult(true);
            Assert.True(waiterThread.Join(TestKit.Safety));
        }
    }

    [Fact]
    public void ExecutionContextCapture_OnACleanThread_ReturnsAContextThatCanBeRestored()
    {
        ExecutionContext? captured = null;
        var thread = new Thread(() => captured = ExecutionContext.Capture());
        thread.UnsafeStart();
        thread.Join();

        Assert.NotNull(captured);
    }
}
