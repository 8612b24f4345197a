using System.Collections.ObjectModel;
using System.Globalization;

namespace BoundedWork;

/// <summary>
/// Fair share across tenants (<see cref="BoundedExecutorSettings.FairShare"/>): items submitted for a tenant
/// (<see cref="BoundedExecutor.ForTenant(string)"/>) are taken in weighted turn, so a tenant's share of the workers
/// follows its weight while several tenants have a backlog, and one tenant's flood never starves the others.
/// Change it at runtime with <c>with</c>: <c>executor.Reconfigure(s =&gt; s with { FairShare = s.FairShare!.WithWeight("acme", 4) })</c>.
/// </summary>
public sealed record FairShareSettings
{
    /// <summary>The largest weight a tenant may have: 1,000.</summary>
    public const int MaxWeight = 1000;

    /// <summary>The longest tenant name: 100 characters.</summary>
    public const int MaxTenantLength = 100;

    /// <summary>The most tenants that may have their own statistics and metric series: 1,000.</summary>
    public const int MaxTenantSeriesLimit = 1000;

    private static readonly IReadOnlyDictionary<string, int> s_noWeights = new ReadOnlyDictionary<string, int>(new Dictionary<string, int>());

    /// <summary>Gets the weight of a tenant not listed in <see cref="Weights"/>.</summary>
    /// <value>1; between 1 and <see cref="MaxWeight"/>.</value>
    public int DefaultWeight { get; init; } = 1;

    /// <summary>
    /// Gets the weights of particular tenants, by tenant (ordinal, case-sensitive). A tenant of weight 3 gets three times
    /// the share of a tenant of weight 1 while both have a backlog.
    /// </summary>
    /// <value>Empty: every tenant has <see cref="DefaultWeight"/>. Each weight between 1 and <see cref="MaxWeight"/>.</value>
    public IReadOnlyDictionary<string, int> Weights { get; init; } = s_noWeights;

    /// <summary>
    /// Gets the most items of one tenant running at once; a tenant at its bound waits while the others' items run, and
    /// a worker never sits idle for it while another tenant has an item queued.
    /// </summary>
    /// <value><see langword="null"/>: no bound (the worker count bounds it). At least 1.</value>
    public int? MaxRunningPerTenant { get; init; }

    /// <summary>
    /// Gets the most items one tenant may hold in the queue (queued, or waiting for room under the Wait policy). Past
    /// it, the executor's rejection policy applies to that tenant alone: Abort and Wait refuse the item at once (a
    /// producer never waits for its own tenant's bound), Discard drops it, DiscardOldest evicts that tenant's oldest
    /// queued item, CallerRuns runs it on the submitting thread. Each refusal is counted under the tenant.
    /// </summary>
    /// <value><see langword="null"/>: no bound of its own (the queue capacity bounds it). At least 1.</value>
    public int? MaxQueuedPerTenant { get; init; }

    /// <summary>
    /// Gets a value indicating whether, when the executor's queue is full, the tenant with the longest backlog is refused
    /// first: its newest queued item gives way to the new item of a tenant with a shorter backlog, and a new item of the
    /// tenant with the longest backlog is refused (as <see cref="RejectionReason.QueueFull"/>). When
    /// <see langword="false"/>, a full queue applies the executor's rejection policy as for any item.
    /// </summary>
    /// <value><see langword="false"/>.</value>
    public bool ShedLongestBacklog { get; init; }

    /// <summary>
    /// Gets how many tenants get their own statistics and metric series; tenants past it are counted together as
    /// <see cref="TenantStatistics.OtherTenants"/>, so a metrics backend is never flooded by tenant names.
    /// </summary>
    /// <value>20; between 0 and <see cref="MaxTenantSeriesLimit"/>.</value>
    public int TenantSeriesLimit { get; init; } = 20;

    /// <summary>Gets the weight of <paramref name="tenant"/>: its entry in <see cref="Weights"/>, or <see cref="DefaultWeight"/>.</summary>
    /// <param name="tenant">The tenant.</param>
    /// <returns>The weight.</returns>
    public int GetWeight(string tenant) => Weights.TryGetValue(tenant, out var weight) ? weight : DefaultWeight;

    /// <summary>Returns these settings with <paramref name="tenant"/>'s weight set to <paramref name="weight"/>.</summary>
    /// <param name="tenant">The tenant.</param>
    /// <param name="weight">Its weight, between 1 and <see cref="MaxWeight"/>.</param>
    /// <returns>A copy with the weight.</returns>
    /// <exception cref="ArgumentException"><paramref name="tenant"/> is not a valid tenant name.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="weight"/> is out of range.</exception>
    public FairShareSettings WithWeight(string tenant, int weight)
    {
        ThrowIfInvalidTenant(tenant, nameof(tenant));
        if (weight < 1 || weight > MaxWeight)
        {
            throw new ArgumentOutOfRangeException(nameof(weight), weight, $"A tenant's weight must be between 1 and {MaxWeight}.");
        }

        var weights = new Dictionary<string, int>(Weights, StringComparer.Ordinal) { [tenant] = weight };
        return this with { Weights = new ReadOnlyDictionary<string, int>(weights) };
    }

    /// <summary>Returns why <paramref name="tenant"/> is not a valid tenant name, or <see langword="null"/> when it is.</summary>
    /// <param name="tenant">The name to check: 1 to <see cref="MaxTenantLength"/> characters, no control characters.</param>
    /// <returns>The message, or <see langword="null"/>.</returns>
    public static string? GetTenantError(string? tenant) =>
        string.IsNullOrEmpty(tenant) ? "A tenant must not be null or empty."
        : tenant.Length > MaxTenantLength ? $"A tenant must be at most {MaxTenantLength} characters (was {tenant.Length})."
        : tenant.Any(char.IsControl) ? "A tenant must not contain control characters."
        : null;

    /// <summary>Compares every setting, the weights by value.</summary>
    /// <param name="other">The other settings.</param>
    /// <returns><see langword="true"/> when every setting is the same.</returns>
    public bool Equals(FairShareSettings? other) =>
        other is not null
        && DefaultWeight == other.DefaultWeight
        && MaxRunningPerTenant == other.MaxRunningPerTenant
        && MaxQueuedPerTenant == other.MaxQueuedPerTenant
        && ShedLongestBacklog == other.ShedLongestBacklog
        && TenantSeriesLimit == other.TenantSeriesLimit
        && Weights.Count == other.Weights.Count
        && Weights.All(w => other.Weights.TryGetValue(w.Key, out var v) && v == w.Value);

    /// <inheritdoc/>
    public override int GetHashCode() => HashCode.Combine(DefaultWeight, MaxRunningPerTenant, MaxQueuedPerTenant, ShedLongestBacklog, TenantSeriesLimit, Weights.Count);

    /// <summary>Returns why these settings are invalid (each message names its setting), or <see langword="null"/>.</summary>
    internal string? GetValidationError()
    {
        var errors = new List<string>();
        if (DefaultWeight < 1 || DefaultWeight > MaxWeight)
        {
            errors.Add($"FairShare.DefaultWeight must be between 1 and {MaxWeight} (was {DefaultWeight}).");
        }

        if (Weights is null)
        {
            errors.Add("FairShare.Weights must not be null.");
        }
        else
        {
            foreach (var (tenant, weight) in Weights)
            {
                if (GetTenantError(tenant) is { } error)
                {
                    errors.Add($"FairShare.Weights: {error}");
                }
                else if (weight < 1 || weight > MaxWeight)
                {
                    errors.Add($"FairShare.Weights['{tenant}'] must be between 1 and {MaxWeight} (was {weight}).");
                }
            }
        }

        if (MaxRunningPerTenant < 1)
        {
            errors.Add($"FairShare.MaxRunningPerTenant must be at least 1, or null for no bound (was {MaxRunningPerTenant}).");
        }

        if (MaxQueuedPerTenant < 1)
        {
            errors.Add($"FairShare.MaxQueuedPerTenant must be at least 1, or null for no bound (was {MaxQueuedPerTenant}).");
        }

        if (TenantSeriesLimit < 0 || TenantSeriesLimit > MaxTenantSeriesLimit)
        {
            errors.Add($"FairShare.TenantSeriesLimit must be between 0 and {MaxTenantSeriesLimit} (was {TenantSeriesLimit}).");
        }

        return errors.Count == 0 ? null : string.Join(" ", errors);
    }

    /// <summary>A short form for logs and diffs.</summary>
    /// <returns>The settings, invariant.</returns>
    public override string ToString() => string.Create(CultureInfo.InvariantCulture,
        $"FairShare {{ DefaultWeight = {DefaultWeight}, Weights = [{string.Join(", ", Weights.OrderBy(w => w.Key, StringComparer.Ordinal).Select(w => $"{w.Key}: {w.Value}"))}], MaxRunningPerTenant = {MaxRunningPerTenant?.ToString(CultureInfo.InvariantCulture) ?? "none"}, MaxQueuedPerTenant = {MaxQueuedPerTenant?.ToString(CultureInfo.InvariantCulture) ?? "none"}, ShedLongestBacklog = {ShedLongestBacklog}, TenantSeriesLimit = {TenantSeriesLimit} }}");

    internal static void ThrowIfInvalidTenant(string tenant, string parameterName)
    {
        ArgumentNullException.ThrowIfNull(tenant, parameterName);
        if (GetTenantError(tenant) is { } error)
        {
            throw new ArgumentException(error, parameterName);
        }
    }
}
