using System.Collections.ObjectModel;
using System.Globalization;

namespace BoundedWork.Hosting;

/// <summary>
/// Fair share across tenants for a durable queue, fleet-wide (<see cref="WorkQueueClusterSettings.FairShare"/>): claims
/// take ready items from the tenants with ready items in weighted turn (<see cref="EnqueueOptions.Tenant"/>), not in one
/// global order, a tenant never has more than <see cref="MaxRunningPerTenant"/> items running across the fleet, and
/// its items are claimed at most <see cref="StartsPerSecondPerTenant"/> per second (with <see cref="StartsBurstPerTenant"/>).
/// Change it with the queue's other fleet-wide settings, for example
/// <c>s =&gt; s with { FairShare = (s.FairShare ?? new()).WithWeight("acme", 4) }</c>.
/// </summary>
public sealed record WorkQueueFairShare
{
    /// <summary>The largest weight a tenant may have: 1,000.</summary>
    public const int MaxWeight = 1000;

    /// <summary>The most tenants that may have a weight of their own: 10,000.</summary>
    public const int MaxWeights = 10_000;

    private static readonly IReadOnlyDictionary<string, int> s_noWeights = new ReadOnlyDictionary<string, int>(new Dictionary<string, int>());

    /// <summary>Gets the weight of a tenant not listed in <see cref="Weights"/>, and of the items without a tenant.</summary>
    /// <value>1; between 1 and <see cref="MaxWeight"/>.</value>
    public int DefaultWeight { get; init; } = 1;

    /// <summary>
    /// Gets the weights of particular tenants, by tenant (ordinal). A tenant of weight 3 holds three times the running
    /// items of a tenant of weight 1 while both have ready items.
    /// </summary>
    /// <value>Empty: every tenant has <see cref="DefaultWeight"/>. Each weight between 1 and <see cref="MaxWeight"/>; at most <see cref="MaxWeights"/> entries.</value>
    public IReadOnlyDictionary<string, int> Weights { get; init; } = s_noWeights;

    /// <summary>
    /// Gets the most items of one tenant running at once across every node (claimed and not finished: started,
    /// held by a node to start, or having their outcome written). Items without a tenant are not bound by it.
    /// </summary>
    /// <value><see langword="null"/>: no bound. At least 1.</value>
    public int? MaxRunningPerTenant { get; init; }

    /// <summary>
    /// Gets the most items of one tenant that may start per second across every node: a token bucket per tenant of this
    /// rate and <see cref="StartsBurstPerTenant"/>, kept in the database, refilled from the database's clock and spent
    /// where items are claimed (one token per item claimed; a token spent is not given back, even when the node that
    /// claimed the item dies). A tenant without tokens takes no turn: the other tenants' items are claimed meanwhile.
    /// Items without a tenant are not limited by it. A change binds, fleet-wide, from the next claim.
    /// </summary>
    /// <value><see langword="null"/>: no limit. A finite number above 0.</value>
    public double? StartsPerSecondPerTenant { get; init; }

    /// <summary>
    /// Gets the most items of one tenant that may start at once after it was idle (the size of its token bucket); only
    /// read when <see cref="StartsPerSecondPerTenant"/> is set.
    /// </summary>
    /// <value><see langword="null"/>: one second's worth of the rate, rounded up, at least 1. At least 1.</value>
    public int? StartsBurstPerTenant { get; init; }

    /// <summary>Gets the weight of <paramref name="tenant"/>: its entry in <see cref="Weights"/>, or <see cref="DefaultWeight"/>.</summary>
    /// <param name="tenant">The tenant.</param>
    /// <returns>The weight.</returns>
    public int GetWeight(string tenant) => Weights.TryGetValue(tenant, out var weight) ? weight : DefaultWeight;

    /// <summary>Returns these settings with <paramref name="tenant"/>'s weight set to <paramref name="weight"/> (checked when the settings are stored).</summary>
    /// <param name="tenant">The tenant.</param>
    /// <param name="weight">Its weight.</param>
    /// <returns>A copy with the weight.</returns>
    public WorkQueueFairShare WithWeight(string tenant, int weight)
    {
        ArgumentNullException.ThrowIfNull(tenant);
        var weights = new Dictionary<string, int>(Weights, StringComparer.Ordinal) { [tenant] = weight };
        return this with { Weights = new ReadOnlyDictionary<string, int>(weights) };
    }

    /// <summary>Compares every setting, the weights by value.</summary>
    /// <param name="other">The other settings.</param>
    /// <returns><see langword="true"/> when every setting is the same.</returns>
    public bool Equals(WorkQueueFairShare? other) =>
        other is not null
        && DefaultWeight == other.DefaultWeight
        && MaxRunningPerTenant == other.MaxRunningPerTenant
        && Nullable.Equals(StartsPerSecondPerTenant, other.StartsPerSecondPerTenant)
        && StartsBurstPerTenant == other.StartsBurstPerTenant
        && (Weights?.Count ?? 0) == (other.Weights?.Count ?? 0)
        && (Weights is null || other.Weights is null || Weights.All(w => other.Weights.TryGetValue(w.Key, out var v) && v == w.Value));

    /// <inheritdoc/>
    public override int GetHashCode() => HashCode.Combine(DefaultWeight, MaxRunningPerTenant, Weights?.Count ?? 0, StartsPerSecondPerTenant, StartsBurstPerTenant);

    /// <summary>A short form for logs and the audit: the default weight, the weights by tenant, the bound, the start rate and its burst.</summary>
    /// <returns>The settings, invariant.</returns>
    public override string ToString() => string.Create(CultureInfo.InvariantCulture,
        $"FairShare {{ DefaultWeight = {DefaultWeight}, Weights = [{string.Join(", ", (Weights ?? s_noWeights).OrderBy(w => w.Key, StringComparer.Ordinal).Select(w => $"{w.Key}: {w.Value}"))}], MaxRunningPerTenant = {MaxRunningPerTenant?.ToString(CultureInfo.InvariantCulture) ?? "none"}, StartsPerSecondPerTenant = {StartsPerSecondPerTenant?.ToString(CultureInfo.InvariantCulture) ?? "none"}, StartsBurstPerTenant = {StartsBurstPerTenant?.ToString(CultureInfo.InvariantCulture) ?? "none"} }}");
}
