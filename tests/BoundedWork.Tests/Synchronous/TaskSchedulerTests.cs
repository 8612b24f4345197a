using System.Collections.Concurrent;
using System.Threading.Tasks.Dataflow;
using BoundedWork.Synchronous;

namespace BoundedWork.Tests.Synchronous;

/// <summary>The TaskScheduler view: TPL work on the executor's workers, honest concurrency, rejections, nothing lost.</summary>
public sealed class TaskSchedulerTests
{
    [Fact]
    public async Task StartNew_RunsOnAWorkerThread()
    {
        await using var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();

        var onWorker = await Task.Factory.StartNew(() => executor.IsWorkerThread, CancellationToken.None, TaskCreationOptions.None, scheduler);

        Assert.True(onWorker);
    }

    [Fact]
    public async Task MaximumConcurrencyLevel_IsTheWorkerCount_AndFollowsAResize()
    {
        await using var executor = TestKit.Create(workers: 3);
        var scheduler = executor.AsTaskScheduler();
        Assert.Equal(3, scheduler.MaximumConcurrencyLevel);

        executor.Resize(5);

        Assert.Equal(5, scheduler.MaximumConcurrencyLevel);
    }

    [Fact]
    public async Task ParallelForEach_EveryIterationRunsOnAWorker_NeverMoreAtOnceThanWorkers()
    {
        await using var executor = TestKit.Create(workers: 2, capacity: 64);
        var scheduler = executor.AsTaskScheduler();
        var running = 0;
        var peak = 0;
        var offWorker = 0;
        var seen = new ConcurrentBag<int>();

        Parallel.ForEach(Enumerable.Range(0, 200), new ParallelOptions { TaskScheduler = scheduler }, i =>
        {
            var now = Interlocked.Increment(ref running);
            InterlockedMax(ref peak, now);
            if (!executor.IsWorkerThread)
            {
                Interlocked.Increment(ref offWorker);
            }

            seen.Add(i);
            Thread.SpinWait(200);
            Interlocked.Decrement(ref running);
        });

        Assert.Equal(Enumerable.Range(0, 200), seen.Order());
        Assert.Equal(0, offWorker);
        Assert.InRange(peak, 1, 2);
    }

    [Fact]
    public async Task DataflowActionBlock_WithTheScheduler_ProcessesOnWorkers()
    {
        await using var executor = TestKit.Create(workers: 2);
        var scheduler = executor.AsTaskScheduler();
        var offWorker = 0;
        var processed = 0;
        var block = new ActionBlock<int>(_ =>
        {
            if (!executor.IsWorkerThread)
            {
                Interlocked.Increment(ref offWorker);
            }

            Interlocked.Increment(ref processed);
        }, new ExecutionDataflowBlockOptions { TaskScheduler = scheduler, MaxDegreeOfParallelism = 2 });

        for (var i = 0; i < 100; i++)
        {
            Assert.True(block.Post(i));
        }

        block.Complete();
        await block.Completion.WaitAsync(TestKit.Safety);

        Assert.Equal(100, processed);
        Assert.Equal(0, offWorker);
    }

    [Fact]
    public async Task Await_InsideATaskOnTheScheduler_ResumesOnAWorker()
    {
        await using var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();

        // Task.Delay always suspends (its timer completes it later, on the ThreadPool), so the await really resumes.
        var task = Task.Factory.StartNew(async () =>
        {
            await Task.Delay(1);
            return executor.IsWorkerThread;
        }, CancellationToken.None, TaskCreationOptions.None, scheduler).Unwrap();

        Assert.True(await task.WaitAsync(TestKit.Safety));
    }

    [Fact]
    public async Task AwaitConfigureAwaitFalse_InsideATaskOnTheScheduler_LeavesTheWorkers()
    {
        await using var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();

        var task = Task.Factory.StartNew(async () =>
        {
            await Task.Delay(1).ConfigureAwait(false); // not a wait for anything: an await that always suspends (see above)
            return (OnWorker: executor.IsWorkerThread, OnPool: Thread.CurrentThread.IsThreadPoolThread);
        }, CancellationToken.None, TaskCreationOptions.None, scheduler).Unwrap();

        var (onWorker, onPool) = await task.WaitAsync(TestKit.Safety);
        Assert.False(onWorker);
        Assert.True(onPool);
    }

    [Fact]
    public async Task Start_QueueFullUnderAbort_FaultsTheTaskThrowsAndReportsTheRejection()
    {
        var rejections = new ConcurrentQueue<WorkItemRejectedArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, configure: o => o.OnRejected = rejections.Enqueue);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        var ran = false;
        var task = new Task(() => ran = true);

        var thrown = Assert.Throws<TaskSchedulerException>(() => task.Start(scheduler));

        var rejected = Assert.IsType<RejectedExecutionException>(thrown.InnerException);
        Assert.Equal(RejectionReason.QueueFull, rejected.Reason);
        Assert.True(task.IsFaulted);
        Assert.Single(rejections);
        Assert.Equal(1, executor.GetStatistics().Rejected);
        gate.Open();
        await executor.ShutdownAsync();
        Assert.False(ran);
    }

    [Fact]
    public async Task Start_CallerRunsPolicyQueueFull_RunsTheTaskOnTheQueuingThread()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.CallerRuns);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        var queuingThread = Environment.CurrentManagedThreadId;

        var task = Task.Factory.StartNew(() => Environment.CurrentManagedThreadId, CancellationToken.None, TaskCreationOptions.None, scheduler);

        Assert.True(task.IsCompleted);
        Assert.Equal(queuingThread, await task);
        gate.Open();
    }

    [Fact]
    public async Task Start_WaitPolicyQueueFull_ReturnsAtOnceAndTheTaskRunsOnAWorkerWhenThereIsRoom()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o => o.WaitTimeout = Timeout.InfiniteTimeSpan);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });

        // The queuing thread is not blocked: the wait for room is asynchronous.
        var task = Task.Factory.StartNew(() => executor.IsWorkerThread, CancellationToken.None, TaskCreationOptions.None, scheduler);
        Assert.False(task.IsCompleted);
        gate.Open();

        Assert.True(await task.WaitAsync(TestKit.Safety));
        Assert.Equal(0, scheduler.RescuedTaskCount);
        Assert.Equal(0, executor.GetStatistics().ThreadPoolBlockingWaits);
    }

    [Fact]
    public async Task GracefulShutdown_TasksQueuedBeforeIt_AllRunOnWorkers()
    {
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var tasks = Enumerable.Range(0, 5)
            .Select(i => Task.Factory.StartNew(() => (Id: i, OnWorker: executor.IsWorkerThread), CancellationToken.None, TaskCreationOptions.None, scheduler))
            .ToArray();

        var shutdown = executor.ShutdownAsync();
        gate.Open();
        var result = await shutdown.WaitAsync(TestKit.Safety);
        var outcomes = await Task.WhenAll(tasks).WaitAsync(TestKit.Safety);

        Assert.True(result.Drained);
        Assert.Equal(Enumerable.Range(0, 5), outcomes.Select(o => o.Id));
        Assert.All(outcomes, o => Assert.True(o.OnWorker));
        Assert.Equal(0, scheduler.RescuedTaskCount);
    }

    [Fact]
    public async Task ShutdownDeadline_TasksStillQueued_RunOnTheRescueThreadAndAreCounted()
    {
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var tasks = Enumerable.Range(0, 3)
            .Select(i => Task.Factory.StartNew(() => (Id: i, Thread.CurrentThread.Name, OnWorker: executor.IsWorkerThread), CancellationToken.None, TaskCreationOptions.None, scheduler))
            .ToArray();
        using var deadline = new CancellationTokenSource();

        var shutdown = executor.ShutdownAsync(deadline.Token);
        deadline.Cancel();
        var outcomes = await Task.WhenAll(tasks).WaitAsync(TestKit.Safety);
        gate.Open();
        var result = await shutdown.WaitAsync(TestKit.Safety);

        Assert.Equal(3, result.AbandonedItems.Count);
        Assert.Equal([0, 1, 2], outcomes.Select(o => o.Id));
        Assert.All(outcomes, o => Assert.False(o.OnWorker));
        Assert.All(outcomes, o => Assert.Equal("test-rescue", o.Name));
        Assert.Equal(3, scheduler.RescuedTaskCount);
        Assert.Equal(3, executor.GetStatistics().Abandoned);
    }

    [Fact]
    public async Task StartNew_AfterShutdown_RunsOnTheRescueThreadAndTheRejectionIsCounted()
    {
        var rejections = new ConcurrentQueue<WorkItemRejectedArguments>();
        var executor = TestKit.Create(workers: 1, configure: o => o.OnRejected = rejections.Enqueue);
        var scheduler = executor.AsTaskScheduler();
        await executor.ShutdownAsync();

        var name = await Task.Factory.StartNew(() => Thread.CurrentThread.Name, CancellationToken.None, TaskCreationOptions.None, scheduler)
            .WaitAsync(TestKit.Safety);

        Assert.Equal("test-rescue", name);
        Assert.Equal(1, scheduler.RescuedTaskCount);
        Assert.Equal(RejectionReason.ShutDown, Assert.Single(rejections).Reason);
        Assert.Equal(1, executor.GetStatistics().Rejected);
    }

    [Fact]
    public async Task AwaitContinuation_ArrivingAfterShutdown_StillResumes()
    {
        var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();
        var resume = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var suspended = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        var method = Task.Factory.StartNew(async () =>
        {
            var awaited = resume.Task;
            suspended.SetResult();
            await awaited;
            return Thread.CurrentThread.Name;
        }, CancellationToken.None, TaskCreationOptions.None, scheduler).Unwrap();
        await suspended.Task.WaitAsync(TestKit.Safety);
        await executor.ShutdownAsync().WaitAsync(TestKit.Safety);
        resume.SetResult();

        Assert.Equal("test-rescue", await method.WaitAsync(TestKit.Safety));
    }

    [Fact]
    public async Task DiscardOldest_EvictedTask_RunsOnTheRescueThread()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.DiscardOldest);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var evicted = Task.Factory.StartNew(() => Thread.CurrentThread.Name, CancellationToken.None, TaskCreationOptions.None, scheduler);

        executor.Execute(() => { }); // evicts the queued task

        Assert.Equal("test-rescue", await evicted.WaitAsync(TestKit.Safety));
        Assert.Equal(1, scheduler.RescuedTaskCount);
        Assert.Equal(1, executor.GetStatistics().Discarded);
        gate.Open();
    }

    [Fact]
    public async Task RescueThread_ATaskThatWaitsOnAnotherTaskOfTheScheduler_RunsItInlineAndLaterTasksStillRun()
    {
        var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();
        await executor.ShutdownAsync();

        // Both tasks arrive after shutdown: each goes to the rescue thread, the inner one behind the outer one.
        var outer = Task.Factory.StartNew(
            () =>
            {
                var inner = Task.Factory.StartNew(() => Thread.CurrentThread.Name, CancellationToken.None, TaskCreationOptions.None, scheduler);
                return (Outer: Thread.CurrentThread.Name, Inner: inner.Result);
            },
            CancellationToken.None,
            TaskCreationOptions.None,
            scheduler);

        var (outerThread, innerThread) = await outer.WaitAsync(TestKit.Safety);
        Assert.Equal("test-rescue", outerThread);
        Assert.Equal("test-rescue", innerThread);
        var later = Task.Factory.StartNew(() => 7, CancellationToken.None, TaskCreationOptions.None, scheduler);
        Assert.Equal(7, await later.WaitAsync(TestKit.Safety));
        Assert.Equal(3, scheduler.RescuedTaskCount);
    }

    [Fact]
    public async Task RescueThreads_ATaskBlockedOnAnAsyncTaskOfTheScheduler_AnotherRescueThreadRunsItsContinuations()
    {
        using var gate = new Gate();
        var executor = TestKit.Create(workers: 2);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        executor.Execute(gate.Blocker);
        gate.WaitEntered(2);

        // Queued behind the blockers, then handed back at the deadline: it runs on a rescue thread and blocks there
        // on an async method whose every continuation is queued to the same (shut down) scheduler.
        var blocked = Task.Factory.StartNew(
            () => Task.Factory.StartNew(
                async () =>
                {
                    await Task.Yield();
                    await Task.Yield();
                    return Thread.CurrentThread.Name;
                },
                CancellationToken.None,
                TaskCreationOptions.None,
                scheduler).Unwrap().Result,
            CancellationToken.None,
            TaskCreationOptions.None,
            scheduler);
        var shutdown = executor.ShutdownAsync(new CancellationToken(canceled: true));

        Assert.Equal("test-rescue", await blocked.WaitAsync(TestKit.Safety));
        gate.Open();
        Assert.Single((await shutdown.WaitAsync(TestKit.Safety)).AbandonedItems);
    }

    /// <summary>
    /// What the docs warn about: inlining covers tasks that have not started, not an async method's task. The only
    /// worker blocks on one whose first part sits queued behind it; a cancellable wait lets the test end the deadlock.
    /// </summary>
    [Fact]
    public async Task OneWorker_BlockingOnAnAsyncTaskOfTheScheduler_WaitsForAPartOnlyThatWorkerCouldRun()
    {
        await using var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();
        using var release = new CancellationTokenSource();
        var asyncTaskQueued = new TaskCompletionSource<Task<int>>(TaskCreationOptions.RunContinuationsAsynchronously);

        var blocked = Task.Factory.StartNew(
            () =>
            {
                var asyncTask = Task.Factory.StartNew(
                    async () =>
                    {
                        await Task.Yield();
                        return 1;
                    },
                    CancellationToken.None,
                    TaskCreationOptions.None,
                    scheduler).Unwrap();
                asyncTaskQueued.SetResult(asyncTask);
                try
                {
                    asyncTask.Wait(release.Token);
                    return "completed";
                }
                catch (OperationCanceledException)
                {
                    return "still waiting";
                }
            },
            CancellationToken.None,
            TaskCreationOptions.None,
            scheduler);
        var asyncTask = await asyncTaskQueued.Task.WaitAsync(TestKit.Safety);

        // The worker is busy waiting, and the async method's first part is queued behind it: nothing can run it.
        TestKit.WaitForStatistics(executor, s => s.BusyWorkerCount == 1 && s.QueueLength == 1);
        Assert.False(asyncTask.IsCompleted);
        await release.CancelAsync();

        Assert.Equal("still waiting", await blocked.WaitAsync(TestKit.Safety));
        Assert.Equal(1, await asyncTask.WaitAsync(TestKit.Safety)); // once the worker is free, it runs
    }

    public static TheoryData<string> BlockingWaits => ["Wait", "Result", "WaitAll"];

    [Theory]
    [MemberData(nameof(BlockingWaits))]
    public async Task BlockingWait_OnATaskOfTheSchedulerThatHasNotStarted_OnAThreadPoolThreadIsCountedAndReported_OnADedicatedThreadIsNot(string wait)
    {
        var reports = new ConcurrentQueue<ThreadPoolBlockingWaitArguments>();
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, configure: o => o.OnThreadPoolBlockingWait = reports.Enqueue);
        var scheduler = executor.AsTaskScheduler();
        executor.Execute(gate.Blocker);
        gate.WaitEntered(); // the tasks cannot start before the threads wait for them
        var forDedicated = Task.Factory.StartNew(() => 1, CancellationToken.None, TaskCreationOptions.None, scheduler);
        var forPool = Task.Factory.StartNew(() => 2, CancellationToken.None, TaskCreationOptions.None, scheduler);
        void Block(Task<int> task)
        {
            switch (wait)
            {
                case "Wait":
                    task.Wait();
                    break;
                case "Result":
                    _ = task.Result;
                    break;
                default:
                    Task.WaitAll(task);
                    break;
            }
        }

        var dedicated = new Thread(() => Block(forDedicated));
        dedicated.Start();
        var pool = Task.Run(() => Block(forPool));

        var statistics = TestKit.WaitForStatistics(executor, s => s.ThreadPoolBlockingWaits >= 1);
        gate.Open();
        Assert.True(dedicated.Join(TestKit.Safety));
        await pool.WaitAsync(TestKit.Safety);
        Assert.Equal(1, statistics.ThreadPoolBlockingWaits);
        Assert.Equal(1, executor.GetStatistics().ThreadPoolBlockingWaits);
        var report = Assert.Single(reports);
        Assert.Equal(BlockingWaitKind.TaskWait, report.Kind);
    }

    [Fact]
    public async Task Wait_OnATaskOfTheSchedulerFromAWorker_InlinesInsteadOfDeadlocking()
    {
        await using var executor = TestKit.Create(workers: 1);
        var scheduler = executor.AsTaskScheduler();

        var result = await executor.RunAsync(() =>
        {
            var inner = new Task<bool>(() => executor.IsWorkerThread);
            inner.Start(scheduler);
            return inner.Result; // the only worker waits: the task is inlined here
        }).WaitAsync(TestKit.Safety);

        Assert.True(result);
    }

    private static void InterlockedMax(ref int target, int value)
    {
        var current = Volatile.Read(ref target);
        while (value > current)
        {
            var previous = Interlocked.CompareExchange(ref target, value, current);
            if (previous == current)
            {
                return;
            }

            current = previous;
        }
    }
}
