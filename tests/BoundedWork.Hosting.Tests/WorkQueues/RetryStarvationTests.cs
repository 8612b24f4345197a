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

        using (var starvation = ThreadPoolStarvation.Begin())
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
}
