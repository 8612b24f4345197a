namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// What became of this node's deliveries, per tenant: completed, failed (a retry stored) and dead-lettered, counted as
/// each outcome is posted. A bounded number of tenants get their own counts: the first <c>seriesLimit</c> tenants seen
/// (as an executor's tenants: <see cref="FairShareSettings.TenantSeriesLimit"/>); the rest are counted together as
/// <see cref="TenantStatistics.OtherTenants"/>, so the book and the metrics never hold more than limit + 1 tenants.
/// Items without a tenant are not counted here (the queue's own counters count every item).
/// </summary>
internal sealed class TenantOutcomes(int seriesLimit)
{
    private readonly Lock _sync = new();
    private readonly Dictionary<string, Counts> _tenants = new(StringComparer.Ordinal);

    /// <summary>An outcome counted per tenant.</summary>
    public enum Outcome
    {
        Completed,
        Failed,
        DeadLettered,
    }

    /// <summary>Counts <paramref name="outcome"/> for <paramref name="tenant"/> (nothing for an item without one).</summary>
    public void Add(string? tenant, Outcome outcome)
    {
        if (tenant is null)
        {
            return;
        }

        Counts counts;
        lock (_sync)
        {
            if (!_tenants.TryGetValue(tenant, out counts!))
            {
                var series = _tenants.Count - (_tenants.ContainsKey(TenantStatistics.OtherTenants) ? 1 : 0) < seriesLimit ? tenant : TenantStatistics.OtherTenants;
                if (!_tenants.TryGetValue(series, out counts!))
                {
                    counts = new Counts();
                    _tenants.Add(series, counts);
                }
            }
        }

        _ = outcome switch
        {
            Outcome.Completed => Interlocked.Increment(ref counts.Completed),
            Outcome.Failed => Interlocked.Increment(ref counts.Failed),
            _ => Interlocked.Increment(ref counts.DeadLettered),
        };
    }

    /// <summary>Reads every series: the tenants with their own counts, then <see cref="TenantStatistics.OtherTenants"/> when any tenant was counted there.</summary>
    public List<(string Tenant, long Completed, long Failed, long DeadLettered)> Read()
    {
        lock (_sync)
        {
            return [.. _tenants.Select(t => (t.Key, Volatile.Read(ref t.Value.Completed), Volatile.Read(ref t.Value.Failed), Volatile.Read(ref t.Value.DeadLettered)))];
        }
    }

    private sealed class Counts
    {
#pragma warning disable SA1401, CA1051 // counted with Interlocked: fields by design
        public long Completed;
        public long Failed;
        public long DeadLettered;
#pragma warning restore SA1401, CA1051
    }
}

/// <summary>A node's per-tenant outcome counts, for the storage's meter.</summary>
internal interface ITenantOutcomeSource
{
    string QueueName { get; }

    TenantOutcomes TenantOutcomes { get; }
}
