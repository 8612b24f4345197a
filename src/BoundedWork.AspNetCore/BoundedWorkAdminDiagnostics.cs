namespace BoundedWork.AspNetCore;

/// <summary>Names of the diagnostics the operator console publishes.</summary>
public static class BoundedWorkAdminDiagnostics
{
    /// <summary>
    /// The name of the meter that counts the console's changes, refused requests and dead-letter operations
    /// (<c>boundedwork.admin.changes</c>, <c>boundedwork.admin.refused</c>, <c>boundedwork.admin.dead_letters</c>).
    /// </summary>
    public const string MeterName = "BoundedWork.Admin";
}
