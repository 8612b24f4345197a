using System.Diagnostics;
using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>The in-memory queue's delayed items: held without a worker, never run early, dead letters when they cannot run.</summary>
public sealed class DelayedItemTests
{
    [Fact]
    public void DelayedItem_RunsNoSoonerThanItsDelay()
    {
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o => o.WorkerCount = 1);
        using (host)
        {
            var started = new System.Collections.Concurrent.ConcurrentDictionary<int, long>();
            probe.Behaviour = (notice, _, _) => started[notice.Id] = Stopwatch.GetTimestamp();
            var enqueued = Stopwatch.GetTimestamp();
            Assert.True(host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromMilliseconds(300) }).IsCompletedSuccessfully);
            Assert.True(host.Queue().EnqueueAsync(new Notice(2), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddMilliseconds(200) }).IsCompletedSuccessfully);
            Assert.True(host.Queue().EnqueueAsync(new Notice(3), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddHours(-1) }).IsCompletedSuccessfully); // past: now

            probe.WaitHandled(3);
            Assert.True(Stopwatch.GetElapsedTime(enqueued, started[1]) >= TimeSpan.FromMilliseconds(300));
            Assert.True(Stopwatch.GetElapsedTime(enqueued, started[2]) >= TimeSpan.FromMilliseconds(195)); // the wall clock and the monotonic one may differ by a few ms
            Assert.All(probe.Attempts, attempt => Assert.True(attempt.OnWorker));
            Assert.Equal(0, host.Executor().GetStatistics().Rejected);
        }
    }

    [Fact]
    public void DelayedItem_HoldsNoWorkerAndNoRoom_WhileItWaits()
    {
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 1;
            o.RejectionPolicy = RejectionPolicy.Abort;
        });
        using (host)
        {
            for (var i = 0; i < 5; i++)
            {
                host.Queue().EnqueueAsync(new Notice(100 + i), new EnqueueOptions { Delay = TimeSpan.FromHours(1) }).AsTask().Wait(TestHost.Patience);
            }

            // Five items wait; the one worker and the one slot are free for items due now.
            host.Queue().EnqueueAsync(new Notice(1)).AsTask().Wait(TestHost.Patience);
            probe.WaitHandled(1);
            Assert.Equal([1], probe.Handled);
            Assert.Equal(0, host.Executor().GetStatistics().QueueLength);
        }
    }

    [Fact]
    public void DelayedItemStillWaitingAtShutdown_BecomesADeadLetter_AndTheHostDoesNotWaitForIt()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using (host)
        {
            host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromHours(1) }).AsTask().Wait(TestHost.Patience);

            host.StopAsync().Wait(TestHost.Patience);

            var letter = Assert.Single(deadLetters.WaitFor(1));
            Assert.Equal(DeadLetterReason.ShutDown, letter.Reason);
            Assert.Equal(RejectionReason.ShutDown, letter.RejectionReason);
            Assert.Equal(1, letter.Item.Id);
            Assert.Equal(0, letter.Attempts);
            Assert.Empty(probe.Handled);

            var late = Assert.Throws<AggregateException>(() => host.Queue().EnqueueAsync(new Notice(2), new EnqueueOptions { Delay = TimeSpan.FromMinutes(1) }).AsTask().Wait(TestHost.Patience));
            Assert.IsType<RejectedExecutionException>(late.InnerException);
            Assert.Equal(2, deadLetters.WaitFor(1).Count); // refused after shutdown: a dead letter too
        }
    }

    [Fact]
    public void DelayedItemFindingTheQueueFull_UnderAbort_BecomesADeadLetter()
    {
        using var gate = new ManualResetEventSlim();
        using var blocked = new ManualResetEventSlim();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(executor: o =>
        {
            o.WorkerCount = 1;
            o.QueueCapacity = 1;
            o.RejectionPolicy = RejectionPolicy.Abort;
        });
        using (host)
        {
            probe.Behaviour = (notice, _, _) =>
            {
                if (notice.Id == 1)
                {
                    blocked.Set();
                    gate.Wait(TestHost.Patience, CancellationToken.None);
                }
            };
            host.Queue().EnqueueAsync(new Notice(1)).AsTask().Wait(TestHost.Patience);
            Assert.True(blocked.Wait(TestHost.Patience));
            host.Queue().EnqueueAsync(new Notice(2)).AsTask().Wait(TestHost.Patience); // fills the queue

            host.Queue().EnqueueAsync(new Notice(3), new EnqueueOptions { Delay = TimeSpan.FromMilliseconds(1) }).AsTask().Wait(TestHost.Patience);

            var letter = Assert.Single(deadLetters.WaitFor(1));
            Assert.Equal(3, letter.Item.Id);
            Assert.Equal(DeadLetterReason.Rejected, letter.Reason);
            Assert.Equal(RejectionReason.QueueFull, letter.RejectionReason);
            gate.Set();
            probe.WaitHandled(2);
        }
    }

    [Fact]
    public void InvalidDelays_AreRefused_AndAQueueThatIsNotBoundedWorks_IsNotSupported()
    {
        var (host, _, _) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using (host)
        {
            Assert.Throws<ArgumentOutOfRangeException>(() => host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromMilliseconds(-1) }));
            Assert.Throws<ArgumentOutOfRangeException>(() => host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromDays(366) }));
            Assert.Throws<ArgumentOutOfRangeException>(() => host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { RunAt = DateTimeOffset.UtcNow.AddDays(400) }));
            Assert.Throws<NotSupportedException>(() => new Stub().EnqueueAsync(new Notice(1), new EnqueueOptions { Delay = TimeSpan.FromSeconds(1) }));
        }
    }

    [Fact]
    public void EnqueueOptionsForDurableQueuesOnly_AreRefusedByAnInMemoryQueue_NamingTheOption()
    {
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using (host)
        {
            var priority = Assert.Throws<ArgumentException>(() => host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { Priority = 1 }));
            Assert.Equal("options", priority.ParamName);
            Assert.Contains("EnqueueOptions.Priority", priority.Message, StringComparison.Ordinal);
            var key = Assert.Throws<ArgumentException>(() => host.Queue().EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "k" }));
            Assert.Contains("EnqueueOptions.IdempotencyKey", key.Message, StringComparison.Ordinal);
            Assert.Throws<ArgumentNullException>(() => host.Queue().EnqueueAsync(new Notice(1), (EnqueueOptions)null!));

            // No delay and no time: enqueued at once, as EnqueueAsync(item) does.
            Assert.True(host.Queue().EnqueueAsync(new Notice(2), new EnqueueOptions()).IsCompletedSuccessfully);
            probe.WaitHandled(1);
            Assert.Equal(2, Assert.Single(probe.Attempts).Id);
        }
    }

    private sealed class Stub : IWorkQueue<Notice>
    {
        public string Name => "stub";

        public bool TryEnqueue(Notice item) => true;

        public ValueTask EnqueueAsync(Notice item, CancellationToken cancellationToken = default) => ValueTask.CompletedTask;
    }
}
