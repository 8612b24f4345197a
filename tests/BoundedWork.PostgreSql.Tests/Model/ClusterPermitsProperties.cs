using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.PostgreSql.Tests.Model;

/// <summary>
/// One node's cluster permits under a running limit (<see cref="ClusterPermits"/>, I4) without a server: random
/// interleavings of claims (permits taken, reserve slots promised, items found beyond the permits going to the
/// reserve), handler ends (the freed permit going straight to the first reserved item), rebalances, cancellations of
/// reserved items, the grant shrinking and growing, and the node stopping, against a model of who holds a permit.
/// </summary>
public sealed class ClusterPermitsProperties
{
    public enum Op
    {
        Claim,
        End,
        Rebalance,
        CancelReserved,
        Regrant,
        Stop,
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
                    (5, Gen.Constant(Op.Claim)), (6, Gen.Constant(Op.End)), (1, Gen.Constant(Op.Rebalance)),
                    (1, Gen.Constant(Op.CancelReserved)), (1, Gen.Constant(Op.Regrant)),
                    (1, Gen.Frequency((1, Gen.Constant(Op.Stop)), (9, Gen.Constant(Op.End)))))
                from a in Gen.Choose(0, 8)
                from b in Gen.Choose(0, 8)
                select new Move(op, a, b)).ToArbitrary();
    }

    [Property(MaxTest = 2000, Arbitrary = [typeof(Arbitraries)])]
    public void I4_Permits_RunningItemsHoldThem_WithinTheAllowance_ReservedItemsStartInClaimOrder_NoneLost(Move[] steps)
    {
        var time = TimeProvider.System;
        var permits = new ClusterPermits(time);
        var items = new ItemSource();
        var allowed = 4;
        long version = 1;
        permits.Granted(new PermitGrant(allowed, allowed, 0, 0, allowed), new GrantLimits(allowed, null, 0), 1, version, time.GetTimestamp(), TimeSpan.FromHours(1));
        var running = new List<StoredItem>();
        var reserved = new List<StoredItem>();
        var claimedCount = 0;
        var ended = 0;
        var shrunk = false;
        foreach (var step in steps)
        {
            switch (step.Op)
            {
                case Op.Claim:
                {
                    var wanted = step.A;
                    var take = permits.Take(wanted);
                    var room = permits.ReserveSlots(wanted, take.Count);
                    Assert.True(take.Count + room <= wanted);
                    var found = new List<StoredItem>();
                    for (var i = 0; i < Math.Min(step.B, take.Count + room); i++)
                    {
                        found.Add(items.Next(priority: (short)((step.B + i) % 3), dueOffset: i % 2));
                    }

                    claimedCount += found.Count;
                    permits.Return(take.Count - Math.Min(found.Count, take.Count), take.Rated);
                    permits.ReserveSlotsDone(room);
                    found.Sort(StoredItem.CompareClaimOrder);
                    running.AddRange(found.Take(take.Count));
                    if (found.Count > take.Count)
                    {
                        var extra = found.GetRange(take.Count, found.Count - take.Count);
                        reserved.AddRange(extra);
                        Apply(permits.Reserve(extra));
                    }

                    break;
                }

                case Op.End when running.Count > 0:
                {
                    var item = running[step.A % running.Count];
                    running.Remove(item);
                    ended++;
                    var first = reserved.Count == 0 ? null : reserved.Min(Comparer<StoredItem>.Create(StoredItem.CompareClaimOrder));
                    permits.Finished(item, out var next);
                    if (next is not null)
                    {
                        Assert.Same(first, next);
                        reserved.Remove(next);
                        running.Add(next);
                    }

                    break;
                }

                case Op.Rebalance:
                    Apply(permits.Rebalance());
                    break;

                case Op.CancelReserved when reserved.Count > 0:
                {
                    var item = reserved[step.A % reserved.Count];
                    Assert.True(permits.TryUnreserve(item));
                    reserved.Remove(item);
                    ended++;
                    break;
                }

                case Op.Regrant:
                {
                    // A renewal under a new allowance: shrinks at once inside its transaction, then the commit grants it.
                    var next = Math.Max(step.A, 1);
                    shrunk |= next < allowed;
                    allowed = next;
                    var grant = new PermitGrant(allowed, Math.Max(allowed, permits.InUse), 0, 0, allowed);
                    permits.ShrinkTo(grant);
                    permits.Granted(grant, new GrantLimits(allowed, null, 0), 1, version, time.GetTimestamp(), TimeSpan.FromHours(1));
                    Apply(permits.Rebalance());
                    break;
                }

                case Op.Stop:
                    Release(permits.CloseReserve());
                    break;
            }

            permits.AssertInvariants();
            Assert.Equal(running.Count, permits.InUse);
            Assert.Equal(reserved.Count, permits.ReservedCount);
            Assert.All(running, item => Assert.True(item.HoldsPermit));
            Assert.All(reserved, item => Assert.False(item.HoldsPermit));
            if (!shrunk)
            {
                Assert.True(running.Count <= allowed, $"{running.Count} running under an allowance of {allowed} after {step}");
                Assert.True(reserved.Count <= allowed, $"{reserved.Count} reserved under an allowance of {allowed} after {step}");
            }

            Assert.Equal(claimedCount, running.Count + reserved.Count + ended);
        }

        void Apply((List<StoredItem> Start, List<StoredItem> Release) outcome)
        {
            foreach (var item in outcome.Start)
            {
                Assert.Contains(item, reserved);
                reserved.Remove(item);
                running.Add(item);
            }

            Release(outcome.Release);
        }

        void Release(List<StoredItem> released)
        {
            foreach (var item in released)
            {
                Assert.Contains(item, reserved);
                reserved.Remove(item);
                permits.Finished(item, out var next); // its release is posted: it held no permit, so it only leaves the reserve
                Assert.Null(next);
                ended++;
            }
        }
    }
}
