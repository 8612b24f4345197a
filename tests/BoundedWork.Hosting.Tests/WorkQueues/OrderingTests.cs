using System.Collections.Concurrent;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// Ordering by key: items with the same key run one at a time in submission order (retries included), items with
/// different keys run in parallel, and a retry holds back only its own key.
/// </summary>
public sealed class OrderingTests
{
    /// <summary>One run: the worker count, and each item's key and how many of its attempts fail.</summary>
    public sealed record Scenario(int Workers, (int Key, int Failures)[] Items)
    {
        public override string ToString() =>
            $"workers={Workers} items=[{string.Join(" ", Items.Select((item, id) => $"{id}:k{item.Key}f{item.Failures}"))}]";
    }

    /// <summary>
    /// Run 60 times: each case starts a real host and runs up to 24 items with retries, tens of milliseconds apiece;
    /// 60 cases put every worker count against keys that collide often (four keys) within a few seconds. On failure
    /// FsCheck.Xunit prints the case and its replay seed.
    /// </summary>
    [Property(MaxTest = 60, Arbitrary = [typeof(Arbitraries)])]
    public void SameKey_RunsOneAtATimeInSubmissionOrder_RetriesIncluded(Scenario scenario) => RunScenario(scenario);

    /// <summary>The generators of the ordering property.</summary>
    public static class Arbitraries
    {
        /// <summary>One to four workers, up to 24 items over four keys, a quarter of them failing once or twice.</summary>
        public static Arbitrary<Scenario> Scenarios() =>
            (from workers in Gen.Choose(1, 4)
             from count in Gen.Choose(1, 24)
             from items in Gen.ArrayOf(
                 from key in Gen.Choose(0, 3)
                 from failures in Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(1, 2)))
                 select (key, failures),
                 count)
             select new Scenario(workers, items)).ToArbitrary();
    }

    [Fact]
    public async Task DifferentKeys_RunInParallel()
    {
        using var barrier = new Barrier(2);
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.OrderingKey = n => n.Key, executor: o => o.WorkerCount = 2);
        using var _ = host;

        // Each item waits for the other inside its handler: both must be running at once.
        probe.Behaviour = (_, _, _) => Assert.True(barrier.SignalAndWait(TestHost.Patience, CancellationToken.None), "Items with different keys did not run in parallel.");
        host.Queue().TryEnqueue(new Notice(1, "order-a"));
        host.Queue().TryEnqueue(new Notice(2, "order-b"));

        probe.WaitHandled(2);
        await host.StopAsync();
    }

    [Fact]
    public async Task Retry_HoldsBackLaterItemsOfItsKeyOnly()
    {
        var releaseRetry = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o =>
            {
                o.OrderingKey = n => n.Key;

                // The retry waits for the test, not for a clock.
                o.ConfigurePipeline = WorkQueueHost.OneRetryWhen(releaseRetry.Task);
            },
            executor: o => o.WorkerCount = 2);
        using var _ = host;
        probe.Behaviour = (notice, attempt, _) =>
        {
            if (notice.Id == 1 && attempt == 1)
            {
                throw new InvalidOperationException("first attempt of a1 fails");
            }
        };

        host.Queue().TryEnqueue(new Notice(1, "a"));
        host.Queue().TryEnqueue(new Notice(2, "a"));
        host.Queue().TryEnqueue(new Notice(3, "b"));
        host.Queue().TryEnqueue(new Notice(4, "b"));

        // While a1 waits for its retry, key b runs to the end and a2 has not started.
        probe.WaitHandled(2);
        Assert.Equal([3, 4], probe.Handled);
        Assert.DoesNotContain(probe.Attempts, a => a.Id == 2);

        releaseRetry.SetResult();
        probe.WaitHandled(2);
        Assert.Equal([3, 4, 1, 2], probe.Handled);
        Assert.Equal([1, 1, 2], probe.Attempts.Where(a => a.Key == "a").Select(a => a.Id));
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
    }

    [Fact]
    public async Task HeldBackItems_KeyOwnerWaitingForRetryAtShutdown_AllAreDeadLetteredInOrder()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o =>
        {
            o.OrderingKey = n => n.Key;
            o.RetryDelay = TimeSpan.FromHours(1);
            o.MaxRetryDelay = TimeSpan.FromHours(1);
        });
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                throw new InvalidOperationException("a1 always fails");
            }
        };
        host.Queue().TryEnqueue(new Notice(1, "a"));
        host.Queue().TryEnqueue(new Notice(2, "a"));
        host.Queue().TryEnqueue(new Notice(3, "a"));

        await host.StopAsync();

        // a1 waited for its retry when the host stopped: a dead letter. a2 and a3 were held behind it and the
        // executor was already shut down when the key passed to them: dead letters too, in order.
        var letters = deadLetters.WaitFor(3);
        Assert.Equal([1, 2, 3], letters.Select(l => l.Item.Id));
        Assert.All(letters, l => Assert.Equal(DeadLetterReason.ShutDown, l.Reason));
        Assert.Empty(probe.Handled);
    }

    [Fact]
    public async Task Shutdown_ItemsHeldBehindAKeyWhoseItemHangsPastTheDeadline_AreDeadLettered_AndLaterItemsOfTheKeyRefused()
    {
        using var hang = new Gate();
        var logs = new FakeLogCollector();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.OrderingKey = n => n.Key, logs: logs);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                // A hung dependency that ignores its token.
                hang.Item();
            }
        };
        Assert.True(host.Queue().TryEnqueue(new Notice(1, "order-1")));
        hang.WaitStarted();
        Assert.True(host.Queue().TryEnqueue(new Notice(2, "order-1")));
        Assert.True(host.Queue().TryEnqueue(new Notice(3, "order-1")));

        // A deadline that has already passed: item 1 is still running when the queue stops.
        await host.StopAsync(new CancellationToken(canceled: true));

        var held = deadLetters.WaitFor(2);
        Assert.Equal([2, 3], held.Select(l => l.Item.Id));
        Assert.All(held, l => Assert.Equal(DeadLetterReason.ShutDown, l.Reason));
        Assert.All(held, l => Assert.Equal(RejectionReason.Abandoned, l.RejectionReason));

        // While item 1 still hangs, later items of its key are refused at once, not held behind it.
        Assert.False(host.Queue().TryEnqueue(new Notice(4, "order-1")));
        var refused = await Assert.ThrowsAsync<RejectedExecutionException>(() => host.Queue().EnqueueAsync(new Notice(5, "order-1")).AsTask());
        Assert.Equal(RejectionReason.ShutDown, refused.Reason);
        var letters = deadLetters.WaitFor(2);
        Assert.Equal([2, 3, 4, 5], letters.Select(l => l.Item.Id));
        Assert.All(letters.Skip(2), l => Assert.Equal(DeadLetterReason.ShutDown, l.Reason));
        Assert.All(letters.Skip(2), l => Assert.Equal(RejectionReason.ShutDown, l.RejectionReason));
        Assert.Equal("1", Assert.Single(logs.WithEvent("StoppedWithItemsInFlight")).GetStructuredStateValue("InFlightCount"));

        hang.Open();
        probe.WaitHandled(1);
        Assert.Equal([1], probe.Handled);
        Assert.Equal(4, deadLetters.Letters.Count);
    }

    [Fact]
    public async Task TryEnqueue_KeyBusyWhileTheExecutorDrains_IsRefusedAsShutDown()
    {
        using var gate = new Gate();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.OrderingKey = n => n.Key);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                gate.Item();
            }
        };
        Assert.True(host.Queue().TryEnqueue(new Notice(1, "order-1")));
        gate.WaitStarted();

        var stopping = host.StopAsync();
        TestHost.WaitUntil(() => host.Executor().IsShutdown);

        Assert.False(host.Queue().TryEnqueue(new Notice(2, "order-1")));
        var letter = Assert.Single(deadLetters.WaitFor(1));
        Assert.Equal(2, letter.Item.Id);
        Assert.Equal(DeadLetterReason.ShutDown, letter.Reason);
        Assert.Equal(RejectionReason.ShutDown, letter.RejectionReason);

        gate.Open();
        await stopping.WaitAsync(TestHost.Patience);
        Assert.Equal([1], probe.Handled);
        Assert.Single(deadLetters.Letters);
    }

    private static void RunScenario(Scenario scenario)
    {
        var running = new ConcurrentDictionary<string, int>();
        var overlaps = new ConcurrentQueue<string>();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o =>
            {
                o.OrderingKey = n => n.Key;
                o.MaxRetryAttempts = 2;
                o.RetryDelay = TimeSpan.FromMilliseconds(1);
                o.MaxRetryDelay = TimeSpan.FromMilliseconds(2);
                o.AttemptTimeout = Timeout.InfiniteTimeSpan;
            },
            executor: o =>
            {
                o.WorkerCount = scenario.Workers;
                o.QueueCapacity = 64;
            });
        using (host)
        {
            probe.Behaviour = (notice, attempt, _) =>
            {
                if (running.AddOrUpdate(notice.Key, 1, (_, n) => n + 1) != 1)
                {
                    overlaps.Enqueue($"item {notice.Id} started while another item of key {notice.Key} ran");
                }

                try
                {
                    Thread.SpinWait(100);
                    if (attempt <= scenario.Items[notice.Id].Failures)
                    {
                        throw new InvalidOperationException($"item {notice.Id} attempt {attempt} fails");
                    }
                }
                finally
                {
                    running.AddOrUpdate(notice.Key, 0, (_, n) => n - 1);
                }
            };

            for (var id = 0; id < scenario.Items.Length; id++)
            {
                Assert.True(host.Queue().TryEnqueue(new Notice(id, $"k{scenario.Items[id].Key}")));
            }

            probe.WaitHandled(scenario.Items.Length);
            host.StopAsync().WaitAsync(TestHost.Patience).GetAwaiter().GetResult();

            Assert.Empty(overlaps);
            Assert.Empty(deadLetters.Letters);
            foreach (var key in probe.Attempts.GroupBy(a => a.Key))
            {
                var ids = key.Select(a => a.Id).ToArray();
                Assert.True(ids.SequenceEqual(ids.Order()), $"Key {key.Key} ran its items out of order: {string.Join(",", ids)}");
                Assert.Equal(
                    scenario.Items.Select((item, id) => (item, id)).Where(x => $"k{x.item.Key}" == key.Key).Sum(x => x.item.Failures + 1),
                    ids.Length);
            }
        }
    }
}
