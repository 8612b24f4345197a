namespace BoundedWork;

/// <summary>The outcome of <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettingsChange)"/>: the settings before and after.</summary>
/// <param name="Previous">The settings before the change.</param>
/// <param name="Current">The settings after the change.</param>
public sealed record BoundedExecutorReconfiguration(BoundedExecutorSettings Previous, BoundedExecutorSettings Current);
