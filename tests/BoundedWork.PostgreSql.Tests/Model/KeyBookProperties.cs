using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.PostgreSql.Tests.Model;

/// <summary>
/// The per-key book (<see cref="KeyBook"/>, I3) and the hand-off planner (<see cref="HandOffPlanner"/>, I6) on one node
/// without a server: random interleavings of the claim loop's claims, handler ends (final or not), hand-offs begun,
/// committed (finding some of what they planned, prefetched items among them) or failed, with ends between their
/// planning and their commit, per-key limits lowered and raised, cancellations of prefetched items, and the node
/// stopping. The database's part (which rows a claim finds) is chosen at random; the node's bookkeeping is checked
/// against a model after every step.
/// </summary>
public sealed class KeyBookProperties
{
    private const int Limit = 6;
    private static readonly string[] Keys = ["a", "b", "c"];

    public enum Op
    {
        Claim,
        EndFinal,
        EndRetry,
        BeginHandOff,
        CommitHandOff,
        FailHandOff,
        LowerPerKey,
        RaisePerKey,
        CancelPrefetched,
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
                    (4, Gen.Constant(Op.Claim)), (6, Gen.Constant(Op.EndFinal)), (2, Gen.Constant(Op.EndRetry)),
                    (4, Gen.Constant(Op.BeginHandOff)), (4, Gen.Constant(Op.CommitHandOff)), (1, Gen.Constant(Op.FailHandOff)),
                    (1, Gen.Constant(Op.LowerPerKey)), (1, Gen.Constant(Op.RaisePerKey)), (1, Gen.Constant(Op.CancelPrefetched)),
                    (1, Gen.Frequency((1, Gen.Constant(Op.Stop)), (9, Gen.Constant(Op.EndFinal)))))
                from a in Gen.Choose(0, 7)
                from b in Gen.Choose(0, 7)
                select new Move(op, a, b)).ToArbitrary();
    }

    [Property(MaxTest = 2000, Arbitrary = [typeof(Arbitraries)])]
    public void I3_I6_KeyBookAndHandOff_PrefetchedItemsStartOnlyInPlaceOfAFinalEnd_AndTheBookkeepingBalances(Move[] steps)
    {
        var node = new Node();
        foreach (var step in steps)
        {
            node.Apply(step);
            node.Check(step);
        }

        // Drain: the hand-off in flight fails, every handler ends, the node stops: nothing is left held, booked or in use.
        node.Apply(new Move(Op.FailHandOff, 0, 0));
        node.Apply(new Move(Op.Stop, 0, 0));
        while (node.Executing.Count > 0)
        {
            node.Apply(new Move(Op.EndFinal, 0, 0));
            node.Check(new Move(Op.EndFinal, 0, 0));
        }

        Assert.Equal(0, node.Room.Held);
        Assert.Equal(0, node.Room.Booked);
        Assert.Equal(0, node.Permits.InUse);
        Assert.Equal(0, node.Book.PrefetchedCount);
    }

    private sealed class Node
    {
        private readonly ItemSource _items = new();
        private long _version = 1;
        private int _perKey = 3;
        private HandOffPlan? _plan;
        private bool _stopped;

        public Node()
        {
            Permits = new ClusterPermits(TimeProvider.System);
            Permits.NoGrant(_perKey, _version);
            Room = new NodeRoom(() => Limit);
            Book = new KeyBook(Permits);
            Planner = new HandOffPlanner(Room, Book, Permits);
        }

        public ClusterPermits Permits { get; }

        public NodeRoom Room { get; }

        public KeyBook Book { get; }

        public HandOffPlanner Planner { get; }

        public List<StoredItem> Executing { get; } = [];

        public Dictionary<string, StoredItem> Prefetched { get; } = new(StringComparer.Ordinal);

        public void Apply(Move step)
        {
            switch (step.Op)
            {
                case Op.Claim when !_stopped:
                {
                    // The claim loop: books room, takes permits, finds some items, holds them, unbooks.
                    var wanted = Room.Book(step.A, settling: 0);
                    if (wanted > 0)
                    {
                        var take = Permits.Take(wanted);
                        var found = Math.Min(step.B, take.Count);
                        Permits.Return(take.Count - found, take.Rated);
                        for (var i = 0; i < found; i++)
                        {
                            var item = _items.Next(Keys[(step.A + i) % Keys.Length]);
                            Hold(item);
                            Executing.Add(item);
                        }
                    }

                    Room.Unbook(wanted);
                    break;
                }

                case Op.EndFinal or Op.EndRetry when Executing.Count > 0:
                {
                    var item = Executing[step.A % Executing.Count];
                    var key = item.OrderingKey!;
                    var before = Executing.Count(i => i.OrderingKey == key);
                    Executing.Remove(item);
                    var kind = step.Op == Op.EndFinal ? OutcomeKind.Completed : OutcomeKind.Retry;
                    Permits.Finished(item, out _);
                    var started = Book.Ended(item, kind, out var release);
                    Room.Settled(1); // its outcome written
                    if (started is not null)
                    {
                        Assert.True(kind == OutcomeKind.Completed, $"A prefetched item #{started.Id} started at a {kind} end.");
                        Assert.Equal(key, started.OrderingKey);
                        Assert.Same(Prefetched[key], started);
                        Prefetched.Remove(key);
                        Executing.Add(started);
                    }

                    if (release is not null)
                    {
                        Assert.Same(Prefetched[key], release);
                        Prefetched.Remove(key);
                        Released(release);
                    }

                    Assert.True(Executing.Count(i => i.OrderingKey == key) <= before - 1 + (started is null ? 0 : 1), "A key runs more handlers after an end than before it.");
                    break;
                }

                case Op.BeginHandOff when _plan is null && !_stopped:
                {
                    var keys = Keys.Where((_, i) => ((step.A >> i) & 1) == 1).DefaultIfEmpty("a").ToArray();
                    _plan = Planner.Plan(keys, keys.Length, settling: 0, workers: Limit, out _);
                    break;
                }

                case Op.CommitHandOff when _plan is { } plan:
                {
                    _plan = null;
                    var claimed = new List<StoredItem>();
                    var prefetchedKeys = new HashSet<string>(StringComparer.Ordinal);
                    for (var i = 0; i < Math.Min(step.A, plan.Count); i++)
                    {
                        var key = plan.Keys[(step.B + i) % plan.Keys.Length];
                        var item = _items.Next(key);

                        // The statement returns at most one row per key with count M (a prefetch), for the keys the plan allows.
                        item.Prefetched = plan.PrefetchKeys?.Contains(key) == true && ((step.B >> i) & 1) == 1 && prefetchedKeys.Add(key);
                        claimed.Add(item);
                    }

                    if (!Planner.Committed(plan, claimed.Count))
                    {
                        break;
                    }

                    if (_stopped)
                    {
                        // Stopping: nothing starts; the items are held (their permits back) until the writer writes their releases.
                        Planner.Stopping(plan, claimed.Count);
                        Assert.Equal(Executing.Count + Prefetched.Count + claimed.Count, Room.Held);
                        Room.Settled(claimed.Count);
                        break;
                    }

                    foreach (var item in claimed)
                    {
                        item.PrefetchBound = item.Prefetched ? plan.PerKey : 0;
                        Hold(item);
                    }

                    var start = new List<StoredItem>();
                    List<StoredItem>? release = null;
                    Planner.Start(plan, claimed, start, ref release);
                    foreach (var item in claimed)
                    {
                        if (start.Contains(item))
                        {
                            Executing.Add(item);
                        }
                        else if (release?.Contains(item) == true)
                        {
                            Assert.True(item.Prefetched, "Only a prefetched item is given up at the commit.");
                            Released(item);
                        }
                        else
                        {
                            Assert.True(item.Prefetched, "An item claimed to start at once was kept.");
                            Assert.False(Prefetched.ContainsKey(item.OrderingKey!), "Two prefetched items of one key.");
                            Prefetched[item.OrderingKey!] = item;
                        }
                    }

                    break;
                }

                case Op.FailHandOff when _plan is { } plan:
                    _plan = null;
                    Planner.Failed(plan);
                    break;

                case Op.LowerPerKey or Op.RaisePerKey:
                {
                    _perKey = step.Op == Op.LowerPerKey ? Math.Max(_perKey - 1, 1) : Math.Min(_perKey + 1, 5);
                    Permits.NoGrant(_perKey, ++_version);
                    foreach (var item in Book.TakeNoLongerAllowed() ?? [])
                    {
                        Assert.True(item.PrefetchBound > _perKey || _perKey <= 1, $"Prefetched #{item.Id} (claimed under {item.PrefetchBound}) released under a per-key limit of {_perKey}.");
                        Assert.Same(Prefetched[item.OrderingKey!], item);
                        Prefetched.Remove(item.OrderingKey!);
                        Released(item);
                    }

                    break;
                }

                case Op.CancelPrefetched when Prefetched.Count > 0:
                {
                    var item = Prefetched.Values.ElementAt(step.A % Prefetched.Count);
                    Assert.True(Book.TryRemovePrefetched(item));
                    Assert.False(Book.TryRemovePrefetched(item));
                    Prefetched.Remove(item.OrderingKey!);
                    Released(item); // ends cancelled without running
                    break;
                }

                case Op.Stop when !_stopped:
                {
                    _stopped = true;
                    var released = Book.Close();
                    Assert.Equal(Prefetched.Values.OrderBy(i => i.Id), released.OrderBy(i => i.Id));
                    Prefetched.Clear();
                    foreach (var item in released)
                    {
                        Released(item);
                    }

                    break;
                }
            }
        }

        public void Check(Move step)
        {
            Book.AssertInvariants();
            Room.AssertInvariants();
            Permits.AssertInvariants();
            Assert.Equal(Prefetched.Count, Book.PrefetchedCount);
            foreach (var (key, item) in Prefetched)
            {
                Assert.Equal(item.Id, Book.PrefetchedByKey[key]);
                Assert.True(Executing.Exists(i => i.OrderingKey == key), $"Key {key} holds prefetched #{item.Id} with no handler of its key running here, after {step}.");
            }

            // Held: what executes and what is prefetched (outcomes are written at once in this model); booked: the hand-off in flight.
            Assert.Equal(Executing.Count + Prefetched.Count, Room.Held);
            Assert.Equal(_plan?.Count ?? 0, Room.Booked);
            Assert.True(Room.Held + Room.Booked <= Limit, $"held {Room.Held} + booked {Room.Booked} above {Limit} after {step}");
            Assert.Equal(Executing.Count + Prefetched.Count + (_plan?.Count ?? 0), Permits.InUse);
        }

        private void Hold(StoredItem item)
        {
            Room.Hold();
            Book.CountRunning(item);
        }

        /// <summary>A held item released unstarted: its end is posted (its permit back) and its release written.</summary>
        private void Released(StoredItem item)
        {
            Permits.Finished(item, out _);
            Assert.Null(Book.Ended(item, OutcomeKind.Released, out var orphan));
            Assert.Null(orphan);
            Room.Settled(1);
        }
    }
}
