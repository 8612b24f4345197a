using System.Diagnostics;
using BoundedWork.Hosting;

namespace BoundedWork.Benchmarks.FairShare;

/// <summary>One item's tenant and when it was submitted.</summary>
internal sealed record Probe(int Tenant, long Enqueued);

/// <summary>The typed queue's handler: records the item's queue wait, then blocks for the item's time.</summary>
internal sealed class ProbeHandler(Recorder recorder) : IBlockingWorkHandler<Probe>
{
    public void Handle(Probe item, CancellationToken cancellationToken) => recorder.Run(item);
}

/// <summary>
/// What a typed-queue run saw: each tenant's waits and the completions while measuring, the first completions per
/// tenant (the shares), and the dead letters of reason <see cref="DeadLetterReason.Rejected"/> per tenant: all of them,
/// and those shed from the queue to make room for another tenant's item (<see cref="RejectionReason.Evicted"/>).
/// </summary>
internal sealed class Recorder(int tenants, int itemMs) : IDeadLetterHandler<Probe>
{
    private readonly long[] _rejected = new long[tenants];
    private readonly long[] _shed = new long[tenants];
    private readonly int[] _first = new int[tenants];
    private readonly TaskCompletionSource _allCounted = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private long _completed;
    private int _counted;
    private volatile bool _measuring = true;

    /// <summary>Gets each tenant's queue waits (ms) of the items started while measuring.</summary>
    public List<double>[] Waits { get; } = [.. Enumerable.Range(0, tenants).Select(_ => new List<double>())];

    /// <summary>Gets or sets how many completions <see cref="First"/> counts (0: none).</summary>
    public int CountFirst { get; init; }

    /// <summary>Gets each tenant's count among the first <see cref="CountFirst"/> completions.</summary>
    public int[] First => _first;

    /// <summary>Gets a task that completes when <see cref="CountFirst"/> completions are counted.</summary>
    public Task AllCounted => _allCounted.Task;

    public void Run(Probe item)
    {
        if (_measuring)
        {
            var waited = Stopwatch.GetElapsedTime(item.Enqueued).TotalMilliseconds;
            lock (Waits[item.Tenant])
            {
                Waits[item.Tenant].Add(waited);
            }
        }

        if (itemMs > 0)
        {
            Thread.Sleep(itemMs);
        }

        if (_measuring)
        {
            Interlocked.Increment(ref _completed);
        }

        if (CountFirst > 0)
        {
            var n = Interlocked.Increment(ref _counted);
            if (n <= CountFirst)
            {
                Interlocked.Increment(ref _first[item.Tenant]);
            }

            if (n == CountFirst)
            {
                _allCounted.TrySetResult();
            }
        }
    }

    /// <summary>Stops recording waits and completions; returns the completions recorded.</summary>
    public long StopMeasuring()
    {
        _measuring = false;
        return Interlocked.Read(ref _completed);
    }

    /// <summary>Gets the dead letters of reason Rejected of tenant <paramref name="tenant"/>.</summary>
    public long Rejected(int tenant) => Interlocked.Read(ref _rejected[tenant]);

    /// <summary>Gets those of <see cref="Rejected"/> shed after they were queued (accepted, then given way).</summary>
    public long Shed(int tenant) => Interlocked.Read(ref _shed[tenant]);

    public ValueTask HandleAsync(DeadLetter<Probe> deadLetter, CancellationToken cancellationToken)
    {
        if (deadLetter.Reason == DeadLetterReason.Rejected)
        {
            Interlocked.Increment(ref _rejected[deadLetter.Item.Tenant]);
            if (deadLetter.RejectionReason == RejectionReason.Evicted)
            {
                Interlocked.Increment(ref _shed[deadLetter.Item.Tenant]);
            }
        }

        return ValueTask.CompletedTask;
    }
}
