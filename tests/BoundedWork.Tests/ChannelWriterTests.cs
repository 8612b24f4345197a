using System.Collections.Concurrent;
using System.Threading.Channels;

namespace BoundedWork.Tests;

/// <summary>An executor as a ChannelWriter: channel-based producers plug in unchanged.</summary>
public sealed class ChannelWriterTests
{
    [Fact]
    public async Task Writer_TheUsualProducerLoop_RunsEveryItemOnTheExecutor()
    {
        var seen = new ConcurrentQueue<(int Item, bool OnWorker)>();
        await using var executor = TestKit.Create(workers: 2, capacity: 4, policy: RejectionPolicy.Wait);
        var writer = executor.CreateWriter<int>(i => seen.Enqueue((i, executor.IsWorkerThread)));

        for (var i = 0; i < 200; i++)
        {
            while (await writer.WaitToWriteAsync())
            {
                if (writer.TryWrite(i))
                {
                    break;
                }
            }
        }

        for (var i = 200; i < 300; i++)
        {
            await writer.WriteAsync(i);
        }

        await executor.ShutdownAsync();
        Assert.Equal(Enumerable.Range(0, 300), seen.Select(s => s.Item).Order());
        Assert.All(seen, s => Assert.True(s.OnWorker));
    }

    [Fact]
    public async Task WaitToWriteAsync_FullQueueUnderWait_CompletesWhenRoomFreesWithoutTakingTheSlot()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait);
        var writer = executor.CreateWriter<int>(_ => { });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        Assert.True(writer.TryWrite(1));
        Assert.False(writer.TryWrite(2));

        var waiting = writer.WaitToWriteAsync().AsTask();
        Assert.False(waiting.IsCompleted);
        gate.Open();

        Assert.True(await waiting.WaitAsync(TestKit.Safety));
        var statistics = TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.Running == 0);
        Assert.Equal(0, statistics.WaitingProducers);
        Assert.Equal(2, statistics.Completed);
        Assert.Equal(1, statistics.Rejected); // the TryWrite of 2 on a full queue
    }

    [Fact]
    public async Task Writer_AfterShutdown_WaitReturnsFalseAndWritesFailAsAClosedChannel()
    {
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait);
        var writer = executor.CreateWriter<int>(_ => { });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        var waiting = writer.WaitToWriteAsync().AsTask();

        var shutdown = executor.ShutdownAsync();

        Assert.False(await waiting.WaitAsync(TestKit.Safety));
        Assert.False(await writer.WaitToWriteAsync());
        Assert.False(writer.TryWrite(1));
        await Assert.ThrowsAsync<ChannelClosedException>(() => writer.WriteAsync(2).AsTask());
        gate.Open();
        await shutdown;
    }

    [Fact]
    public async Task Writer_Completed_StopsThatWriterOnly()
    {
        await using var executor = TestKit.Create(workers: 1);
        var first = executor.CreateWriter<int>(_ => { });
        var second = executor.CreateWriter<int>(_ => { });

        Assert.True(first.TryComplete());
        Assert.False(first.TryComplete());

        Assert.False(first.TryWrite(1));
        Assert.False(await first.WaitToWriteAsync());
        await Assert.ThrowsAsync<ChannelClosedException>(() => first.WriteAsync(1).AsTask());
        Assert.True(second.TryWrite(1));
        Assert.False(executor.IsShutdown);
    }

    [Fact]
    public async Task WaitToWriteAsync_Cancelled_IsCancelledAndLeavesNoWaiter()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait);
        var writer = executor.CreateWriter<int>(_ => { });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        using var cts = new CancellationTokenSource();
        var waiting = writer.WaitToWriteAsync(cts.Token).AsTask();

        await cts.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting.WaitAsync(TestKit.Safety));
        Assert.Equal(0, executor.GetStatistics().WaitingProducers);
        gate.Open();
    }
}
