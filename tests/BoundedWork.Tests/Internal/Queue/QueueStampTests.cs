using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.Queue;

/// <summary>The oldest queued item's enqueue time, read from its queue slot without claiming it.</summary>
public sealed class QueueStampTests
{
    private static readonly Action<object, object?> NoOp = static (_, _) => { };

    [Fact]
    public void TheOldestStamp_IsTheOldestWrittenItems_AndNoneOnceItIsTaken()
    {
        var queue = new TicketQueue(capacity: 16);
        Assert.Equal(Admission.Admitted, queue.TryAdmit(16, out var first));
        Assert.False(queue.TryReadOldestStamp(queue.Claims, out _), "Admitted but not written yet: no stamp.");
        queue.Write(first, new QueuedItem(1, null, NoOp, null, 100));
        Assert.Equal(Admission.Admitted, queue.TryAdmit(16, out var second));
        queue.Write(second, new QueuedItem(2, null, NoOp, null, 200));

        Assert.True(queue.TryReadOldestStamp(queue.Claims, out var oldest));
        Assert.Equal(100, oldest);

        long known = 0;
        Assert.True(queue.TryClaim(ref known, out var ticket, out _));
        _ = queue.ReadClaimed(ticket);
        Assert.False(queue.TryReadOldestStamp(ticket, out _), "A taken item has no stamp to read.");
        Assert.True(queue.TryReadOldestStamp(queue.Claims, out var next));
        Assert.Equal(200, next);
    }

    [Fact]
    public void ReadWhileProducersAndConsumersRace_AStampIsAlwaysTheOneOfTheTicketAskedFor()
    {
        // Producers write each item with its own ticket as its stamp while consumers take them and the ring laps many
        // times over; a reader keeps asking for the oldest. A stamp from another lap, or a torn read, would differ.
        const int Items = 300_000;
        const int Capacity = 16;
        var queue = new TicketQueue(Capacity);
        long produced = 0;
        long consumed = 0;
        long misread = 0;
        var producers = Enumerable.Range(0, 2).Select(index => new Thread(() =>
        {
            while (Interlocked.Increment(ref produced) <= Items)
            {
                Admission admission;
                long ticket;
                while ((admission = queue.TryAdmit(Capacity, out ticket)) == Admission.Full)
                {
                    Thread.Yield();
                }

                queue.Write(ticket, new QueuedItem(ticket, null, NoOp, null, ticket));
            }
        })).ToList();
        var consumers = Enumerable.Range(0, 2).Select(index => new Thread(() =>
        {
            long known = 0;
            while (Interlocked.Read(ref consumed) < Items)
            {
                if (queue.TryClaim(ref known, out var ticket, out _))
                {
                    if ((long)queue.ReadClaimed(ticket).Callback != ticket)
                    {
                        Interlocked.Increment(ref misread);
                    }

                    Interlocked.Increment(ref consumed);
                }
            }
        })).ToList();
        long reads = 0;
        long wrong = 0;
        var reader = new Thread(() =>
        {
            while (Interlocked.Read(ref consumed) < Items)
            {
                var claims = queue.Claims;
                if (queue.TryReadOldestStamp(claims, out var stamp))
                {
                    reads++;
                    if (stamp != claims)
                    {
                        wrong++;
                    }
                }
            }
        });

        producers.ForEach(t => t.Start());
        consumers.ForEach(t => t.Start());
        reader.Start();
        producers.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
        consumers.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
        Assert.True(reader.Join(TestKit.Safety));
        Assert.Equal(0, misread);
        Assert.Equal(0, wrong);
        Assert.True(reads > 0, "The reader never read a stamp, so this proved nothing.");
    }
}
