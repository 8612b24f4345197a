using System.Collections.Concurrent;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.Tests.Internal.RateLimits;

/// <summary>
/// Conservation under a rate limit: with permits granted a few at a time while producers submit under every policy,
/// workers resize, and shutdown drains or abandons while workers (and CallerRuns submitters) wait for permits, every
/// item ends in exactly one outcome, the counters add up, and no more items start than the limiter granted.
/// </summary>
public sealed class RateLimitConservationProperties
{
    /// <summary>One run: the executor's shape, what each producer submits, the permits granted in steps, the resizes, and how it shuts down.</summary>
    public sealed record Scenario(int Workers, int Capacity, RejectionPolicy Policy, int[] Producers, int[] Grants, int[] Resizes, bool Abandon)
    {
        public override string ToString() =>
            $"workers={Workers} capacity={Capacity} policy={Policy} producers=[{string.Join(",", Producers)}] grants=[{string.Join(",", Grants)}] resizes=[{string.Join(",", Resizes)}] abandon={Abandon}";
    }

    /// <summary>The generators of this property.</summary>
    public static class Arbitraries
    {
        /// <summary>Random worker counts, capacities, policies, producers, permit grants, resizes and shutdown modes.</summary>
        public static Arbitrary<Scenario> Scenarios() =>
            (from workers in Gen.Choose(1, 4)
             from capacity in Gen.Choose(1, 8)
             from policy in Gen.Elements(Enum.GetValues<RejectionPolicy>())
             from producers in Gen.ArrayOf(Gen.Choose(0, 30), 2)
             from grants in Gen.ArrayOf(Gen.Choose(0, 6), 8)
             from resizes in Gen.ArrayOf(Gen.Choose(1, 4), 3)
             from abandon in Gen.Elements(true, false)
             select new Scenario(workers, capacity, policy, producers, grants, resizes, abandon)).ToArbitrary();
    }

    /// <summary>
    /// Run 60 times: each case starts real threads (two producers of up to 30 items, up to four workers waiting for
    /// permits) and takes a few milliseconds, so 60 cases cover every policy with every worker count, draining and
    /// abandoning, in a few seconds. On failure FsCheck.Xunit prints the case and its replay seed.
    /// </summary>
    [Property(MaxTest = 60, Arbitrary = [typeof(Arbitraries)])]
    public void EveryItemEndsOnce_AndStartsNeverExceedPermits(Scenario scenario) => RunScenario(scenario);

    private static void RunScenario(Scenario scenario)
    {
        var limiter = new ManualRateLimiter();
        var outcomes = new ConcurrentDictionary<int, ConcurrentQueue<string>>();
        var ids = new ConcurrentDictionary<Delegate, int>(ReferenceEqualityComparer.Instance);
        void Record(int id, string outcome) => outcomes.GetOrAdd(id, _ => new()).Enqueue(outcome);
        var executor = new BoundedExecutor(new BoundedExecutorOptions
        {
            Name = "ratelimit-property",
            WorkerCount = scenario.Workers,
            MaxWorkerCount = 4,
            QueueCapacity = scenario.Capacity,
            RejectionPolicy = scenario.Policy,
            WaitTimeout = TimeSpan.FromMilliseconds(5),
            RateLimiter = limiter,
            OnRejected = args => Record(ids[args.Item.Callback], args.Reason is RejectionReason.Discarded or RejectionReason.Evicted ? "discarded" : "rejected"),
        });

        var started = 0;
        var producers = scenario.Producers.Select((count, p) => new Thread(() =>
        {
            for (var i = 0; i < count; i++)
            {
                var id = (p * 1000) + i;
                Action work = () =>
                {
                    Interlocked.Increment(ref started);
                    Record(id, "completed");
                };
                ids[work] = id;
                try
                {
                    executor.Execute(work);
                }
                catch (RejectedExecutionException)
                {
                    // counted and reported through OnRejected
                }
            }
        })
        { IsBackground = true }).ToArray();
        foreach (var producer in producers)
        {
            producer.Start();
        }

        for (var i = 0; i < scenario.Grants.Length; i++)
        {
            limiter.Grant(scenario.Grants[i]);
            executor.Resize(scenario.Resizes[i % scenario.Resizes.Length]);
            Assert.True(Volatile.Read(ref started) <= limiter.Granted, $"More starts than permits in {scenario}");
            Thread.Yield();
        }

        if (!scenario.Abandon)
        {
            limiter.Grant(1000); // the drain needs permits for everything still queued or still to come
        }

        var result = scenario.Abandon
            ? executor.ShutdownAsync(new CancellationToken(canceled: true)).GetAwaiter().GetResult()
            : executor.ShutdownAsync().GetAwaiter().GetResult();
        foreach (var item in result.AbandonedItems)
        {
            Record(ids[item.Callback], "abandoned");
        }

        foreach (var producer in producers)
        {
            Assert.True(producer.Join(TestKit.Safety), $"A producer never finished in {scenario}");
        }

        Assert.True(executor.Completion.Wait(TestKit.Safety), $"Workers did not exit in {scenario}");
        var statistics = executor.GetStatistics();
        var total = scenario.Producers.Sum();
        Assert.Equal(total, statistics.Submitted);
        TestKit.AssertConserved(statistics);
        Assert.Equal(total, outcomes.Count);
        Assert.All(outcomes, pair => Assert.True(pair.Value.Count == 1, $"Item {pair.Key} ended {pair.Value.Count} times in {scenario}"));
        Assert.Equal(statistics.Completed, Volatile.Read(ref started));
        Assert.True(started <= limiter.Granted, $"{started} starts for {limiter.Granted} permits in {scenario}");
        Assert.Equal(limiter.Granted, statistics.PermitsAcquired);
        Assert.Equal(0, statistics.RateLimitWaitingWorkers);
    }
}
