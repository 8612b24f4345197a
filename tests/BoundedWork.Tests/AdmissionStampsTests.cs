using BoundedWork.Internal;

namespace BoundedWork.Tests;

public sealed class AdmissionStampsTests
{
    [Fact]
    public void Read_ReturnsTheRecordedStamp_AndNothingForATicketNotYetRecorded()
    {
        var stamps = new AdmissionStamps(capacity: 4);
        Assert.False(stamps.TryRead(0, out _));

        stamps.Record(0, 100);
        stamps.Record(1, 200);

        Assert.True(stamps.TryRead(0, out var first));
        Assert.Equal(100, first);
        Assert.True(stamps.TryRead(1, out var second));
        Assert.Equal(200, second);
        Assert.False(stamps.TryRead(2, out _));
    }

    [Fact]
    public void Read_OfAnEntryReusedByANewerTicket_GivesTheNewerStamp_ALowerBoundOfTheAge()
    {
        var stamps = new AdmissionStamps(capacity: 16); // 16 entries
        stamps.Record(3, 100);
        stamps.Record(19, 900); // the same entry, one ring later

        Assert.True(stamps.TryRead(3, out var stamp));
        Assert.Equal(900, stamp);
        Assert.False(stamps.TryRead(35, out _), "A ticket a ring further on is not recorded yet.");
    }

    [Fact]
    public void EnsureCapacity_KeepsEveryRecordedStamp()
    {
        var stamps = new AdmissionStamps(capacity: 16);
        for (var ticket = 10L; ticket < 26; ticket++)
        {
            stamps.Record(ticket, ticket * 10);
        }

        stamps.EnsureCapacity(1000);
        for (var ticket = 10L; ticket < 26; ticket++)
        {
            Assert.True(stamps.TryRead(ticket, out var stamp));
            Assert.Equal(ticket * 10, stamp);
        }

        // The grown ring holds a queue of 1000 without reusing an entry.
        for (var ticket = 26L; ticket < 1010; ticket++)
        {
            stamps.Record(ticket, ticket * 10);
        }

        Assert.True(stamps.TryRead(10, out var oldest));
        Assert.Equal(100, oldest);
    }

    [Fact]
    public void ConcurrentRecordAndRead_AReaderNeverSeesAStampOlderThanTheTicketsOwn()
    {
        // Producers record increasing stamps (stamp = ticket) in ticket order while a reader asks for the ticket just
        // behind them. A torn or stale read would give a stamp below the ticket asked for.
        const long Tickets = 2_000_000;
        var stamps = new AdmissionStamps(capacity: 16);
        long next = 0;
        var producers = Enumerable.Range(0, 2).Select(_ => new Thread(() =>
        {
            long ticket;
            while ((ticket = Interlocked.Increment(ref next) - 1) < Tickets)
            {
                stamps.Record(ticket, ticket);
            }
        })).ToList();
        var violations = 0L;
        var reads = 0L;
        var reader = new Thread(() =>
        {
            while (Volatile.Read(ref next) < Tickets)
            {
                var ticket = Math.Max(0, Volatile.Read(ref next) - 8);
                if (stamps.TryRead(ticket, out var stamp))
                {
                    reads++;
                    if (stamp < ticket)
                    {
                        violations++;
                    }
                }
            }
        });

        producers.ForEach(t => t.Start());
        reader.Start();
        producers.ForEach(t => Assert.True(t.Join(TestKit.Safety)));
        Assert.True(reader.Join(TestKit.Safety));
        Assert.Equal(0, violations);
        Assert.True(reads > 0, "The reader never read a stamp, so this proved nothing.");
    }
}
