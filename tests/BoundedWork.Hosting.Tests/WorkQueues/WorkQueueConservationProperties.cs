using System.Collections.Concurrent;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// Conservation for typed queues: whatever the policy, capacity, retries, ordering, concurrent producers and way of
/// stopping, every item submitted ends exactly once, handled or dead-lettered, and a refused submission is always
/// a dead letter.
/// </summary>
public sealed class WorkQueueConservationProperties
{
    /// <summary>One run: the executor and queue shape, what each producer enqueues (failures per item), how the host stops.</summary>
    public sealed record Scenario(
        int Workers,
        int Capacity,
        RejectionPolicy Policy,
        bool Ordered,
        int MaxRetryAttempts,
        int[][] Producers,
        bool StopAtOnce)
    {
        public override string ToString() =>
            $"workers={Workers} capacity={Capacity} policy={Policy} ordered={Ordered} retries={MaxRetryAttempts} stopAtOnce={StopAtOnce} producers=[{string.Join(" | ", Producers.Select(p => string.Join(",", p)))}]";
    }

    /// <summary>
    /// Run 60 times: each case starts a real host with its executor and queue and stops it, tens of milliseconds
    /// apiece, so 60 cases (every policy with both orderings and both ways of stopping, and more) stay within a few
    /// seconds. On failure FsCheck.Xunit prints the case and its replay seed (<c>Replay = "..."</c> reruns it).
    /// </summary>
    [Property(MaxTest = 60, Arbitrary = [typeof(Arbitraries)])]
    public void EveryItemIsHandledOrDeadLetteredExactlyOnce(Scenario scenario) => RunScenario(scenario);

    /// <summary>The generators of this property.</summary>
    public static class Arbitraries
    {
        /// <summary>Random workers, capacities, policies, ordering, retries, one or two producers, and how the host stops.</summary>
        public static Arbitrary<Scenario> Scenarios() =>
            (from workers in Gen.Choose(1, 3)
             from capacity in Gen.Choose(1, 8)
             from policy in Gen.Elements(Enum.GetValues<RejectionPolicy>())
             from ordered in Gen.Elements(true, false)
             from retries in Gen.Choose(0, 2)
             from producers in Gen.Choose(1, 2).SelectMany(n => Gen.Choose(1, 20).SelectMany(length => Gen.ArrayOf(Gen.Choose(0, 3), length)).ArrayOf(n))
             from stopAtOnce in Gen.Elements(true, false)
             select new Scenario(workers, capacity, policy, ordered, retries, producers, stopAtOnce)).ToArbitrary();
    }

    private static void RunScenario(Scenario scenario)
    {
        var failures = new ConcurrentDictionary<int, int>();
        var refused = new ConcurrentQueue<int>();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o =>
            {
                o.OrderingKey = scenario.Ordered ? n => n.Key : null;
                o.MaxRetryAttempts = scenario.MaxRetryAttempts;
                o.RetryDelay = TimeSpan.FromMilliseconds(1);
                o.MaxRetryDelay = TimeSpan.FromMilliseconds(2);
                o.AttemptTimeout = Timeout.InfiniteTimeSpan;
            },
            executor: o =>
            {
                o.WorkerCount = scenario.Workers;
                o.QueueCapacity = scenario.Capacity;
                o.RejectionPolicy = scenario.Policy;
                o.WaitTimeout = TimeSpan.FromMilliseconds(5);
            });
        using (host)
        {
            probe.Behaviour = (notice, attempt, _) =>
            {
                if (attempt <= failures[notice.Id])
                {
                    throw new InvalidOperationException($"item {notice.Id} attempt {attempt}");
                }
            };

            var total = 0;
            var producers = scenario.Producers.Select((items, p) => new Thread(() =>
            {
                for (var i = 0; i < items.Length; i++)
                {
                    var id = (p * 100) + i;
                    failures[id] = items[i];
                    Interlocked.Increment(ref total);
                    var notice = new Notice(id, $"k{i % 3}");
                    if (i % 2 == 0)
                    {
                        if (!host.Queue().TryEnqueue(notice))
                        {
                            refused.Enqueue(id);
                        }
                    }
                    else
                    {
                        try
                        {
                            host.Queue().EnqueueAsync(notice).AsTask().GetAwaiter().GetResult();
                        }
                        catch (RejectedExecutionException)
                        {
                            refused.Enqueue(id);
                        }
                    }
                }
            })).ToArray();
            foreach (var producer in producers)
            {
                producer.Start();
            }

            foreach (var producer in producers)
            {
                Assert.True(producer.Join(TestHost.Patience));
            }

            var stop = scenario.StopAtOnce ? new CancellationToken(canceled: true) : CancellationToken.None;
            host.StopAsync(stop).WaitAsync(TestHost.Patience).GetAwaiter().GetResult();

            // Items still running when an immediate stop returned finish on their own: wait for every outcome.
            Assert.True(
                SpinWait.SpinUntil(() => probe.Handled.Count + deadLetters.Letters.Count >= total, TestHost.Patience),
                $"Only {probe.Handled.Count} handled and {deadLetters.Letters.Count} dead letters of {total} items.");

            var handled = probe.Handled;
            var dead = deadLetters.Letters.Select(l => l.Item.Id).ToArray();
            var outcomes = handled.Concat(dead).ToArray();
            Assert.Equal(total, outcomes.Length);
            Assert.Equal(outcomes.Length, outcomes.Distinct().Count());
            Assert.Equal(failures.Keys.Order(), outcomes.Order());
            Assert.All(refused, id => Assert.Contains(id, dead));
        }
    }
}
