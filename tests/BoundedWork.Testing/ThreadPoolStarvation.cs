namespace BoundedWork.Testing;

/// <summary>
/// Starves the shared ThreadPool on purpose: caps it at its minimum size and blocks every pool thread on a gate.
/// A probe work item queued behind the blockers proves the starvation: it must not have run when the test checks.
/// Tests that use this belong to the <see cref="StarvationCollection"/>, which never runs in parallel with others.
/// </summary>
public sealed class ThreadPoolStarvation : IDisposable
{
    private static readonly object s_oneAtATime = new();
    private static readonly TimeSpan s_safety = TimeSpan.FromSeconds(30);

    private readonly ManualResetEventSlim _release = new(false);
    private readonly int _oldMinWorkers;
    private readonly int _oldMinIo;
    private readonly int _oldMaxWorkers;
    private readonly int _oldMaxIo;
    private int _probeRan;

    private ThreadPoolStarvation()
    {
        Monitor.Enter(s_oneAtATime);
        ThreadPool.GetMinThreads(out _oldMinWorkers, out _oldMinIo);
        ThreadPool.GetMaxThreads(out _oldMaxWorkers, out _oldMaxIo);
        try
        {
            var limit = Environment.ProcessorCount;
            Assert.True(ThreadPool.SetMinThreads(limit, _oldMinIo), "Could not lower the pool's minimum.");
            Assert.True(ThreadPool.SetMaxThreads(limit, _oldMaxIo), "Could not cap the pool.");

            // Some pool threads may already be busy elsewhere (the test host's own), and threads created before the
            // cap live on until they retire: one blocker per existing or allowed thread, and two more, blocks every one
            // of them, and any blocker that cannot start stays queued ahead of the probe.
            var blockers = Math.Max(limit, ThreadPool.ThreadCount) + 2;
            for (var i = 0; i < blockers; i++)
            {
                ThreadPool.UnsafeQueueUserWorkItem(static gate => gate.Wait(), _release, preferLocal: false);
            }

            // Saturated means no pool thread is free: every one of them is running something that blocks.
            Assert.True(
                SpinWait.SpinUntil(
                    () =>
                    {
                        ThreadPool.GetAvailableThreads(out var available, out _);
                        return available == 0;
                    },
                    s_safety),
                "The pool never became saturated.");
            ThreadPool.UnsafeQueueUserWorkItem(_ => Volatile.Write(ref _probeRan, 1), null);
        }
        catch
        {
            Restore();
            throw;
        }
    }

    /// <summary>Gets a value indicating whether the pool is still starved: the probe queued behind the blockers has not run.</summary>
    public bool IsStarved => Volatile.Read(ref _probeRan) == 0;

    public static ThreadPoolStarvation Begin() => new();

    public void Dispose() => Restore();

    private void Restore()
    {
        _release.Set();
        ThreadPool.SetMaxThreads(_oldMaxWorkers, _oldMaxIo);
        ThreadPool.SetMinThreads(_oldMinWorkers, _oldMinIo);
        Monitor.Exit(s_oneAtATime);
    }
}

/// <summary>
/// The test collection of the tests that starve the ThreadPool: <c>[Collection(StarvationCollection.Name)]</c>. xunit
/// finds collection definitions only in the test assembly itself, so each test project that uses it declares
/// <c>[CollectionDefinition(StarvationCollection.Name, DisableParallelization = true)]</c> on a class of its own.
/// </summary>
public static class StarvationCollection
{
    public const string Name = "ThreadPool starvation";
}
