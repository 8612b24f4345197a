namespace BoundedWork.Tests;

/// <summary>
/// The product's central claim: workers keep making progress while the shared ThreadPool is completely starved.
/// </summary>
[Collection(StarvationCollection.Name)]
public sealed class StarvationTests
{
    [Theory]
    [InlineData(1)]
    [InlineData(3)]
    public void Items_RunAndComplete_WhileThePoolIsStarved(int workers)
    {
        using var executor = new DisposableExecutor(TestKit.Create(workers: workers, capacity: 64, policy: RejectionPolicy.Wait));
        const int Count = 200;
        using var allRan = new CountdownEvent(Count);
        var onPool = 0;

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            for (var i = 0; i < Count; i++)
            {
                // Wait policy with a small queue: submitters also block for room and must be woken without the pool.
                executor.Value.Execute(() =>
                {
                    if (Thread.CurrentThread.IsThreadPoolThread)
                    {
                        Interlocked.Increment(ref onPool);
                    }

                    allRan.Signal();
                });
            }

            var result = executor.Value.RunAsync(() => 42);

            Assert.True(allRan.Wait(TestKit.Safety), "Fire-and-forget items did not complete while the pool was starved.");
            Assert.True(((IAsyncResult)result).AsyncWaitHandle.WaitOne(TestKit.Safety), "A RunAsync item did not complete while the pool was starved.");
            Assert.Equal(42, result.Result);
            var statistics = TestKit.WaitForStatistics(executor.Value, s => s.Completed == Count + 1);
            Assert.Equal(0, statistics.Failed);
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }

        Assert.Equal(0, onPool);
    }

    [Theory]
    [InlineData(RejectionPolicy.Abort)]
    [InlineData(RejectionPolicy.Wait)]
    public void ChannelWriterWaitToWriteAsync_QueueFull_CompletesWhenRoomFreesWhileThePoolIsStarved(RejectionPolicy policy)
    {
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, capacity: 1, policy: policy));
        using var gate = new Gate();
        var writer = executor.Value.CreateWriter<int>(_ => { });

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            executor.Value.Execute(gate.Blocker);
            gate.WaitEntered();
            Assert.True(writer.TryWrite(1)); // full
            var waiting = writer.WaitToWriteAsync().AsTask();
            Assert.False(waiting.IsCompleted);

            // The worker that frees the slot completes the wait itself: its task completes with no pool thread.
            gate.Open();
            Assert.True(((IAsyncResult)waiting).AsyncWaitHandle.WaitOne(TestKit.Safety), "The wait for room did not complete while the pool was starved.");
            Assert.True(waiting.Result);
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }
    }

    [Fact]
    public void ResizeAndShutdownDrain_Work_WhileThePoolIsStarved()
    {
        using var executor = new DisposableExecutor(TestKit.Create(workers: 1, capacity: 100));
        using var gate = new Gate();
        using var allRan = new CountdownEvent(10);

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            executor.Value.Execute(gate.Blocker);
            gate.WaitEntered();
            for (var i = 0; i < 10; i++)
            {
                executor.Value.Execute(() => allRan.Signal());
            }

            // Growing starts a worker that drains the queue while the first one is still blocked.
            executor.Value.Resize(2);
            Assert.True(allRan.Wait(TestKit.Safety));

            gate.Open();
            var shutdown = executor.Value.ShutdownAsync();
            Assert.True(((IAsyncResult)executor.Value.Completion).AsyncWaitHandle.WaitOne(TestKit.Safety), "Workers did not exit while the pool was starved.");
            Assert.True(starvation.IsStarved);
            GC.KeepAlive(shutdown);
        }
    }
}

/// <summary>Shuts an executor down synchronously, for tests that must not await.</summary>
internal sealed class DisposableExecutor(BoundedExecutor executor) : IDisposable
{
    public BoundedExecutor Value { get; } = executor;

    public void Dispose() => Value.ShutdownAsync().WaitOrFail("the executor to shut down");
}
