using System.Collections.Concurrent;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Internal.Producers;

/// <summary>
/// Producers waiting for room are admitted by the worker that frees a slot: in order, with no ThreadPool thread,
/// whatever the clock, synchronous and asynchronous alike.
/// </summary>
[Collection(StarvationCollection.Name)]
public sealed class WaitPolicyTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void BlockedProducer_IsAdmittedWhileThePoolIsStarved_WhateverTheClock(bool fakeClock)
    {
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o =>
        {
            o.WaitTimeout = TimeSpan.FromMinutes(5);
            if (fakeClock)
            {
                o.TimeProvider = new FakeTimeProvider();
            }
        });
        using var dispose = new DisposableExecutor(executor);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        using var ran = new ManualResetEventSlim();

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            var producer = new Thread(() => executor.Execute(ran.Set));
            producer.Start();
            TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 1);

            gate.Open();

            Assert.True(producer.Join(TestKit.Safety), "The blocked producer was never admitted.");
            ran.WaitOrFail("the waiting producer's item to run");
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not starved, so this proved nothing.");
        }
    }

    [Fact]
    public void AsyncProducers_ItemsAreAdmittedAndRunWhileThePoolIsStarved()
    {
        using var gate = new Gate();
        var executor = FullQueueBehindGatedWorker(gate);
        using var dispose = new DisposableExecutor(executor);
        using var ran = new CountdownEvent(2);
        ValueTask pendingExecute = default;
        Task<int>? pendingRun = null;

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            var producer = new Thread(() =>
            {
                pendingExecute = executor.ExecuteAsync(() => ran.Signal());
                pendingRun = executor.RunAsync(() =>
                {
                    ran.Signal();
                    return 7;
                });
            });
            producer.Start();
            producer.Join();
            Assert.False(pendingExecute.IsCompleted);
            Assert.Equal(2, executor.GetStatistics().WaitingProducers);

            gate.Open();

            Assert.True(ran.Wait(TestKit.Safety), "Items of asynchronous producers were not admitted while the pool was starved.");
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not starved, so this proved nothing.");
        }

        Assert.True(pendingExecute.AsTask().Wait(TestKit.Safety));
        Assert.Equal(7, pendingRun!.WaitAsync(TestKit.Safety).GetAwaiter().GetResult());
    }

    [Fact]
    public async Task WaitingProducers_AreAdmittedInArrivalOrder_AndANewcomerLinesUpBehindThem()
    {
        using var gate = new Gate();
        await using var executor = FullQueueBehindGatedWorker(gate);
        var order = new ConcurrentQueue<int>();
        var pending = new List<ValueTask>();
        for (var i = 1; i <= 5; i++)
        {
            var id = i;
            pending.Add(executor.ExecuteAsync(() => order.Enqueue(id)));
            TestKit.WaitForStatistics(executor, s => s.WaitingProducers == id);
        }

        gate.Open();
        foreach (var task in pending)
        {
            await task.AsTask().WaitAsync(TestKit.Safety);
        }

        await executor.ShutdownAsync();
        Assert.Equal([1, 2, 3, 4, 5], order);
    }

    [Fact]
    public async Task WaitTimeout_WithAFakeClock_RejectsWhenTheClockPassesIt()
    {
        var clock = new FakeTimeProvider();
        var rejected = new ConcurrentQueue<WorkItemRejectedArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o =>
        {
            o.TimeProvider = clock;
            o.WaitTimeout = TimeSpan.FromSeconds(10);
            o.OnRejected = rejected.Enqueue;
        });
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        var task = executor.ExecuteAsync(() => { }).AsTask();
        TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 1);

        clock.Advance(TimeSpan.FromSeconds(9));
        Assert.False(task.IsCompleted);
        clock.Advance(TimeSpan.FromSeconds(2));

        var ex = await Assert.ThrowsAsync<RejectedExecutionException>(() => task.WaitAsync(TestKit.Safety));
        Assert.Equal(RejectionReason.WaitTimedOut, ex.Reason);
        Assert.Equal(RejectionReason.WaitTimedOut, Assert.Single(rejected).Reason);
        gate.Open();
    }

    [Fact]
    public async Task ExecuteAsync_AlreadyCancelledToken_NeverQueuesTheItemAndCountsItCancelled()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 4);
        var ran = false;

        var task = executor.ExecuteAsync(() => ran = true, new CancellationToken(canceled: true));

        Assert.True(task.IsCanceled);
        await executor.ShutdownAsync();
        Assert.False(ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Cancelled);
        Assert.Equal(1, statistics.Submitted);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task CancelledWhileWaitingForRoom_AsyncFireAndForget_IsCancelledAndCountedOnce()
    {
        using var gate = new Gate();
        await using var executor = FullQueueBehindGatedWorker(gate);
        using var cts = new CancellationTokenSource();
        var ran = false;
        var task = executor.ExecuteAsync(() => ran = true, cts.Token).AsTask();
        var awaited = executor.RunAsync(() => ran = true, cts.Token);
        TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 2);

        await cts.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => task.WaitAsync(TestKit.Safety));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => awaited.WaitAsync(TestKit.Safety));
        gate.Open();
        await executor.ShutdownAsync();
        Assert.False(ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(2, statistics.Cancelled);
        Assert.Equal(0, statistics.WaitingProducers);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public void BlockedProducer_WaitingAgainAndAgain_AllocatesNothingAfterItsFirstWait()
    {
        const int Waits = 4;
        using var release = new SemaphoreSlim(0);
        var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o =>
        {
            o.WaitTimeout = Timeout.InfiniteTimeSpan;
            o.FlowExecutionContext = false;
        });
        using var dispose = new DisposableExecutor(executor);
        Action gated = () => release.Wait();
        executor.Execute(gated);
        TestKit.WaitForStatistics(executor, s => s.Running == 1 && s.QueueLength == 0);
        executor.Execute(gated); // the queue is full from here on: each of the producer's submits has to wait
        var allocated = new long[Waits];
        var producer = new Thread(() =>
        {
            for (var i = 0; i < Waits; i++)
            {
                var before = GC.GetAllocatedBytesForCurrentThread();
                executor.Execute(gated);
                allocated[i] = GC.GetAllocatedBytesForCurrentThread() - before;
            }
        });
        producer.Start();

        for (var i = 0; i < Waits; i++)
        {
            // The producer waits (the worker is gated and the queue is full); one released item frees one slot.
            var completed = i;
            TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 1 && s.Completed == completed);
            release.Release();
        }

        Assert.True(producer.Join(TestKit.Safety), "The producer was never admitted.");
        release.Release(Waits + 2);
        Assert.True(allocated[0] > 0, "The first wait should allocate its waiter (otherwise the producer never waited).");
        for (var i = 1; i < Waits; i++)
        {
            Assert.True(allocated[i] == 0, $"Wait {i + 1} allocated {allocated[i]} B; the thread's waiter should be reused.");
        }
    }

    [Fact]
    public void BlockedProducer_ItsSpareWaiter_DoesNotKeepTheItemAlive()
    {
        using var gate = new Gate();
        var executor = FullQueueBehindGatedWorker(gate);
        using var dispose = new DisposableExecutor(executor);
        using var ran = new ManualResetEventSlim();
        using var admitted = new ManualResetEventSlim();
        using var finish = new ManualResetEventSlim();
        WeakReference? state = null;

        // The producer thread stays alive after its wait, so its thread-static spare waiter does too.
        var producer = new Thread(() =>
        {
            state = SubmitWithState(executor, ran);
            admitted.Set();
            finish.Wait();
        });
        producer.Start();
        TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 1);

        gate.Open();
        admitted.WaitOrFail("the waiting producer to be admitted");
        ran.WaitOrFail("the waiting producer's item to run");
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety), "The worker never went idle.");
        for (var i = 0; i < 3 && state!.IsAlive; i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        var alive = state!.IsAlive;
        finish.Set();
        Assert.True(producer.Join(TestKit.Safety));
        Assert.False(alive, "The producer's spare waiter kept the admitted item's state alive after the item ran.");
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static WeakReference SubmitWithState(BoundedExecutor executor, ManualResetEventSlim ran)
    {
        var state = new ItemState(new byte[1024 * 1024], ran);
        executor.Execute(static s => s.Ran.Set(), state);
        return new WeakReference(state);
    }

    private sealed record ItemState(byte[] Payload, ManualResetEventSlim Ran);

    /// <summary>
    /// A Wait-policy executor (no wait timeout) whose only worker runs <paramref name="gate"/>'s blocker and whose queue
    /// of one is full: the next submit has to wait for room.
    /// </summary>
    private static BoundedExecutor FullQueueBehindGatedWorker(Gate gate)
    {
        var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o => o.WaitTimeout = Timeout.InfiniteTimeSpan);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        return executor;
    }
}
