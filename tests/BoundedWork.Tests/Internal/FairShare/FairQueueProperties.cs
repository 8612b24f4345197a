using BoundedWork.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.Tests.Internal.FairShare;

/// <summary>
/// The fair-share scheduler (<see cref="FairQueue{T}"/>) driven by any arrival pattern: nothing is lost or served
/// twice and each tenant is served oldest first; while two tenants stay backlogged their shares follow their weights
/// (within two turns); a backlogged tenant is served within one round; and a tenant never runs more than its bound.
/// </summary>
public sealed class FairQueueProperties
{
    /// <summary>One step: items arrive for a tenant, the workers take some, or running items finish.</summary>
    public sealed record Move(int Tenant, int Arrivals, int Serves, int Finishes)
    {
        public override string ToString() => $"t{Tenant}+{Arrivals}/serve {Serves}/finish {Finishes}";
    }

    /// <summary>Tenants' weights, a running bound (0: none) and the steps.</summary>
    public sealed record Script(int[] Weights, int MaxRunning, Move[] Moves)
    {
        public override string ToString() => $"weights=[{string.Join(",", Weights)}] maxRunning={MaxRunning} steps=[{string.Join(", ", Moves.AsEnumerable())}]";
    }

    [Property(MaxTest = 300, Arbitrary = [typeof(Arbitraries)])]
    public void Dequeue_AnyArrivals_NothingLostOrServedTwice_OldestFirstPerTenant(Script script)
    {
        var run = new Run(script);
        run.Play(checkShares: false);
        run.Drain();
        foreach (var (tenant, queue) in run.Sent)
        {
            Assert.Equal(queue, run.Served.GetValueOrDefault(tenant, []));
        }

        Assert.Equal(0, run.Queue.Count);
    }

    [Property(MaxTest = 300, Arbitrary = [typeof(Arbitraries)])]
    public void Dequeue_WhileTwoTenantsStayBacklogged_SharesFollowWeights(Script script) =>
        new Run(script with { MaxRunning = 0 }).Play(checkShares: true);

    [Property(MaxTest = 300, Arbitrary = [typeof(Arbitraries)])]
    public void Dequeue_AnyArrivals_BackloggedTenantServedWithinOneRound_RunningNeverAboveBound(Script script)
    {
        var run = new Run(script);
        run.Play(checkShares: false);
        run.Drain();
        Assert.True(run.LongestGap <= run.Round, $"A tenant waited {run.LongestGap} serves while eligible; one round is {run.Round}.");
        Assert.True(run.MaxRunningSeen <= (script.MaxRunning == 0 ? int.MaxValue : script.MaxRunning));
    }

    [Fact]
    public void Dequeue_WeightsThreeToOne_ServesThreeToOne()
    {
        var queue = new FairQueue<int>(t => t == "a" ? 3 : 1, int.MaxValue);
        for (var i = 0; i < 40; i++)
        {
            queue.Enqueue(queue.LaneOf("a"), i);
            queue.Enqueue(queue.LaneOf("b"), i);
        }

        var served = new Dictionary<string, int> { ["a"] = 0, ["b"] = 0 };
        for (var i = 0; i < 40; i++)
        {
            Assert.True(queue.TryDequeue(out var lane, out _));
            served[lane.Tenant]++;
            queue.Finished(lane);
        }

        Assert.Equal(30, served["a"]);
        Assert.Equal(10, served["b"]);
    }

    [Fact]
    public void Finished_LastItemOfIdleTenant_ForgetsTheTenant()
    {
        var queue = new FairQueue<int>(_ => 1, int.MaxValue);
        queue.Enqueue(queue.LaneOf("a"), 1);
        Assert.True(queue.TryDequeue(out var lane, out _));
        Assert.NotNull(queue.Find("a"));
        queue.Finished(lane);
        Assert.Null(queue.Find("a"));
    }

    /// <summary>The generators.</summary>
    public static class Arbitraries
    {
        public static Arbitrary<Script> Scripts() =>
            (from tenants in Gen.Choose(2, 6)
             from weights in Gen.ArrayOf(Gen.Frequency((3, Gen.Choose(1, 3)), (1, Gen.Choose(4, 20))), tenants)
             from maxRunning in Gen.Frequency((2, Gen.Constant(0)), (1, Gen.Choose(1, 3)))
             from moves in Gen.ArrayOf(
                 from tenant in Gen.Choose(0, tenants - 1)
                 from arrivals in Gen.Frequency((3, Gen.Choose(0, 3)), (1, Gen.Choose(10, 60)))
                 from serves in Gen.Choose(0, 6)
                 from finishes in Gen.Choose(0, 6)
                 select new Move(tenant, arrivals, serves, finishes), 120)
             select new Script(weights, maxRunning, moves)).ToArbitrary();
    }

    /// <summary>A script played against the scheduler, with the model's bookkeeping.</summary>
    private sealed class Run
    {
        private readonly Script _script;
        private readonly List<FairQueue<int>.Lane> _running = [];
        private readonly Dictionary<string, int> _lastServedAt = [];
        private readonly Dictionary<(string, string), (int I, int J)> _pairs = [];
        private int _next;
        private int _serves;

        public Run(Script script)
        {
            _script = script;
            Queue = new FairQueue<int>(t => script.Weights[int.Parse(t[1..], System.Globalization.CultureInfo.InvariantCulture)], script.MaxRunning == 0 ? int.MaxValue : script.MaxRunning);
            Round = script.Weights.Sum();
        }

        public FairQueue<int> Queue { get; }

        public Dictionary<string, List<int>> Sent { get; } = [];

        public Dictionary<string, List<int>> Served { get; } = [];

        public int Round { get; }

        public int LongestGap { get; private set; }

        public int MaxRunningSeen { get; private set; }

        public void Play(bool checkShares)
        {
            foreach (var step in _script.Moves)
            {
                var tenant = "t" + step.Tenant;
                for (var i = 0; i < step.Arrivals; i++)
                {
                    var lane = Queue.LaneOf(tenant);
                    if (lane.Items.Count == 0)
                    {
                        _lastServedAt[tenant] = _serves; // backlogged from now
                    }

                    Queue.Enqueue(lane, _next);
                    (Sent.TryGetValue(tenant, out var list) ? list : Sent[tenant] = []).Add(_next++);
                }

                for (var i = 0; i < step.Serves; i++)
                {
                    Serve(checkShares);
                }

                for (var i = 0; i < step.Finishes && _running.Count != 0; i++)
                {
                    Queue.Finished(_running[0]);
                    _running.RemoveAt(0);
                }

                Queue.AssertInvariants();
            }
        }

        public void Drain()
        {
            while (Queue.Count != 0)
            {
                if (!Serve(checkShares: false))
                {
                    Assert.NotEmpty(_running); // every backlogged tenant is at its bound: something runs
                    Queue.Finished(_running[0]);
                    _running.RemoveAt(0);
                }
            }
        }

        private bool Serve(bool checkShares)
        {
            var eligibleBefore = Queue.Lanes.Where(l => l.Items.Count != 0 && l.Running < (_script.MaxRunning == 0 ? int.MaxValue : _script.MaxRunning)).Select(l => l.Tenant).ToList();
            var backlogged = Queue.Lanes.Where(l => l.Items.Count != 0).Select(l => l.Tenant).ToHashSet();
            if (!Queue.TryDequeue(out var lane, out var item))
            {
                Assert.Empty(eligibleBefore); // it serves whenever some tenant may start an item
                return false;
            }

            _serves++;
            (Served.TryGetValue(lane.Tenant, out var list) ? list : Served[lane.Tenant] = []).Add(item);
            _running.Add(lane);
            MaxRunningSeen = Math.Max(MaxRunningSeen, lane.Running);

            // Gaps: how many serves an eligible, backlogged tenant waited (only while it stayed eligible throughout).
            foreach (var tenant in eligibleBefore)
            {
                if (tenant != lane.Tenant)
                {
                    LongestGap = Math.Max(LongestGap, _serves - _lastServedAt.GetValueOrDefault(tenant));
                }
            }

            _lastServedAt[lane.Tenant] = _serves;
            foreach (var t in _lastServedAt.Keys.ToList())
            {
                if (!eligibleBefore.Contains(t))
                {
                    _lastServedAt[t] = _serves; // not eligible: its wait restarts
                }
            }

            if (checkShares)
            {
                CheckShares(lane.Tenant, backlogged);
                if (lane.Items.Count == 0)
                {
                    // It left the round: its windows close, even if it is backlogged again before the next serve.
                    foreach (var key in _pairs.Keys.Where(k => k.Item1 == lane.Tenant || k.Item2 == lane.Tenant).ToList())
                    {
                        _pairs.Remove(key);
                    }
                }
            }

            return true;
        }

        /// <summary>For every pair backlogged without a break since their window opened: served/weight differ by at most two turns.</summary>
        private void CheckShares(string served, HashSet<string> backlogged)
        {
            foreach (var key in _pairs.Keys.ToList())
            {
                if (!backlogged.Contains(key.Item1) || !backlogged.Contains(key.Item2))
                {
                    _pairs.Remove(key);
                }
            }

            foreach (var a in backlogged)
            {
                foreach (var b in backlogged)
                {
                    if (string.CompareOrdinal(a, b) < 0 && !_pairs.ContainsKey((a, b)))
                    {
                        _pairs[(a, b)] = (0, 0);
                    }
                }
            }

            foreach (var key in _pairs.Keys.ToList())
            {
                var (i, j) = _pairs[key];
                i += key.Item1 == served ? 1 : 0;
                j += key.Item2 == served ? 1 : 0;
                _pairs[key] = (i, j);
                var wi = Queue.LaneOf(key.Item1).Weight;
                var wj = Queue.LaneOf(key.Item2).Weight;
                var lag = Math.Abs(((double)i / wi) - ((double)j / wj));
                Assert.True(lag <= 2.0 + 1e-9, $"{key.Item1} (weight {wi}) served {i}, {key.Item2} (weight {wj}) served {j}: {lag:F2} turns apart.");
            }
        }
    }
}
