using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Tests.WorkQueues;

/// <summary>
/// Under the Wait policy, an item the queue hands to the executor from outside a worker (a retry that comes due, the
/// next item of a key) waits for room as the policy promises, holding no thread, instead of being rejected.
/// </summary>
public sealed class WaitPolicyTests
{
    private static void WaitPolicy(BoundedExecutorOptions o)
    {
        o.QueueCapacity = 2;
        o.RejectionPolicy = RejectionPolicy.Wait;
        o.WaitTimeout = Timeout.InfiniteTimeSpan;
    }

    [Fact]
    public async Task KeyedRetryDueWhileTheQueueIsFull_WaitsForRoom_AndTheItemsBehindItRunInOrder()
    {
        var retryDue = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var gate = new Gate();
        using var failedOnce = new ManualResetEventSlim(false);
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(
            o =>
            {
                o.OrderingKey = n => n.Key;
                o.ConfigurePipeline = WorkQueueHost.OneRetryWhen(retryDue.Task);
            },
            executor: WaitPolicy);
        using var _ = host;
        probe.Behaviour = (notice, attempt, _) =>
        {
            if (notice.Id == 1 && attempt == 1)
            {
                failedOnce.Set();
                throw new InvalidOperationException("a1 fails once");
            }

            if (notice.Id == 4)
            {
                gate.Item();
            }
        };
        Assert.True(host.Queue().TryEnqueue(new Notice(1, "a")));
        Assert.True(failedOnce.Wait(TestHost.Patience));
        Assert.True(host.Queue().TryEnqueue(new Notice(2, "a"))); // held behind 1, which waits for its retry
        Assert.True(host.Queue().TryEnqueue(new Notice(3, "a")));
        Assert.True(host.Queue().TryEnqueue(new Notice(4, "b"))); // takes the only worker
        gate.WaitStarted();
        Assert.True(host.Queue().TryEnqueue(new Notice(5, "c"))); // these two fill the queue
        Assert.True(host.Queue().TryEnqueue(new Notice(6, "d")));

        retryDue.SetResult();

        // The retry waits for room as a producer would: nothing is dead-lettered.
        TestHost.WaitUntil(() => host.Executor().GetStatistics().WaitingProducers == 1 || deadLetters.Letters.Count > 0);
        Assert.Empty(deadLetters.Letters);
        gate.Open();
        probe.WaitHandled(6);
        Assert.Equal([4, 5, 6, 1, 2, 3], probe.Handled);
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
    }

    [Fact]
    public async Task NextItemOfAKeyReleasedOffAWorkerWhileTheQueueIsFull_WaitsForRoom()
    {
        using var gate = new Gate();
        var (host, probe, deadLetters) = WorkQueueHost.Start<BlockingNoticeHandler>(o => o.OrderingKey = n => n.Key, executor: WaitPolicy);
        using var _ = host;
        probe.Behaviour = (notice, _, _) =>
        {
            if (notice.Id == 1)
            {
                gate.Item();
            }
        };
        await host.Queue().EnqueueAsync(new Notice(1, "x")); // takes the only worker
        gate.WaitStarted();
        await host.Queue().EnqueueAsync(new Notice(2, "y")); // these two fill the queue
        await host.Queue().EnqueueAsync(new Notice(5, "z"));
        using var cancel = new CancellationTokenSource();
        var waiting = host.Queue().EnqueueAsync(new Notice(3, "k"), cancel.Token).AsTask();
        Assert.True(host.Queue().TryEnqueue(new Notice(4, "k"))); // held behind 3

        // 3's producer gives up: key k passes to 4 on the cancelling thread, not on a worker, while the queue is full.
        await cancel.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting);

        TestHost.WaitUntil(() => host.Executor().GetStatistics().WaitingProducers == 1 || deadLetters.Letters.Count > 0);
        Assert.Empty(deadLetters.Letters);
        gate.Open();
        probe.WaitHandled(4);
        Assert.Equal([1, 2, 5, 4], probe.Handled);
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
    }

    [Fact]
    public async Task AsyncHandlerAwaitingEnqueueIntoItsOwnFullQueue_TheItemRunsInlineOnItsWorker_InsteadOfStallingIt()
    {
        var (host, probe, deadLetters) = StartFanOut();
        using var _ = host;

        // Item 1's handler, off its worker after an await, queues item 2 (room) and then item 3 (the queue is full).
        await host.Queue().EnqueueAsync(new Notice(1));

        probe.WaitHandled(3);
        Assert.Equal([3, 1, 2], probe.Handled); // 3 ran inline on the worker that waited for 1
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
        Assert.Equal(1, host.Executor().GetStatistics().CallerRuns);
    }

    [Fact]
    public async Task AsyncHandlerEnqueueingWithoutAwaiting_TheItemIsStillQueuedAndHandled()
    {
        var (host, probe, deadLetters) = StartFanOut();
        using var _ = host;

        await host.Queue().EnqueueAsync(new Notice(10));

        probe.WaitHandled(3);
        Assert.Equal([10, 11, 12], probe.Handled.Order());
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
    }

    [Fact]
    public async Task AsyncHandlerWhoseFlowEnqueuesAndCompletesBeforeItsWorkerWaits_TheItemsAreStillQueuedAndHandled()
    {
        var (host, probe, deadLetters) = StartFanOut();
        using var _ = host;

        // Item 20's flow, on another thread, starts two enqueues; the handler's task is complete before its worker
        // begins to wait for it (what a preempted worker sees when the flow after an await outruns it).
        await host.Queue().EnqueueAsync(new Notice(20));

        probe.WaitHandled(3);
        Assert.Equal([20, 21, 22], probe.Handled.Order());
        await host.StopAsync();
        Assert.Empty(deadLetters.Letters);
    }

    /// <summary>One worker, a queue of one, Wait: the handler's second enqueue finds the queue full.</summary>
    private static (Microsoft.Extensions.Hosting.IHost Host, Probe Probe, RecordingDeadLetters DeadLetters) StartFanOut() =>
        WorkQueueHost.Start<FanOutHandler>(executor: o =>
        {
            WaitPolicy(o);
            o.QueueCapacity = 1;
        });

    /// <summary>
    /// An asynchronous handler that fans out: item 1 awaits two enqueues into its own queue; item 10 starts two and
    /// returns without awaiting them; item 20 has another thread of its flow start two, and returns complete after.
    /// </summary>
    public sealed class FanOutHandler(Probe probe, ScopeMarker scope, IServiceProvider services, IWorkQueue<Notice> queue) : IWorkHandler<Notice>
    {
        public async ValueTask HandleAsync(Notice item, CancellationToken cancellationToken)
        {
            if (item.Id == 20)
            {
                // Blocks the worker until the other thread has started both, so this call returns a completed task.
                Assert.True(Task.Run(() =>
                {
                    _ = queue.EnqueueAsync(new Notice(21), CancellationToken.None);
                    _ = queue.EnqueueAsync(new Notice(22), CancellationToken.None);
                }, CancellationToken.None).Wait(TestHost.Patience, CancellationToken.None));
                probe.Handle(item, services, scope, cancellationToken);
                return;
            }

            await Task.Yield();
            if (item.Id == 1)
            {
                await queue.EnqueueAsync(new Notice(2), cancellationToken);
                await queue.EnqueueAsync(new Notice(3), cancellationToken);
            }
            else if (item.Id == 10)
            {
                _ = queue.EnqueueAsync(new Notice(11), CancellationToken.None);
                _ = queue.EnqueueAsync(new Notice(12), CancellationToken.None);
            }

            probe.Handle(item, services, scope, cancellationToken);
        }
    }
}
