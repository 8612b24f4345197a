using BoundedWork.Synchronous;

namespace BoundedWork.Tests.Synchronous;

/// <summary>The blocking helpers and the scheduler keep working while the shared ThreadPool is completely starved.</summary>
[Collection(StarvationCollection.Name)]
public sealed class SynchronousStarvationTests
{
    [Fact]
    public void RunAndWait_NestedAcrossExecutors_CompletesWhileThePoolIsStarved()
    {
        using var a = new DisposableExecutor(TestKit.Create(workers: 1, name: "a"));
        using var b = new DisposableExecutor(TestKit.Create(workers: 1, name: "b"));
        var result = 0;

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            var caller = new Thread(() => result = a.Value.RunAndWait(() => b.Value.RunAndWait(() => a.Value.RunAndWait(() => 42))));
            caller.Start();

            Assert.True(caller.Join(TestKit.Safety), "RunAndWait did not return while the pool was starved.");
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }

        Assert.Equal(42, result);
    }

    [Fact]
    public void TaskScheduler_TasksRunAndCompleteWhileThePoolIsStarved()
    {
        using var executor = new DisposableExecutor(TestKit.Create(workers: 2, capacity: 64));
        var scheduler = executor.Value.AsTaskScheduler();

        using (var starvation = ThreadPoolStarvation.Begin())
        {
            var tasks = Enumerable.Range(0, 20)
                .Select(i => Task.Factory.StartNew(() => executor.Value.IsWorkerThread, CancellationToken.None, TaskCreationOptions.None, scheduler))
                .ToArray();

            Assert.True(Task.WaitAll(tasks, TestKit.Safety), "Scheduler tasks did not complete while the pool was starved.");
            Assert.All(tasks, t => Assert.True(t.Result));
            Assert.True(starvation.IsStarved, "The probe ran: the pool was not actually starved, so this test proved nothing.");
        }
    }
}
