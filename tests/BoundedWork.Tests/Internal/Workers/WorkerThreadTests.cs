namespace BoundedWork.Tests.Internal.Workers;

public sealed class WorkerThreadTests
{
    [Fact]
    public async Task Items_RunOnDedicatedBackgroundThreads_NamedAfterTheExecutor()
    {
        await using var executor = TestKit.Create(workers: 2, name: "payments");

        var (name, isBackground, isPool) = await executor.RunAsync(() =>
            (Thread.CurrentThread.Name, Thread.CurrentThread.IsBackground, Thread.CurrentThread.IsThreadPoolThread));

        Assert.Matches(@"^payments#[12]$", name);
        Assert.True(isBackground);
        Assert.False(isPool);
    }

    [Fact]
    public async Task IsWorkerThread_IsTrueOnlyOnThisExecutorsWorkers()
    {
        await using var executor = TestKit.Create();
        await using var other = TestKit.Create();

        Assert.False(executor.IsWorkerThread);
        Assert.True(await executor.RunAsync(() => executor.IsWorkerThread));
        Assert.False(await other.RunAsync(() => executor.IsWorkerThread));
    }

    [Fact]
    public async Task RunAsync_AwaitingContinuation_NeverRunsOnAWorker()
    {
        await using var executor = TestKit.Create(workers: 2);

        for (var i = 0; i < 50; i++)
        {
            await executor.RunAsync(() => { });
            Assert.False(executor.IsWorkerThread);
            Assert.DoesNotMatch(@"^test#", Thread.CurrentThread.Name ?? string.Empty);

            var value = await executor.RunAsync(() => i);
            Assert.Equal(i, value);
            Assert.False(executor.IsWorkerThread);
        }
    }

    [Fact]
    public async Task RunAsync_SynchronousContinuationRequested_StillDoesNotRunOnTheWorker()
    {
        await using var executor = TestKit.Create();
        using var gate = new Gate();
        var task = executor.RunAsync(gate.Blocker);
        gate.WaitEntered();
        var ranOnWorker = task.ContinueWith(_ => executor.IsWorkerThread, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);

        gate.Open();

        Assert.False(await ranOnWorker);
    }

    [Fact]
    public async Task Workers_DoNotCaptureTheContextOfWhoeverStartedThem()
    {
        var local = new AsyncLocal<string?>();
        await using var executor = TestKit.Create(workers: 1, configure: o => o.FlowExecutionContext = false);

        local.Value = "request-1";
        executor.Resize(3); // as an admin endpoint would, inside a request
        local.Value = null;

        var seen = new List<string?>();
        for (var i = 0; i < 30; i++)
        {
            seen.Add(await executor.RunAsync(() => local.Value));
        }

        Assert.All(seen, Assert.Null);
    }

    [Fact]
    public async Task ThreadInterrupt_OnAParkedWorker_NeitherKillsItNorLosesAWakeUp()
    {
        await using var executor = TestKit.Create(workers: 1);
        var thread = await executor.RunAsync(() => Thread.CurrentThread);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety));

        thread.Interrupt();
        var ranOn = await executor.RunAsync(() => Thread.CurrentThread);

        Assert.Same(thread, ranOn);
        Assert.True(SpinWait.SpinUntil(() => executor.IdleWorkerCount == 1, TestKit.Safety));
        for (var i = 0; i < 100; i++)
        {
            Assert.Same(thread, await executor.RunAsync(() => Thread.CurrentThread));
        }

        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.LiveWorkerCount);
        Assert.Equal(0, statistics.WorkersReplaced);
        Assert.Equal(0, statistics.Failed);
    }
}
