using System.Collections.Concurrent;
using System.Threading.Channels;

namespace BoundedWork.Tests.Internal.Channels;

/// <summary>An executor as a ChannelWriter: channel-based producers plug in unchanged.</summary>
public sealed class ExecutorChannelWriterTests
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

    public static TheoryData<RejectionPolicy> AllPolicies => [.. Enum.GetValues<RejectionPolicy>()];

    [Theory]
    [MemberData(nameof(AllPolicies))]
    public async Task TheStandardProducerLoop_QueueFull_WaitsForRoomWithoutSpinningAndCountsNoRejection(RejectionPolicy policy)
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: policy);
        var ran = new ConcurrentQueue<int>();
        var writer = executor.CreateWriter<int>(ran.Enqueue);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        Assert.True(writer.TryWrite(1)); // the queue is full now
        var rounds = 0;

        var producer = Task.Run(async () =>
        {
            while (await writer.WaitToWriteAsync())
            {
                Interlocked.Increment(ref rounds);
                if (writer.TryWrite(2))
                {
                    return true;
                }
            }

            return false;
        });

        // A producer that waits shows as a waiting producer; one that spins counts a rejection per round.
        var waiting = TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 1 || s.Rejected > 0);
        Assert.Equal(0, waiting.Rejected);
        Assert.Equal(1, waiting.WaitingProducers);
        Assert.Equal(0, Volatile.Read(ref rounds));
        gate.Open();

        Assert.True(await producer.WaitAsync(TestKit.Safety));
        Assert.Equal(1, Volatile.Read(ref rounds));
        await executor.ShutdownAsync();
        Assert.Equal([1, 2], ran);
        var final = executor.GetStatistics();
        Assert.Equal(0, final.Rejected);
        Assert.Equal(3, final.Submitted);
        Assert.Equal(3, final.Completed);
    }

    [Theory]
    [InlineData(RejectionPolicy.Abort)]
    [InlineData(RejectionPolicy.DiscardOldest)]
    [InlineData(RejectionPolicy.Wait)]
    public async Task TheStandardProducerLoop_ManyProducersOnASmallQueue_EveryItemRunsOnceAndNoneIsCountedRejected(RejectionPolicy policy)
    {
        const int Producers = 4;
        const int PerProducer = 2_000;
        await using var executor = TestKit.Create(workers: 2, capacity: 2, policy: policy);
        var ran = new ConcurrentDictionary<int, int>();
        var writer = executor.CreateWriter<int>(i => ran.AddOrUpdate(i, 1, (_, n) => n + 1));

        var producers = Enumerable.Range(0, Producers).Select(p => Task.Run(async () =>
        {
            for (var i = 0; i < PerProducer; i++)
            {
                var item = (p * PerProducer) + i;
                while (await writer.WaitToWriteAsync())
                {
                    if (writer.TryWrite(item))
                    {
                        break;
                    }
                }
            }
        })).ToArray();
        await Task.WhenAll(producers).WaitAsync(TestKit.Safety);
        await executor.ShutdownAsync();

        Assert.Equal(Producers * PerProducer, ran.Count);
        Assert.All(ran.Values, n => Assert.Equal(1, n));
        var statistics = executor.GetStatistics();
        Assert.Equal(0, statistics.Rejected);
        Assert.Equal(0, statistics.Discarded);
        Assert.Equal(Producers * PerProducer, statistics.Submitted);
        Assert.Equal(0, statistics.WaitingProducers);
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
        var statistics = TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.Starting == 0 && s.Running == 0);
        Assert.Equal(0, statistics.WaitingProducers);
        Assert.Equal(2, statistics.Completed);
        Assert.Equal(0, statistics.Rejected); // the TryWrite of 2 on a full queue left the item with its producer
        Assert.Equal(2, statistics.Submitted);
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
