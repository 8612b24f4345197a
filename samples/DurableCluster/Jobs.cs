using System.Text.Json.Serialization;
using BoundedWork.Hosting;

namespace DurableCluster;

/// <summary>One item of the queue: its batch, its number in the batch, and an ordering key (or none).</summary>
public sealed record Job(string Batch, int Number, string? Key);

/// <summary>Source-generated JSON metadata of <see cref="Job"/>: how the queue stores it.</summary>
[JsonSerializable(typeof(Job))]
public sealed partial class JobJson : JsonSerializerContext;

/// <summary>The slow downstream every item calls: a blocking call, as a legacy client or a synchronous SDK makes.</summary>
public sealed class Downstream(TimeSpan duration)
{
    private long _handled;

    public TimeSpan Duration { get; } = duration;

    public long Handled => Interlocked.Read(ref _handled);

    public void Call(Job job, CancellationToken cancellationToken)
    {
        // Blocks the worker's thread, never the ThreadPool's: the executor's workers are its own threads.
        if (cancellationToken.WaitHandle.WaitOne(Duration))
        {
            cancellationToken.ThrowIfCancellationRequested();
        }

        _ = job;
        Interlocked.Increment(ref _handled);
    }
}

/// <summary>Handles one job on one of this node's workers.</summary>
public sealed class JobHandler(Downstream downstream) : IBlockingWorkHandler<Job>
{
    public void Handle(Job item, CancellationToken cancellationToken) => downstream.Call(item, cancellationToken);
}
