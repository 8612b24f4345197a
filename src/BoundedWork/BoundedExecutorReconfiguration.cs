namespace BoundedWork;

/// <summary>The outcome of <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettings)"/>: the settings before and after.</summary>
/// <param name="Previous">The settings before the change.</param>
/// <param name="Current">The settings after the change.</param>
public sealed record BoundedExecutorReconfiguration(BoundedExecutorSettings Previous, BoundedExecutorSettings Current)
{
    /// <summary>Gets the names of the settings whose value changed (<c>WorkerCount</c>, <c>QueueCapacity</c>, ...), in declaration order.</summary>
    public IReadOnlyList<string> ChangedSettings => [.. Previous.Diff(Current).Select(static change => change.Setting)];

    /// <summary>
    /// Describes what changed, for a log line: each changed setting with its value before and after, invariant, in
    /// declaration order (<c>WorkerCount 8 -&gt; 16, WaitTimeout 00:00:30 -&gt; infinite</c>); <c>no change</c> when nothing did.
    /// </summary>
    /// <returns>The description.</returns>
    public override string ToString()
    {
        var changes = Previous.Diff(Current);
        return changes.Count == 0 ? "no change" : string.Join(", ", changes.Select(static change => change.Change));
    }
}
