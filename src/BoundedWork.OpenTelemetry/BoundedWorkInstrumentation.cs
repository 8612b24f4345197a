namespace BoundedWork.OpenTelemetry;

/// <summary>
/// The meters and activity sources of the BoundedWork packages, which <c>AddBoundedWorkInstrumentation()</c>
/// registers: every one, whether or not the app uses the package that publishes it (a name nobody publishes costs
/// nothing).
/// </summary>
/// <remarks>
/// <list type="table">
/// <listheader><term>Package</term><description>Meter / activity source</description></listheader>
/// <item><term>BoundedWork, BoundedWork.Hosting, BoundedWork.WorkQueues</term><description>meter <c>BoundedWork</c> (executors, typed work queues); activity source <c>BoundedWork</c> (<c>BoundedWork.Run</c>, one per item run)</description></item>
/// <item><term>BoundedWork.AspNetCore</term><description>meter <c>BoundedWork.Admin</c> (the operator console's changes and refusals)</description></item>
/// <item><term>BoundedWork.PostgreSql</term><description>meter <c>BoundedWork.PostgreSql</c> (durable queues); activity source <c>BoundedWork.PostgreSql</c> (<c>send {queue}</c> and <c>process {queue}</c>)</description></item>
/// </list>
/// </remarks>
public static class BoundedWorkInstrumentation
{
    /// <summary>The name of the durable queues' meter and activity source (<c>PostgreSqlWorkQueueDiagnostics</c> in BoundedWork.PostgreSql).</summary>
    internal const string PostgreSql = "BoundedWork.PostgreSql";

    /// <summary>The name of the operator console's meter (<c>BoundedWorkAdminDiagnostics</c> in BoundedWork.AspNetCore).</summary>
    internal const string Admin = "BoundedWork.Admin";

    /// <summary>Gets the names of every meter of the BoundedWork packages: <c>BoundedWork</c>, <c>BoundedWork.Admin</c>, <c>BoundedWork.PostgreSql</c>.</summary>
    public static IReadOnlyList<string> MeterNames { get; } = [BoundedWorkDiagnostics.MeterName, Admin, PostgreSql];

    /// <summary>Gets the names of every activity source of the BoundedWork packages: <c>BoundedWork</c>, <c>BoundedWork.PostgreSql</c>.</summary>
    public static IReadOnlyList<string> ActivitySourceNames { get; } = [BoundedWorkDiagnostics.ActivitySourceName, PostgreSql];
}
