using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Adds what another BoundedWork package knows about an executor to the BoundedWork health check: BoundedWork.WorkQueues
/// registers one that reads the durable storage of each typed work queue. The health check asks every registered one,
/// in registration order, after it has assessed the executor itself.
/// </summary>
internal interface IExecutorHealthContributor
{
    /// <summary>Assesses one executor further.</summary>
    /// <param name="statistics">The executor's statistics, as the health check read them.</param>
    /// <param name="status">The executor's status so far; lower it (never raise it) for a problem found here.</param>
    /// <param name="problem">The sentence that explains <paramref name="status"/>; replace it when lowering the status.</param>
    /// <param name="data">The executor's entry in the result's data: add entries of this contributor's own.</param>
    void Assess(BoundedExecutorStatistics statistics, ref HealthStatus status, ref string? problem, IDictionary<string, object> data);
}
