namespace BoundedWork.Benchmarks.Compare;

/// <summary>One side of the <c>compare</c> harness, built for one producers/workers shape.</summary>
internal interface ICompareContender : IDisposable
{
    /// <summary>Gets the name printed in the results (<c>executor</c>, <c>executor-flow-off</c>, <c>raw-channel</c>).</summary>
    string Name { get; }

    /// <summary>Runs one timed round and checks it (nothing lost); returns its figures per item.</summary>
    RoundResult RunRound();
}
