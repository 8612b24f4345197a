using System.Collections.Concurrent;

namespace BoundedWork.Tests;

/// <summary>Shared helpers. Gates are events, never sleeps; timeouts here are safety nets, not timing claims.</summary>
internal static class TestKit
{
    /// <summary>How long a test waits for something that must happen before it declares a hang.</summary>
    public static readonly TimeSpan Safety = TimeSpan.FromSeconds(30);

    public static BoundedExecutor Create(
        int workers = 1,
        int capacity = 16,
        RejectionPolicy policy = RejectionPolicy.Abort,
        Action<BoundedExecutorOptions>? configure = null,
        string name = "test")
    {
        var options = new BoundedExecutorOptions
        {
            Name = name,
            WorkerCount = workers,
            MaxWorkerCount = Math.Max(workers, 8),
            QueueCapacity = capacity,
            RejectionPolicy = policy,
        };
        configure?.Invoke(options);
        return new BoundedExecutor(options);
    }

    /// <summary>Waits (by polling a condition, with a safety limit) until the executor's statistics satisfy it.</summary>
    public static BoundedExecutorStatistics WaitForStatistics(BoundedExecutor executor, Func<BoundedExecutorStatistics, bool> condition)
    {
        BoundedExecutorStatistics statistics = executor.GetStatistics();
        Assert.True(SpinWait.SpinUntil(() => condition(statistics = executor.GetStatistics()), Safety), $"Statistics never reached the expected state: {statistics}");
        return statistics;
    }

    public static void AssertConserved(BoundedExecutorStatistics s) =>
        Assert.Equal(s.Submitted, s.Completed + s.Failed + s.Cancelled + s.Rejected + s.Discarded + s.Abandoned);

    public static void WaitOrFail(this ManualResetEventSlim gate, string what) => Assert.True(gate.Wait(Safety), $"Timed out waiting for {what}.");

    public static void WaitOrFail(this SemaphoreSlim semaphore, string what) => Assert.True(semaphore.Wait(Safety), $"Timed out waiting for {what}.");

    public static void WaitOrFail(this Task task, string what) => Assert.True(task.Wait(Safety), $"Timed out waiting for {what}.");
}

/// <summary>Items that block on a gate, so a test controls exactly when workers are busy.</summary>
internal sealed class Gate : IDisposable
{
    private readonly ManualResetEventSlim _open = new(false);
    private readonly SemaphoreSlim _entered = new(0);

    /// <summary>An item that signals it started, then blocks until the gate opens.</summary>
    public Action Blocker => () =>
    {
        _entered.Release();
        Assert.True(_open.Wait(TestKit.Safety), "The gate was never opened.");
    };

    /// <summary>Waits until <paramref name="count"/> blockers have started.</summary>
    public void WaitEntered(int count = 1)
    {
        for (var i = 0; i < count; i++)
        {
            _entered.WaitOrFail("a blocker to start");
        }
    }

    public void Open() => _open.Set();

    public void Dispose()
    {
        _open.Set();
        _open.Dispose();
        _entered.Dispose();
    }
}

/// <summary>Records which items ran, in order, by id.</summary>
internal sealed class RunLog
{
    private readonly ConcurrentQueue<int> _ran = new();

    public Action Item(int id) => () => _ran.Enqueue(id);

    public IReadOnlyList<int> Ran => [.. _ran];
}
