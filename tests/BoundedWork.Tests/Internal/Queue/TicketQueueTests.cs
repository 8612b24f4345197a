using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.Queue;

/// <summary>The executor's queue, stress-tested on its own.</summary>
public sealed class TicketQueueTests
{
    [Theory]
    [InlineData(1, 1, 10)]
    [InlineData(3, 2, 4)]
    [InlineData(2, 4, 1000)]
    [InlineData(3, 1, 20_000)] // longer than the first ring: the ring grows while items flow
    public void ConcurrentAdmitClaimAndAbandon_EveryItemIsReadExactlyOnce(int producers, int consumers, int capacity)
    {
        const int PerProducer = 50_000;
        var queue = new TicketQueue(capacity);
        var seen = new int[producers * PerProducer];
        var abandonAfter = producers * PerProducer / 2;
        long claimedTotal = 0;
        var rejectedAfterShutdown = 0;
        var abandonedCount = 0;

        var producerThreads = Enumerable.Range(0, producers).Select(p => new Thread(() =>
        {
            for (var i = 0; i < PerProducer; i++)
            {
                var id = p * PerProducer + i;
                while (true)
                {
                    var admission = queue.TryAdmit(capacity, out var ticket);
                    if (admission == Admission.Admitted)
                    {
                        queue.Write(ticket, new QueuedItem(id, null, static (_, _) => { }, null, 0));
                        break;
                    }

                    if (admission == Admission.ShutDown)
                    {
                        Interlocked.Increment(ref rejectedAfterShutdown);
                        break;
                    }

                    Thread.SpinWait(10);
                }
            }
        })).ToList();
        var consumerThreads = Enumerable.Range(0, consumers).Select(_ => new Thread(() =>
        {
            long known = 0;
            while (true)
            {
                if (queue.TryClaim(ref known, out var ticket, out long _))
                {
                    var item = queue.ReadClaimed(ticket);
                    Interlocked.Increment(ref seen[(int)item.Callback]);
                    if (Interlocked.Increment(ref claimedTotal) == abandonAfter)
                    {
                        var claimed = queue.Abandon(out var first);
                        for (var k = 0; k < claimed; k++)
                        {
                            Interlocked.Increment(ref seen[(int)queue.ReadClaimed(first + k).Callback]);
                            Interlocked.Increment(ref abandonedCount);
                        }
                    }

                    continue;
                }

                if (queue.IsAbandoned)
                {
                    return;
                }

                Thread.SpinWait(10);
            }
        })).ToList();

        producerThreads.ForEach(t => t.Start());
        consumerThreads.ForEach(t => t.Start());
        producerThreads.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
        consumerThreads.ForEach(t => Assert.True(t.Join(TestKit.Safety)));

        Assert.All(seen, count => Assert.True(count <= 1, "An item was read twice."));
        Assert.Equal(seen.Length, seen.Sum() + rejectedAfterShutdown);
        Assert.Equal(0, queue.Count);
        Assert.Equal(Interlocked.Read(ref claimedTotal) + abandonedCount, queue.Claims);
        Assert.False(queue.HasUnreadItems, "An item is left in the queue after everything was claimed.");
    }

    [Fact]
    public void AbandonRacingWithClaimers_EveryItemIsReadOnce_AndTheAbandonerGetsExactlyWhatItClaimed()
    {
        // Abandoning claims every item not yet claimed in one step while consumers keep claiming: each item must go to
        // exactly one side, and the abandoner must be able to read exactly as many as it claimed. Many short rounds
        // land the abandon at many different points of the consumers' progress.
        const int Rounds = 300;
        const int Items = 64;
        const int Claimers = 3;
        for (var round = 0; round < Rounds; round++)
        {
            var queue = new TicketQueue(Items);
            for (var i = 0; i < Items; i++)
            {
                Assert.Equal(Admission.Admitted, queue.TryAdmit(Items, out var ticket));
                queue.Write(ticket, new QueuedItem(i, null, static (_, _) => { }, null, 0));
            }

            var seen = new int[Items];
            using var start = new Barrier(Claimers + 1);
            var claimers = Enumerable.Range(0, Claimers).Select(_ => new Thread(() =>
            {
                long known = 0;
                start.SignalAndWait();
                while (queue.TryClaim(ref known, out var ticket, out long _))
                {
                    Interlocked.Increment(ref seen[(int)queue.ReadClaimed(ticket).Callback]);
                }
            })).ToList();
            claimers.ForEach(t => t.Start());
            start.SignalAndWait();
            Thread.SpinWait(round % 50 * 20); // vary where the abandon lands (not a timing assumption: any point is valid)
            var claimed = queue.Abandon(out var first);
            var reader = new Thread(() =>
            {
                for (var k = 0; k < claimed; k++)
                {
                    Interlocked.Increment(ref seen[(int)queue.ReadClaimed(first + k).Callback]);
                }
            });
            reader.Start();
            Assert.True(reader.Join(TestKit.Safety), $"Round {round}: the abandoner never got all {claimed} items it claimed.");
            claimers.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
            Assert.All(seen, count => Assert.Equal(1, count));
            Assert.False(queue.HasUnreadItems, $"Round {round}: an item is left unread.");
            Assert.Equal(Items, queue.Claims);
        }
    }

    [Fact]
    public void Growing_KeepsEveryItemInAdmissionOrder()
    {
        var queue = new TicketQueue(capacity: 10_000);
        Assert.Equal(1024, queue.RingLength);
        for (var i = 0; i < 5_000; i++)
        {
            Assert.Equal(Admission.Admitted, queue.TryAdmit(10_000, out var ticket));
            Assert.Equal(i, ticket);
            queue.Write(ticket, new QueuedItem(i, null, static (_, _) => { }, null, i));
            if (i == 3_000)
            {
                // Half of what is queued now was written before the last growth: it stays in the older rings.
                long known = 0;
                for (var k = 0; k < 100; k++)
                {
                    Assert.True(queue.TryClaim(ref known, out var claimed, out _));
                    Assert.Equal(k, (int)queue.ReadClaimed(claimed).Callback);
                }
            }
        }

        Assert.Equal(8192, queue.RingLength);
        long knownAdmissions = 0;
        for (var k = 100; k < 5_000; k++)
        {
            Assert.True(queue.TryClaim(ref knownAdmissions, out var ticket, out _));
            Assert.Equal(k, (int)queue.ReadClaimed(ticket).Callback);
        }

        Assert.False(queue.TryClaim(ref knownAdmissions, out _, out _));
        Assert.False(queue.HasUnreadItems);
    }

    [Fact]
    public void ProducersGrowingTheRingTogether_LoseNoItemAndKeepEachProducersOrder()
    {
        const int Producers = 3;
        const int PerProducer = 10_000;
        var queue = new TicketQueue(capacity: 100_000);
        using var start = new Barrier(Producers);
        var producers = Enumerable.Range(0, Producers).Select(p => new Thread(() =>
        {
            start.SignalAndWait();
            for (var i = 0; i < PerProducer; i++)
            {
                Assert.Equal(Admission.Admitted, queue.TryAdmit(100_000, out var ticket));
                queue.Write(ticket, new QueuedItem((p * PerProducer) + i, null, static (_, _) => { }, null, 0));
            }
        })).ToList();
        producers.ForEach(t => t.Start());
        producers.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
        Assert.Equal(32_768, queue.RingLength); // 1,024 doubled five times while the producers raced

        var last = Enumerable.Repeat(-1, Producers).ToArray();
        long known = 0;
        for (var k = 0; k < Producers * PerProducer; k++)
        {
            Assert.True(queue.TryClaim(ref known, out var ticket, out _));
            var id = (int)queue.ReadClaimed(ticket).Callback;
            var producer = id / PerProducer;
            Assert.True(id > last[producer], $"Item {id} came after {last[producer]} of the same producer.");
            last[producer] = id;
        }

        Assert.Equal(Enumerable.Range(1, Producers).Select(p => (p * PerProducer) - 1), last);
        Assert.False(queue.HasUnreadItems);
    }

    [Fact]
    public void AConsumerThatClaimedButHasNotRead_MakesTheLappingProducerWait_NotGrowTheRing()
    {
        var queue = new TicketQueue(capacity: 16);
        Assert.Equal(16, queue.RingLength);
        for (var i = 0; i < 16; i++)
        {
            Assert.Equal(Admission.Admitted, queue.TryAdmit(16, out var ticket));
            queue.Write(ticket, new QueuedItem(i, null, static (_, _) => { }, null, 0));
        }

        long known = 0;
        Assert.True(queue.TryClaim(ref known, out var stalled, out _)); // claimed, not read: its slot stays taken
        Assert.Equal(Admission.Admitted, queue.TryAdmit(16, out var lapping));
        Assert.Equal(16, lapping); // same slot as ticket 0, one lap later
        using var written = new ManualResetEventSlim();
        var producer = new Thread(() =>
        {
            queue.Write(lapping, new QueuedItem(16, null, static (_, _) => { }, null, 0));
            written.Set();
        });
        producer.Start();
        // A bounded window proving a NOT: the producer must still be waiting 100 ms on (it is never released by time).
        Assert.False(written.Wait(TimeSpan.FromMilliseconds(100)), "The producer overwrote a slot whose item was not read yet.");

        Assert.Equal(0, (int)queue.ReadClaimed(stalled).Callback);
        written.WaitOrFail("the lapping producer's write after the slot was released");
        Assert.True(producer.Join(TestKit.Safety));
        Assert.Equal(16, queue.RingLength);
        for (var k = 1; k <= 16; k++)
        {
            Assert.True(queue.TryClaim(ref known, out var ticket, out _));
            Assert.Equal(k, (int)queue.ReadClaimed(ticket).Callback);
        }
    }
}
