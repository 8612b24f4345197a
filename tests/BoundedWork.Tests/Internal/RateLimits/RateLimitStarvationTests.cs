namespace BoundedWork.Tests.Internal.RateLimits;

/// <summary>
/// A rate limit needs no ThreadPool thread: permits are asked for and waited for on the workers' own threads, and the
/// executor's token bucket is replenished by its watchdog thread, not by a timer.
/// </summary>
[Collection(StarvationCollection.Name)]
public sealed class RateLimitStarvationTests
{
    [Fact]
    public void PermitsPerSecond_ItemsRunAtTheLimit_WhileThePoolIsStarved()
    {
        // A burst of 1: after the first item every permit comes from the watchdog's replenishment.
        using var executor = new DisposableExecutor(TestKit.Create(workers: 2, capacity: 64, configure: o => { o.PermitsPerSecond = 1000; o.PermitBurst = 1; }));
        const int Count = 30;
        using var allRan = new CountdownEvent(Count);
        var onPool = 0;
        using (var starvation = ThreadPoolStarvation.Begin())
        {
            for (var i = 0; i < Count; i++)
            {
                executor.Value.Execute(() =>
                {
                    if (Thread.CurrentThread.IsThreadPoolThread)
                    {
                        Interlocked.Increment(ref onPool);
                    }

                    allRan.Signal();
                });
            }

            Assert.True(allRan.Wait(TestKit.Safety), "Rate-limited items did not complete while the pool was starved.");
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }

        var s = TestKit.WaitForStatistics(executor.Value, s => s.Completed == Count);
        Assert.Equal(Count, s.PermitsAcquired);
        Assert.Equal(0, onPool);
    }

    [Fact]
    public void WorkersWaitingForPermits_AreWokenAndAbandonedAtTheDeadline_WhileThePoolIsStarved()
    {
        var limiter = new ManualRateLimiter();
        var executor = TestKit.Create(workers: 2, configure: o => o.RateLimiter = limiter);
        using (var starvation = ThreadPoolStarvation.Begin())
        {
            for (var i = 0; i < 4; i++)
            {
                executor.Execute(() => { });
            }

            TestKit.WaitForStatistics(executor, s => s.RateLimitWaitingWorkers == 2);

            // Permits granted while workers wait reach them with no pool thread.
            limiter.Grant(2);
            TestKit.WaitForStatistics(executor, s => s.Completed == 2 && s.RateLimitWaitingWorkers == 2);

            // The watchdog keeps the deadline; the waiting workers give up and exit.
            var result = executor.Shutdown(TimeSpan.FromMilliseconds(20));
            Assert.Equal(2, result.AbandonedItems.Count);

            // The woken workers exit on their own threads, with the pool still starved. The result is taken at the
            // deadline, when they may not have exited yet, so wait for the executor's completion instead (a kernel
            // event that the last worker sets, no pool thread needed); the bound only keeps a hang from lasting.
            Assert.True(executor.Completion.Wait(TimeSpan.FromSeconds(30)), "The workers waiting for permits did not exit after the deadline.");
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }

        Assert.Equal(0, limiter.AskedOnPool);
        TestKit.AssertConserved(executor.GetStatistics());
    }
}
