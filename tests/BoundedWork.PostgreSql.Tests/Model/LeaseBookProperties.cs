using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.PostgreSql.Tests.Model;

/// <summary>
/// The lease book (<see cref="LeaseBook"/>, I7) without a server: random interleavings of deliveries held (some of the
/// same items again after a release, with a newer delivery token), held only to be released at a stop, their outcomes
/// posted and written, checked against a model after every step.
/// </summary>
public sealed class LeaseBookProperties
{
    public enum Op
    {
        Hold,
        HoldToRelease,
        Post,
        Write,
    }

    public sealed record Move(Op Op, int Item)
    {
        public override string ToString() => $"{Op}({Item})";
    }

    public static class Arbitraries
    {
        public static Arbitrary<Move[]> Moves() =>
            Gen.ArrayOf(
                from op in Gen.Frequency((4, Gen.Constant(Op.Hold)), (1, Gen.Constant(Op.HoldToRelease)), (3, Gen.Constant(Op.Post)), (3, Gen.Constant(Op.Write)))
                from item in Gen.Choose(1, 6)
                select new Move(op, item)).ToArbitrary();
    }

    [Property(MaxTest = 2000, Arbitrary = [typeof(Arbitraries)])]
    public void I7_Leases_RenewExactlyTheHeldDeliveries_ByToken_AndACancellationFindsOnlyThoseNotPosted(Move[] moves)
    {
        var book = new LeaseBook();
        var tokens = new Dictionary<long, long>();              // the row's latest delivery token
        var held = new Dictionary<long, StoredItem>();          // held by this node: outcome not written
        var unposted = new HashSet<long>();                     // held, outcome not posted
        foreach (var move in moves)
        {
            long id = move.Item;
            switch (move.Op)
            {
                case Op.Hold or Op.HoldToRelease when !held.ContainsKey(id):
                {
                    // A claim: a new delivery of the row (its token one higher than the last).
                    var token = tokens[id] = tokens.GetValueOrDefault(id) + 1;
                    var item = new StoredItem(ModelOwner.Instance, id, "{}", (int)token, 0, DateTimeOffset.UnixEpoch, false, null, null, delivery: token);
                    held[id] = item;
                    if (move.Op == Op.Hold)
                    {
                        book.Hold(item);
                        unposted.Add(id);
                    }
                    else
                    {
                        book.Lease(item);
                    }

                    break;
                }

                case Op.Post when unposted.Remove(id):
                    book.Posted(held[id]);
                    break;

                case Op.Write when held.TryGetValue(id, out var item) && !unposted.Contains(id):
                    book.Settled(new HeldDelivery(item.Id, item.Delivery));
                    held.Remove(id);
                    break;
            }

            var leases = book.Snapshot().OrderBy(lease => lease.Key).ToArray();
            Assert.Equal(held.OrderBy(pair => pair.Key).Select(pair => KeyValuePair.Create(pair.Key, pair.Value.Delivery)), leases);
            Assert.Equal(held.Count == 0, book.IsEmpty);
            for (long i = 1; i <= 6; i++)
            {
                var found = book.TryGetDelivery(i, out var delivery);
                Assert.Equal(unposted.Contains(i), found);
                if (found)
                {
                    Assert.Same(held[i], delivery);
                }
            }
        }
    }
}
