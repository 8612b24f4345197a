using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The allocation of running permits (<see cref="PermitAllocation"/>) over random histories of a fleet: nodes join,
/// renew their grants (each computing its own from the others' stored grants, as its grant transaction does), start
/// and finish items within their allowance, expire (their running items stay, as dead rows, until reaped), and the limit
/// changes (a node then starts nothing until it has renewed under the new limit, as the claim's version check does).
/// </summary>
public sealed class PermitAllocationProperties
{
    public enum Kind
    {
        Join,
        Renew,
        Start,
        Finish,
        Expire,
        Reap,
        ChangeLimit,
    }

    public sealed record FleetEvent(Kind Kind, int Node, int Value)
    {
        public override string ToString() => $"{Kind}({Node},{Value})";
    }

    public sealed record History(int Limit, int[] Workers, FleetEvent[] Events)
    {
        public override string ToString() => $"N={Limit} workers=[{string.Join(",", Workers)}] events=[{string.Join(" ", Events.AsEnumerable())}]";
    }

    public static class Arbitraries
    {
        public static Arbitrary<History> Histories() =>
            (from limit in Gen.Choose(1, 12)
             from nodes in Gen.Choose(1, 4)
             from workers in Gen.ArrayOf(Gen.Choose(1, 5), nodes)
             from events in Gen.Choose(0, 60).SelectMany(n => Gen.ArrayOf(
                 from kind in Gen.Frequency(
                     (2, Gen.Constant(Kind.Join)), (6, Gen.Constant(Kind.Renew)), (8, Gen.Constant(Kind.Start)), (4, Gen.Constant(Kind.Finish)),
                     (1, Gen.Constant(Kind.Expire)), (1, Gen.Constant(Kind.Reap)), (1, Gen.Constant(Kind.ChangeLimit)))
                 from node in Gen.Choose(0, nodes - 1)
                 from value in Gen.Choose(1, 12)
                 select new FleetEvent(kind, node, value), n))
             select new History(limit, workers, events)).ToArbitrary();
    }

    [Property(MaxTest = 500, Arbitrary = [typeof(Arbitraries)])]
    public void EveryStart_KeepsLiveItemsPlusDeadRowsWithinTheLimit_AndGrantsStayWithinIt_UntilTheLimitIsLowered(History history)
    {
        var fleet = new Fleet(history.Limit, history.Workers);
        var lowered = false;
        foreach (var step in history.Events)
        {
            lowered |= step.Kind == Kind.ChangeLimit && step.Value < fleet.Limit;
            if (fleet.Apply(step) && step.Kind == Kind.Start)
            {
                Assert.True(fleet.Running <= fleet.Limit, $"{fleet.Running} items run (dead rows included) under a limit of {fleet.Limit} after {step}.");
            }

            if (!lowered)
            {
                Assert.True(fleet.Granted <= fleet.Limit, $"The live grants and dead rows add up to {fleet.Granted}, above {fleet.Limit}, after {step}.");
            }
        }
    }

    [Property(MaxTest = 500, Arbitrary = [typeof(Arbitraries)])]
    public void AfterAnyHistory_OnceItemsEndAndDeadRowsAreReaped_TwoRoundsOfRenewals_GrantTheWholeLimit_FairShares(History history)
    {
        var fleet = new Fleet(history.Limit, history.Workers);
        foreach (var step in history.Events)
        {
            fleet.Apply(step);
        }

        for (var i = 0; i < history.Workers.Length; i++)
        {
            fleet.Apply(new FleetEvent(Kind.Join, i, 0));
            while (fleet.InUse(i) > 0)
            {
                fleet.Apply(new FleetEvent(Kind.Finish, i, 0));
            }
        }

        fleet.Apply(new FleetEvent(Kind.Reap, 0, 0));
        for (var round = 0; round < 2; round++)
        {
            for (var i = 0; i < history.Workers.Length; i++)
            {
                fleet.Apply(new FleetEvent(Kind.Renew, i, 0));
            }
        }

        var demand = history.Workers.Sum(w => w * Fleet.ClaimsPerWorker);
        Assert.Equal(Math.Min(fleet.Limit, demand), fleet.Granted);

        // Equal workers: shares differ by at most one.
        if (history.Workers.Distinct().Count() == 1)
        {
            var shares = Enumerable.Range(0, history.Workers.Length).Select(fleet.Stored).ToArray();
            Assert.True(shares.Max() - shares.Min() <= 1, $"Shares [{string.Join(",", shares)}] for equal nodes.");
        }
    }

    [Fact]
    public void MaxMin_MeetsSmallDemands_SplitsTheRestEvenly_RemainderByName()
    {
        Assert.Equal([1, 3, 3], PermitAllocation.MaxMin(7, [("c", 1), ("b", 5), ("a", 5)]));
        Assert.Equal([2, 3, 3], PermitAllocation.MaxMin(8, [("c", 4), ("b", 5), ("a", 5)]));
        Assert.Equal([2, 3], PermitAllocation.MaxMin(5, [("b", 9), ("a", 9)]));
        Assert.Equal([1, 2], PermitAllocation.MaxMin(100, [("b", 1), ("a", 2)]));
    }

    [Fact]
    public void Rate_SharesOfBurstAndRate_SumToAtMostTheLimits_AndANodeWithoutABurstShareGetsNoRate()
    {
        var limits = new GrantLimits(null, 10, 3);
        var a = PermitAllocation.Allocate(limits, new NodeGrant("a", 4, 8, 0, 0, 0), 0, [new NodeGrant("b", 4, 8, 0, 0, 0)], 0);
        Assert.Equal(2, a.Burst); // 1.5 each, the remainder by name
        Assert.Equal(5.0, a.Rate, 9);
        var b = PermitAllocation.Allocate(limits, new NodeGrant("b", 4, 8, 0, 0, 0), 0, [new NodeGrant("a", 4, 8, 0, a.Rate, a.Burst)], 0);
        Assert.Equal(1, b.Burst);
        Assert.Equal(5.0, b.Rate, 9);

        // A rate far above what the workers could start is not capped by them: one node with two workers gets it all.
        var alone = PermitAllocation.Allocate(new GrantLimits(null, 1_000_000, 1_000_000), new NodeGrant("a", 2, 4, 0, 0, 0), 0, [], 0);
        Assert.Equal((1_000_000, 1_000_000.0), (alone.Burst, alone.Rate));

        // Three nodes, a burst of two: the third gets no burst and no rate; the rate goes to the two that can start.
        var three = new[] { new NodeGrant("a", 1, 2, 0, 0, 0), new NodeGrant("b", 1, 2, 0, 0, 0), new NodeGrant("c", 1, 2, 0, 0, 0) };
        var c = PermitAllocation.Allocate(new GrantLimits(null, 10, 2), three[2], 0, three[..2], 0);
        Assert.Equal((0, 0.0), (c.Burst, c.Rate));
        var first = PermitAllocation.Allocate(new GrantLimits(null, 10, 2), three[0], 0, three[1..], 0);
        Assert.Equal((1, 5.0), (first.Burst, first.Rate));

        // A fourth node finds the burst all held: nothing, until the others shrink.
        var d = PermitAllocation.Allocate(limits, new NodeGrant("d", 4, 8, 0, 0, 0), 0,
            [new NodeGrant("a", 4, 8, 0, 10.0 / 3, 1), new NodeGrant("b", 4, 8, 0, 10.0 / 3, 1), new NodeGrant("c", 4, 8, 0, 10.0 / 3, 1)], 0);
        Assert.Equal((0, 0.0), (d.Burst, d.Rate));
    }

    /// <summary>The model fleet: each node's row (live, stored grant), its local allowance and items in use, and the dead rows.</summary>
    private sealed class Fleet(int limit, int[] workers)
    {
        public const int ClaimsPerWorker = 2;

        private readonly bool[] _live = new bool[workers.Length];
        private readonly int[] _stored = new int[workers.Length];
        private readonly int[] _allowed = new int[workers.Length];
        private readonly bool[] _current = new bool[workers.Length];
        private readonly int[] _inUse = new int[workers.Length];
        private int _dead;

        public int Limit { get; private set; } = limit;

        /// <summary>Gets the items running on live nodes plus the dead rows.</summary>
        public int Running => Enumerable.Range(0, workers.Length).Where(i => _live[i]).Sum(i => _inUse[i]) + _dead;

        /// <summary>Gets the live nodes' stored grants plus the dead rows.</summary>
        public int Granted => Enumerable.Range(0, workers.Length).Where(i => _live[i]).Sum(i => _stored[i]) + _dead;

        public int InUse(int node) => _inUse[node];

        public int Stored(int node) => _live[node] ? _stored[node] : 0;

        /// <summary>Applies the event; returns whether it changed anything (a start the node may not make does nothing).</summary>
        public bool Apply(FleetEvent step)
        {
            var i = step.Node;
            switch (step.Kind)
            {
                case Kind.Join when !_live[i]:
                    (_live[i], _stored[i], _allowed[i], _current[i]) = (true, 0, 0, false);
                    return true;
                case Kind.Renew when _live[i]:
                    var others = Enumerable.Range(0, workers.Length).Where(j => j != i && _live[j])
                        .Select(j => new NodeGrant("n" + j, workers[j], workers[j] * ClaimsPerWorker, _stored[j], 0, 0)).ToList();
                    var grant = PermitAllocation.Allocate(new GrantLimits(Limit, null, 0), new NodeGrant("n" + i, workers[i], workers[i] * ClaimsPerWorker, 0, 0, 0), _inUse[i], others, _dead);
                    (_allowed[i], _stored[i], _current[i]) = (grant.Allowed!.Value, Math.Max(grant.Allowed.Value, _inUse[i]), true);
                    Assert.Equal(grant.Stored, _stored[i]);
                    return true;
                case Kind.Start when _live[i] && _current[i] && _inUse[i] < _allowed[i]:
                    _inUse[i]++;
                    return true;
                case Kind.Finish when _inUse[i] > 0:
                    _inUse[i]--;
                    return true;
                case Kind.Expire when _live[i]:
                    // Killed: the row expires; its items' rows stay running until reaped.
                    (_live[i], _dead, _inUse[i]) = (false, _dead + _inUse[i], 0);
                    return true;
                case Kind.Reap:
                    _dead = 0;
                    return true;
                case Kind.ChangeLimit:
                    Limit = step.Value;
                    Array.Clear(_current); // the version changed: no node starts until it renewed under it
                    return true;
            }

            return false;
        }
    }
}
