using System.Diagnostics;

namespace BoundedWork;

/// <summary>
/// Names of the diagnostics every executor publishes: a <see cref="System.Diagnostics.Metrics.Meter"/> and an
/// <see cref="ActivitySource"/>, both called <c>BoundedWork</c>. Watch the metrics live with
/// <c>dotnet-counters monitor -n &lt;app&gt; --counters BoundedWork</c> or subscribe with OpenTelemetry.
/// </summary>
public static class BoundedWorkDiagnostics
{
    /// <summary>The name of the meter that holds every executor's instruments.</summary>
    public const string MeterName = "BoundedWork";

    /// <summary>The name of the activity source that traces each item's run.</summary>
    public const string ActivitySourceName = "BoundedWork";

    /// <summary>The name of the activity that covers one item's run on a worker.</summary>
    public const string RunActivityName = "BoundedWork.Run";

    /// <summary>The tag that names the executor on every measurement and activity.</summary>
    public const string ExecutorTag = "boundedwork.executor";

    /// <summary>The tag that names an item's outcome on <c>boundedwork.items</c>.</summary>
    public const string OutcomeTag = "boundedwork.outcome";

    /// <summary>
    /// The tag that names the tenant on the per-tenant instruments (<c>boundedwork.tenant.*</c>): a tenant with its own
    /// series, or <see cref="TenantStatistics.OtherTenants"/> for the rest (see <see cref="FairShareSettings.TenantSeriesLimit"/>).
    /// </summary>
    public const string TenantTag = "boundedwork.tenant";

    internal static readonly ActivitySource ActivitySource = new(ActivitySourceName, typeof(BoundedWorkDiagnostics).Assembly.GetName().Version?.ToString());
}
