using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.PostgreSql.Tests.Model;

/// <summary>
/// The node's room (<see cref="NodeRoom"/>, invariant I5) without a server: random interleavings of claims booking room,
/// their results arriving (held, then unbooked), hand-offs booking with settling items, prefetch bookings, outcomes
/// settling, and the claim limit changing, against a model of two counters.
/// </summary>
public sealed class NodeRoomProperties
{
    public enum Op
    {
        Book,
        BookSettling,
        BookPrefetch,
        ClaimArrives,
        Settle,
        ChangeLimit,
    }

    public sealed record Move(Op Op, int A, int B)
    {
        public override string ToString() => $"{Op}({A},{B})";
    }

    public static class Arbitraries
    {
        public static Arbitrary<Move[]> Steps() =>
            Gen.ArrayOf(
                from op in Gen.Frequency(
                    (4, Gen.Constant(Op.Book)), (2, Gen.Constant(Op.BookSettling)), (1, Gen.Constant(Op.BookPrefetch)),
                    (5, Gen.Constant(Op.ClaimArrives)), (4, Gen.Constant(Op.Settle)), (1, Gen.Constant(Op.ChangeLimit)))
                from a in Gen.Choose(0, 12)
                from b in Gen.Choose(0, 12)
                select new Move(op, a, b)).ToArbitrary();
    }

    [Property(MaxTest = 2000, Arbitrary = [typeof(Arbitraries)])]
    public void I5_Room_BookingsAndHolds_MatchTheModel_AndNeverExceedTheLimit_UnlessLoweredOrPrefetched(Move[] steps)
    {
        var limit = 8;
        var room = new NodeRoom(() => limit);
        var held = 0;
        var booked = 0;
        var bookings = new List<(int Room, bool Prefetch, int Settling)>();
        var lowered = false;
        var prefetched = false; // a prefetch booking may take the node one item per key beyond its limit (I5)
        foreach (var step in steps)
        {
            switch (step.Op)
            {
                case Op.Book:
                case Op.BookSettling:
                {
                    var settling = step.Op == Op.BookSettling ? Math.Min(step.B, held - bookings.Sum(b => b.Settling)) : 0; // each held item settles in one write
                    var expected = Math.Min(step.A, limit - held - booked + settling);
                    var got = room.Book(step.A, settling);
                    Assert.Equal(expected, got);
                    booked += Math.Max(got, 0);
                    bookings.Add((got, false, settling));
                    break;
                }

                case Op.BookPrefetch:
                {
                    var expected = Math.Max(Math.Min(step.A, limit - held), 0);
                    var got = room.BookPrefetch(step.A, 0, 0);
                    prefetched |= got > 0;
                    Assert.Equal(expected, got);
                    booked += got;
                    bookings.Add((got, true, 0));
                    break;
                }

                case Op.ClaimArrives when bookings.Count > 0:
                {
                    // The oldest claim in flight found some of what it booked (its items' outcomes settle first when it had settling ones).
                    var (booking, _, settling) = bookings[0];
                    bookings.RemoveAt(0);
                    room.Settled(settling);
                    held -= settling;
                    var found = Math.Min(step.A, Math.Max(booking, 0));
                    room.Hold(found);
                    held += found;
                    room.Unbook(booking);
                    booked -= Math.Max(booking, 0);
                    break;
                }

                case Op.Settle:
                {
                    var settled = Math.Min(step.A, held - bookings.Sum(b => b.Settling));
                    room.Settled(settled);
                    held -= settled;
                    break;
                }

                case Op.ChangeLimit:
                    lowered |= step.A < limit;
                    limit = Math.Max(step.A, 1);
                    break;
            }

            room.AssertInvariants();
            Assert.Equal(held, room.Held);
            Assert.Equal(booked, room.Booked);
            Assert.True(held >= 0 && booked >= 0);
            if (!lowered && !prefetched && !bookings.Exists(b => b.Settling > 0))
            {
                Assert.True(held + booked <= limit, $"held {held} + booked {booked} above the limit {limit} after {step}");
            }
        }

        foreach (var (booking, _, settling) in bookings)
        {
            room.Settled(settling);
            room.Unbook(booking);
        }

        Assert.Equal(0, room.Booked);
    }
}
