namespace BoundedWork.Hosting.Tests;

/// <summary>The tests that starve the ThreadPool run alone: see <see cref="StarvationCollection"/>.</summary>
[CollectionDefinition(StarvationCollection.Name, DisableParallelization = true)]
public sealed class StarvationCollectionDefinition;
