using PaymentCallbacks.Server;

namespace PaymentCallbacks.Tests;

[CollectionDefinition(nameof(StarvesThreadPool), DisableParallelization = true)]
public sealed class StarvesThreadPool;

[Collection(nameof(StarvesThreadPool))]
public sealed class ThreadPoolSamplerTests
{
    [Fact]
    public void Current_ThreadPoolBlocked_KeepsSamplingAndReportsProbeStillWaiting()
    {
        // Not disposed: blockers still queued when the test ends wait on it after it returns.
        var gate = new ManualResetEventSlim();
        using var sampler = new ThreadPoolSampler(TimeSpan.FromMilliseconds(10));
        var blockers = Environment.ProcessorCount * 50;
        try
        {
            // Far more blocking items than the pool has threads: whatever it queues next waits behind them.
            for (var i = 0; i < blockers; i++)
            {
                ThreadPool.UnsafeQueueUserWorkItem(_ => gate.Wait(), null);
            }

            sampler.StartAsync(CancellationToken.None).GetAwaiter().GetResult();
            var first = sampler.Current.Samples;

            // The sampler's own thread keeps sampling: more samples arrive while no pool thread is free.
            Assert.True(SpinWait.SpinUntil(() => sampler.Current.Samples >= first + 5, TestServer.Safety), "The sampler stopped sampling.");
            var stats = sampler.Current;
            Assert.True(stats.PendingItems > 0, "The blocked pool should have pending items.");
            Assert.True(stats.QueueDelayMs > 0, "The probe queued behind the blockers should still be waiting.");
            Assert.True(stats.PeakThreads >= 1);
        }
        finally
        {
            gate.Set();
            sampler.StopAsync(CancellationToken.None).GetAwaiter().GetResult();
        }
    }
}
