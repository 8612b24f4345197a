using System.Diagnostics;
using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// In-memory typed queues: a handler's snooze runs the item again later without counting a failed attempt, keeps its
/// ordering key and is counted; a queue pauses with its executor.
/// </summary>
public sealed class SnoozeAndPauseTests
{
    private static WorkItemContext ContextOf(Probe probe, Notice notice) => probe.Attempts.Last(a => a.Id == notice.Id).Context;

    private static WorkQueue<Notice> Runtime(IHost host) => (WorkQueue<Notice>)host.Queue();

    [Fact]
    public void Snooze_RunsTheItemAgainLater_WithTheSameAttemptNumber_AndNoFailure()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using (host)
        {
            var calls = 0;
            long snoozedAt = 0;
            long rerunAt = 0;
            probe.Behaviour = (notice, _, _) =>
            {
                if (Interlocked.Increment(ref calls) == 1)
                {
                    snoozedAt = Stopwatch.GetTimestamp();
                    ContextOf(probe, notice).Snooze(TimeSpan.FromMilliseconds(100));
                }
                else
                {
                    rerunAt = Stopwatch.GetTimestamp();
                }
            };

            Assert.True(host.Queue().TryEnqueue(new Notice(1)));
            probe.WaitHandled(2); // the snoozed call returns too; then the real one
            Assert.Equal(2, probe.Attempts.Count);
            Assert.All(probe.Attempts, a => Assert.Equal(1, a.Context.Attempt));
            Assert.True(Stopwatch.GetElapsedTime(snoozedAt, rerunAt) >= TimeSpan.FromMilliseconds(95));
            Assert.Equal(1, Runtime(host).Snoozed);
            Assert.True(SpinWait.SpinUntil(() => Runtime(host).InFlightCount == 0, TestHost.Patience));
            Assert.Empty(deadLetters.Letters);
            Assert.Equal(0, host.Executor().GetStatistics().Failed);
        }
    }

    [Fact]
    public void Snooze_KeepsTheOrderingKey_LaterItemsOfTheKeyWait()
    {
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>(queue: o => o.OrderingKey = n => n.Key, executor: o => o.WorkerCount = 2);
        using (host)
        {
            var first = 0;
            probe.Behaviour = (notice, _, _) =>
            {
                if (notice.Id == 1 && Interlocked.Increment(ref first) == 1)
                {
                    ContextOf(probe, notice).Snooze(TimeSpan.FromMilliseconds(50));
                }
            };

            Assert.True(host.Queue().TryEnqueue(new Notice(1, "order-7")));
            Assert.True(host.Queue().TryEnqueue(new Notice(2, "order-7")));
            probe.WaitHandled(3);
            Assert.Equal([1, 1, 2], probe.Attempts.Select(a => a.Id));
        }
    }

    [Fact]
    public void SnoozedItem_StillWaitingAtShutdown_BecomesADeadLetter()
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using (host)
        {
            probe.Behaviour = (notice, _, _) => ContextOf(probe, notice).Snooze(TimeSpan.FromHours(1));
            Assert.True(host.Queue().TryEnqueue(new Notice(1)));
            probe.WaitHandled(1);
            Assert.True(SpinWait.SpinUntil(() => Runtime(host).Snoozed == 1, TestHost.Patience));

            host.StopAsync().Wait(TestHost.Patience);
            var letter = Assert.Single(deadLetters.WaitFor(1));
            Assert.Equal(DeadLetterReason.ShutDown, letter.Reason);
            Assert.Equal(0, letter.Attempts);
        }
    }

    [Theory]
    [InlineData(0L)]
    [InlineData(-1L)]
    [InlineData(long.MaxValue)]
    public void Snooze_BadDelay_FailsTheAttemptNamingTheDelay(long ticks)
    {
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(queue: o => o.MaxRetryAttempts = 0);
        using (host)
        {
            probe.Behaviour = (notice, _, _) => ContextOf(probe, notice).Snooze(TimeSpan.FromTicks(ticks));
            Assert.True(host.Queue().TryEnqueue(new Notice(1)));
            var letter = Assert.Single(deadLetters.WaitFor(1));
            Assert.Equal("delay", Assert.IsType<ArgumentOutOfRangeException>(letter.Exception).ParamName);
            Assert.Equal(0, Runtime(host).Snoozed);
        }
    }

    [Fact]
    public void Snooze_OutsideAnAttempt_Throws() =>
        Assert.Throws<InvalidOperationException>(() => new WorkItemContext().Snooze(TimeSpan.FromSeconds(1)));

    [Fact]
    public void PausedExecutor_PausesItsTypedQueue_UntilResumed()
    {
        var (host, probe, _) = WorkQueueHost.Start<BlockingNoticeHandler>();
        using (host)
        {
            host.Executor().Pause("incident");
            Assert.True(host.Queue().TryEnqueue(new Notice(1)));
            Assert.True(host.Queue().TryEnqueue(new Notice(2)));
            Assert.True(SpinWait.SpinUntil(() => host.Executor().IdleWorkerCount == 1, TestHost.Patience));
            var passes = host.Executor().WatchdogPasses;
            Assert.True(SpinWait.SpinUntil(() => host.Executor().WatchdogPasses > passes + 2, TestHost.Patience));
            Assert.Empty(probe.Attempts);
            Assert.Equal(2, host.Executor().GetStatistics().QueueLength);

            host.Executor().Resume();
            probe.WaitHandled(2);
            Assert.Equal([1, 2], probe.Handled);
        }
    }
}
