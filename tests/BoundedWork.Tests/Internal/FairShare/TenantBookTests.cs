using BoundedWork.Internal;

namespace BoundedWork.Tests.Internal.FairShare;

/// <summary>
/// The fair-share book's decisions on their own (no executor, no threads): each is taken under one lock, so a producer
/// never acts on a bound it read before another producer changed the lane.
/// </summary>
public sealed class TenantBookTests
{
    private static TenantEntry Entry(string tenant) => new(tenant, new QueuedItem(new object(), null, static (_, _) => { }, null, 0));

    [Fact]
    public void ReserveOrSwapOldest_BelowTheBound_Reserves()
    {
        var book = new TenantBook(new ItemClock(TimeProvider.System), new FairShareSettings { MaxQueuedPerTenant = 2 });
        Assert.Equal(TenantRoom.Reserved, book.ReserveOrSwapOldest(Entry("a"), out var evicted));
        Assert.Null(evicted);
        Assert.Equal(1, book.Read(10).Single().Queued);
    }

    [Fact]
    public void ReserveOrSwapOldest_AtTheBoundWithAnItemQueued_SwapsTheOldestForTheNewOne()
    {
        var book = new TenantBook(new ItemClock(TimeProvider.System), new FairShareSettings { MaxQueuedPerTenant = 1 });
        var oldest = Entry("a");
        Assert.True(book.TryReserve("a"));
        book.Admit(oldest);
        var newest = Entry("a");
        Assert.Equal(TenantRoom.Swapped, book.ReserveOrSwapOldest(newest, out var evicted));
        Assert.Same(oldest, evicted);
        Assert.Same(newest, book.Resolve());
        var a = book.Read(10).Single();
        Assert.Equal(1, a.Refused);
        book.AssertInvariants();
    }

    [Fact]
    public void ReserveOrSwapOldest_AtTheBoundWithEveryItemStillOnItsWayIn_SaysFullAndChangesNothing()
    {
        var book = new TenantBook(new ItemClock(TimeProvider.System), new FairShareSettings { MaxQueuedPerTenant = 1 });
        Assert.True(book.TryReserve("a")); // another producer's item, not yet admitted
        Assert.Equal(TenantRoom.Full, book.ReserveOrSwapOldest(Entry("a"), out var evicted));
        Assert.Null(evicted);
        var a = book.Read(10).Single();
        Assert.Equal(1, a.Queued);
        Assert.Equal(0, a.Refused);

        // Once it lands there is an oldest item to swap; once it leaves there is room.
        var landed = Entry("a");
        book.Admit(landed);
        Assert.Equal(TenantRoom.Swapped, book.ReserveOrSwapOldest(Entry("a"), out evicted));
        Assert.Same(landed, evicted);
        book.AssertInvariants();
    }
}
