namespace BoundedWork.PostgreSql.Internal;

/// <summary>The queue's cluster limits as a grant transaction reads them: running permits (null: none), starts per second (null: none) and the burst.</summary>
internal readonly record struct GrantLimits(int? MaxRunning, double? StartsPerSecond, int StartBurst);

/// <summary>A live node's row as another node's grant transaction reads it: its workers, the items it may hold (its demand) and its grant.</summary>
internal readonly record struct NodeGrant(string Node, int Workers, int Demand, int Running, double Rate, int Burst);

/// <summary>
/// A node's new grant: <see cref="Allowed"/> running permits it may use (null: no running limit), <see cref="Stored"/>
/// what its row records (never below what it has in use), its share of the start rate and of the burst, and its fair
/// share of the running permits (what it would get once the other nodes have renewed).
/// </summary>
internal readonly record struct PermitGrant(int? Allowed, int Stored, double Rate, int Burst, int FairRunning);

/// <summary>
/// The allocation of a queue's cluster permits among its live nodes, as a pure function of what one node's grant
/// transaction reads. Each node computes only its own grant; the others keep theirs until their own renewal.
/// </summary>
/// <remarks>
/// <para>
/// <b>Running permits.</b> The fair share is max-min: the permits not held by dead nodes' running rows
/// (<c>N - dead</c>) are spread over the live nodes by their worker counts (no node gets more than its workers while
/// another has fewer than its own), then what is left by the items each may hold beyond its workers; ties go to
/// node names in ordinal order. A node is allowed <c>min(fair, N - sum(other live grants) - dead)</c>, at least zero,
/// and its row records <c>max(allowed, in use)</c>: a grant that shrinks below what the node has in use is stored as
/// what it has in use, and the node starts nothing until it is below its allowance.
/// </para>
/// <para>
/// <b>Why the limit holds.</b> A node starts an item only while its in-use count is below its allowance, and only under
/// the settings version its grant was computed for. Its allowance plus the other nodes' stored grants plus the dead
/// rows was at most N when it was computed; afterwards another node's stored grant grows only by its own renewal,
/// which counts this node's stored grant (at least its allowance), and it shrinks to no less than what that node has in
/// use; a node whose row expires stops counting, but its running rows count as dead until they are reaped, and they
/// are no more than the grant it stored. So at every start, the items running on live nodes plus the dead rows are at
/// most N.
/// </para>
/// <para>
/// <b>Rate.</b> The burst B is spread in whole tokens in proportion to the nodes' worker counts (largest remainders),
/// so a node that gets a burst share can hold a whole token; the rate R is spread in proportion to the worker counts of
/// the nodes that get a burst share. Both are capped by what the other live nodes do not hold: the shares of the live
/// nodes sum to at most B and R.
/// </para>
/// </remarks>
internal static class PermitAllocation
{
    public static PermitGrant Allocate(GrantLimits limits, NodeGrant self, int inUse, IReadOnlyList<NodeGrant> others, long deadRunning)
    {
        var nodes = new List<NodeGrant>(others.Count + 1) { self };
        nodes.AddRange(others);
        int? allowed = null;
        var stored = inUse;
        var fairRunning = 0;
        if (limits.MaxRunning is int max)
        {
            var total = (int)Math.Clamp(max - deadRunning, 0, int.MaxValue);
            var first = MaxMin(total, nodes.Select(n => (n.Node, Math.Max(n.Workers, 0))).ToList());
            var second = MaxMin(total - first.Sum(), nodes.Select(n => (n.Node, Math.Max(n.Demand - n.Workers, 0))).ToList());
            fairRunning = first[0] + second[0];
            var room = (long)max - others.Sum(static n => (long)n.Running) - deadRunning;
            allowed = (int)Math.Clamp(Math.Min(fairRunning, room), 0, int.MaxValue);
            stored = Math.Max(allowed.Value, inUse);
        }

        double rate = 0;
        var burst = 0;
        if (limits.StartsPerSecond is double r && limits.StartBurst > 0)
        {
            var weights = nodes.Select(n => (n.Node, Math.Max(n.Workers, 1))).ToList();
            var bursts = Apportion(limits.StartBurst, weights);
            var sharing = Enumerable.Range(0, nodes.Count).Where(i => bursts[i] > 0).Sum(i => (double)weights[i].Item2);
            var fairRate = bursts[0] > 0 ? r * weights[0].Item2 / sharing : 0;
            burst = Math.Clamp(Math.Min(bursts[0], limits.StartBurst - others.Sum(static n => n.Burst)), 0, limits.StartBurst);
            rate = burst == 0 ? 0 : Math.Clamp(Math.Min(fairRate, r - others.Sum(static n => n.Rate)), 0, r);
            if (rate == 0)
            {
                burst = 0;
            }
        }

        return new PermitGrant(allowed, stored, rate, burst, fairRunning);
    }

    /// <summary>
    /// Spreads <paramref name="total"/> whole units in proportion to the weights (largest remainders; ties in ordinal
    /// order of name). Returns the shares in the weights' order.
    /// </summary>
    public static int[] Apportion(int total, IReadOnlyList<(string Name, int Weight)> weights)
    {
        var shares = new int[weights.Count];
        var sum = weights.Sum(static w => (double)w.Weight);
        if (total <= 0 || sum <= 0)
        {
            return shares;
        }

        var quotas = weights.Select(w => total * w.Weight / sum).ToArray();
        for (var i = 0; i < shares.Length; i++)
        {
            shares[i] = (int)Math.Floor(quotas[i]);
        }

        var left = total - shares.Sum();
        foreach (var i in Enumerable.Range(0, shares.Length)
                     .OrderByDescending(i => quotas[i] - shares[i])
                     .ThenBy(i => weights[i].Name, StringComparer.Ordinal)
                     .Take(left))
        {
            shares[i]++;
        }

        return shares;
    }

    /// <summary>
    /// Spreads <paramref name="total"/> units over demands, max-min fair: the smallest demands are met first; the
    /// rest share what is left equally, the remainder going one each in ordinal order of name. Returns the shares in
    /// the demands' order.
    /// </summary>
    public static int[] MaxMin(int total, IReadOnlyList<(string Name, int Demand)> demands)
    {
        var shares = new int[demands.Count];
        var order = Enumerable.Range(0, demands.Count)
            .OrderBy(i => demands[i].Demand)
            .ThenBy(i => demands[i].Name, StringComparer.Ordinal)
            .ToArray();
        var remaining = Math.Max(total, 0);
        for (var k = 0; k < order.Length; k++)
        {
            var left = order.Length - k;
            var level = remaining / left;
            if (demands[order[k]].Demand <= level)
            {
                shares[order[k]] = demands[order[k]].Demand;
                remaining -= demands[order[k]].Demand;
                continue;
            }

            // Every demand from here on is above the level: each gets the level, the remainder goes by name.
            var rest = order[k..].OrderBy(i => demands[i].Name, StringComparer.Ordinal).ToArray();
            var extra = remaining - (level * left);
            for (var j = 0; j < rest.Length; j++)
            {
                shares[rest[j]] = level + (j < extra ? 1 : 0);
            }

            break;
        }

        return shares;
    }
}
