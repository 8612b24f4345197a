namespace BoundedWork.Hosting;

/// <summary>Settings of the BoundedWork health check added by <c>AddBoundedWork()</c>.</summary>
public sealed class BoundedWorkHealthCheckOptions
{
    /// <summary>
    /// Gets or sets the queue fill ratio (queue length divided by capacity) at or above which an executor is reported
    /// as degraded.
    /// </summary>
    /// <value>Defaults to 0.8 (80%). Must be greater than 0 and at most 1.</value>
    public double DegradedQueueFillRatio { get; set; } = 0.8;
}
