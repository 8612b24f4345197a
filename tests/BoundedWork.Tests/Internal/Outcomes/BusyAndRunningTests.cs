namespace BoundedWork.Tests.Internal.Outcomes;

/// <summary>
/// In every snapshot the busy workers and the running items agree: each running item is on a busy worker or on a
/// submitting thread, and no worker counts as busy without one. Sampled from a thread of its own while items flow.
/// </summary>
public sealed class BusyAndRunningTests
{
    [Theory]
    [InlineData(RejectionPolicy.Abort, 1)]
    [InlineData(RejectionPolicy.Abort, 3)]
    [InlineData(RejectionPolicy.DiscardOldest, 2)]
    [InlineData(RejectionPolicy.CallerRuns, 2)]
    public void Snapshots_WhileItemsFlow_BusyWorkersAndRunningItemsAgree(RejectionPolicy policy, int workers)
    {
        const int Items = 60_000;
        var executor = TestKit.Create(workers: workers, capacity: 4, policy: policy);
        var stop = false;
        var snapshots = 0;
        var violations = new List<string>();
        var sampler = new Thread(() =>
        {
            while (!Volatile.Read(ref stop))
            {
                var s = executor.GetStatistics();
                snapshots++;
                if (s.Running != s.BusyWorkerCount + s.RunningOnCallers
                    || s.BusyWorkerCount > s.LiveWorkerCount
                    || s.RunningOnCallers < 0
                    || s.Starting < 0
                    || s.Submitted != s.QueueLength + s.Starting + s.Running + s.Completed + s.Failed + s.Cancelled + s.Rejected + s.Discarded + s.Abandoned)
                {
                    violations.Add(s.ToString());
                }
            }
        });
        sampler.Start();

        for (var i = 0; i < Items; i++)
        {
            var fail = i % 7 == 0;
            executor.TryExecute(() =>
            {
                if (fail)
                {
                    throw new InvalidOperationException("an item that fails");
                }
            });
        }

        executor.Shutdown(Timeout.InfiniteTimeSpan);
        Volatile.Write(ref stop, true);
        sampler.Join();

        Assert.True(snapshots > 0);
        Assert.True(violations.Count == 0, $"{violations.Count} of {snapshots} snapshots disagreed, first: {violations.FirstOrDefault()}");
        TestKit.AssertConserved(executor.GetStatistics());
    }
}
