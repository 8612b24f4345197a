namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>Retries wait on the retry clock's own thread and resume on workers: they need no ThreadPool thread.</summary>
[Collection(StarvationCollection.Name)]
public sealed class RetryStarvationTests
{
    [Fact]
    public void FailedItems_AreRetriedAndHandled_WhileThePoolIsStarved()
    {
        // Delays long enough that each one ends after the pipeline has started waiting for it (a delay that ends
        // while the await is being set up resumes on the ThreadPool: .NET's rule, documented as a limitation).
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.RetryDelay = TimeSpan.FromMilliseconds(100), executor: o => o.WorkerCount = 2);
        using var _ = host;
        probe.Behaviour = (_, attempt, _) =>
        {
            if (attempt < 3)
            {
                throw new InvalidOperationException($"attempt {attempt} fails");
            }
        };

        // Warm up every code path (JIT, the retry clock's thread) before the pool is starved.
        Assert.True(host.Queue().TryEnqueue(new Notice(-1)));
        probe.WaitHandled(1);

        using (var starvation = PoolStarvation.Begin())
        {
            for (var i = 0; i < 10; i++)
            {
                Assert.True(host.Queue().TryEnqueue(new Notice(i)));
            }

            probe.WaitHandled(10);
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }

        Assert.Equal(33, probe.Attempts.Count);
        Assert.All(probe.Attempts, a => Assert.True(a.OnWorker));
        host.StopAsync().WaitAsync(TestHost.Patience).GetAwaiter().GetResult();
        Assert.Empty(deadLetters.Letters);
    }

    /// <summary>Caps the ThreadPool at its minimum and blocks every pool thread; a probe queued behind them proves it.</summary>
    private sealed class PoolStarvation : IDisposable
    {
        private readonly ManualResetEventSlim _release = new(false);
        private readonly int _oldMinWorkers;
        private readonly int _oldMinIo;
        private readonly int _oldMaxWorkers;
        private readonly int _oldMaxIo;
        private int _probeRan;

        private PoolStarvation()
        {
            ThreadPool.GetMinThreads(out _oldMinWorkers, out _oldMinIo);
            ThreadPool.GetMaxThreads(out _oldMaxWorkers, out _oldMaxIo);
            try
            {
                var limit = Environment.ProcessorCount;
                Assert.True(ThreadPool.SetMinThreads(limit, _oldMinIo), "Could not lower the pool's minimum.");
                Assert.True(ThreadPool.SetMaxThreads(limit, _oldMaxIo), "Could not cap the pool.");
                for (var i = 0; i < limit; i++)
                {
                    ThreadPool.UnsafeQueueUserWorkItem(static gate => gate.Wait(), _release, preferLocal: false);
                }

                Assert.True(
                    SpinWait.SpinUntil(
                        () =>
                        {
                            ThreadPool.GetAvailableThreads(out var available, out _);
                            return available == 0;
                        },
                        TestHost.Patience),
                    "The pool never became saturated.");
                ThreadPool.UnsafeQueueUserWorkItem(_ => Volatile.Write(ref _probeRan, 1), null);
            }
            catch
            {
                Restore();
                throw;
            }
        }

        public bool IsStarved => Volatile.Read(ref _probeRan) == 0;

        public static PoolStarvation Begin() => new();

        public void Dispose() => Restore();

        private void Restore()
        {
            _release.Set();
            ThreadPool.SetMaxThreads(_oldMaxWorkers, _oldMaxIo);
            ThreadPool.SetMinThreads(_oldMinWorkers, _oldMinIo);
        }
    }
}

[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class StarvationCollection
{
    public const string Name = "ThreadPool starvation (work queues)";
}
