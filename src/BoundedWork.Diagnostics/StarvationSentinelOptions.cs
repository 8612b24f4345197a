namespace BoundedWork.Diagnostics;

/// <summary>Settings of the ThreadPool starvation sentinel (<c>services.AddStarvationSentinel(o => ...)</c>).</summary>
public sealed class StarvationSentinelOptions
{
    /// <summary>Gets or sets how often the sentinel's thread queues a probe to the pool and reads it.</summary>
    /// <value>1 second. Between 10 ms and 1 minute.</value>
    public TimeSpan ProbeInterval { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// Gets or sets how long a probe may wait for a pool thread before the pool counts as starved (the admin console's
    /// threshold).
    /// </summary>
    /// <value>1 second. Greater than zero.</value>
    public TimeSpan StarvationThreshold { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>Gets or sets how long starvation must last before the sentinel diagnoses it.</summary>
    /// <value>3 seconds. At least <see cref="ProbeInterval"/> times two (the starved rule needs two readings).</value>
    public TimeSpan DiagnoseAfter { get; set; } = TimeSpan.FromSeconds(3);

    /// <summary>
    /// Gets or sets the least time between two diagnoses: a starvation that lasts, or comes back, is diagnosed at most
    /// once per interval.
    /// </summary>
    /// <value>5 minutes. Not negative.</value>
    public TimeSpan DiagnosisInterval { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// Gets or sets how long a diagnosis samples the app's stacks. The runtime pauses the app briefly for each sample
    /// (about every 10 ms), so the window is short.
    /// </summary>
    /// <value>500 milliseconds. Between 50 ms and 10 seconds.</value>
    public TimeSpan SampleDuration { get; set; } = TimeSpan.FromMilliseconds(500);
}
