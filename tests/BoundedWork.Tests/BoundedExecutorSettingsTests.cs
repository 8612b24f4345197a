namespace BoundedWork.Tests;

/// <summary>Runtime reconfiguration: validated, all or nothing, and applied to the next admission decision.</summary>
public sealed class BoundedExecutorSettingsTests
{
    [Fact]
    public async Task ToString_ThresholdsTurnedOff_ReadOff_AndEverySettingIsNamed()
    {
        await using var executor = TestKit.Create(workers: 2, capacity: 4);
        var settings = executor.Settings with { QueueWaitThreshold = Timeout.InfiniteTimeSpan, SlowItemThreshold = TimeSpan.FromSeconds(2) };

        var text = settings.ToString();

        Assert.StartsWith("BoundedExecutorSettings { WorkerCount = 2, QueueCapacity = 4, ", text, StringComparison.Ordinal);
        Assert.Contains("SlowItemThreshold = 00:00:02, QueueWaitThreshold = off", text, StringComparison.Ordinal);
        Assert.DoesNotContain("-00:00:00.0010000", text, StringComparison.Ordinal);
        Assert.Contains("AdaptiveMaxWorkerCount = the hard maximum }", text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Reconfigure_SeveralInvalidSettings_NamesEachAndChangesNothing()
    {
        await using var executor = TestKit.Create(workers: 2, capacity: 4);
        var before = executor.Settings;

        var ex = Assert.Throws<ArgumentException>(() => executor.Reconfigure(executor.Settings with
        {
            WorkerCount = 3,
            QueueCapacity = 0,
            RejectionPolicy = (RejectionPolicy)42,
            WaitTimeout = TimeSpan.FromSeconds(-1),
        }));

        Assert.Contains("QueueCapacity", ex.Message, StringComparison.Ordinal);
        Assert.Contains("RejectionPolicy", ex.Message, StringComparison.Ordinal);
        Assert.Contains("WaitTimeout", ex.Message, StringComparison.Ordinal);
        Assert.Equal(before, executor.Settings);
    }

    [Fact]
    public async Task Reconfigure_WorkerCountAboveMaximum_IsRejectedByName()
    {
        await using var executor = TestKit.Create(workers: 2, capacity: 4);

        var errors = (executor.Settings with { WorkerCount = executor.MaxWorkerCount + 1 }).GetValidationErrors(executor.MaxWorkerCount);

        Assert.Equal(["WorkerCount"], errors.Keys);
        Assert.Throws<ArgumentException>(() => executor.Reconfigure(executor.Settings with { WorkerCount = executor.MaxWorkerCount + 1 }));
        Assert.Equal(2, executor.Settings.WorkerCount);
    }

    [Fact]
    public async Task Reconfigure_ValidChange_AppliesEverySettingAndReturnsBeforeAndAfter()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 4);

        var result = executor.Reconfigure(executor.Settings with
        {
            WorkerCount = 3,
            QueueCapacity = 9,
            RejectionPolicy = RejectionPolicy.Wait,
            WaitTimeout = TimeSpan.FromSeconds(5),
            SlowItemThreshold = TimeSpan.FromMinutes(2),
            QueueWaitThreshold = TimeSpan.FromSeconds(10),
        });

        Assert.Equal(new BoundedExecutorSettings { WorkerCount = 1, QueueCapacity = 4, RejectionPolicy = RejectionPolicy.Abort, WaitTimeout = TimeSpan.FromSeconds(30), SlowItemThreshold = TimeSpan.FromSeconds(30), QueueWaitThreshold = Timeout.InfiniteTimeSpan }, result.Previous);
        Assert.Equal(new BoundedExecutorSettings { WorkerCount = 3, QueueCapacity = 9, RejectionPolicy = RejectionPolicy.Wait, WaitTimeout = TimeSpan.FromSeconds(5), SlowItemThreshold = TimeSpan.FromMinutes(2), QueueWaitThreshold = TimeSpan.FromSeconds(10) }, result.Current);
        Assert.Equal(result.Current, executor.Settings);
        var statistics = TestKit.WaitForStatistics(executor, s => s.LiveWorkerCount == 3);
        Assert.Equal(9, statistics.QueueCapacity);
        Assert.Equal(RejectionPolicy.Wait, statistics.RejectionPolicy);
        Assert.Equal(TimeSpan.FromSeconds(5), statistics.WaitTimeout);
    }

    [Fact]
    public async Task Reconfigure_CapacityBelowQueueLength_EvictsNothingAndAdmitsOnlyOnceDrainedBelowIt()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var log = new RunLog();
        for (var i = 1; i <= 4; i++)
        {
            executor.Execute(log.Item(i));
        }

        executor.Reconfigure(executor.Settings with { QueueCapacity = 2 });

        Assert.Equal(4, executor.QueueLength);
        Assert.False(executor.TryExecute(log.Item(5)));
        gate.Open();
        TestKit.WaitForStatistics(executor, s => s.QueueLength == 0 && s.BusyWorkerCount == 0);
        Assert.True(executor.TryExecute(log.Item(6)));
        await executor.ShutdownAsync();
        Assert.Equal([1, 2, 3, 4, 6], log.Ran);
        var statistics = executor.GetStatistics();
        Assert.Equal(0, statistics.Discarded);
        Assert.Equal(1, statistics.Rejected);
        TestKit.AssertConserved(statistics);
    }

    [Fact]
    public async Task Reconfigure_CapacityShrunkUnderDiscardOldest_EvictsOneItemPerAdmission()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 4, policy: RejectionPolicy.DiscardOldest);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        var log = new RunLog();
        for (var i = 1; i <= 4; i++)
        {
            executor.Execute(log.Item(i));
        }

        executor.Reconfigure(executor.Settings with { QueueCapacity = 2 });
        executor.Execute(log.Item(5));

        gate.Open();
        await executor.ShutdownAsync();
        Assert.Equal([2, 3, 4, 5], log.Ran);
        Assert.Equal(1, executor.GetStatistics().Discarded);
    }

    [Fact]
    public async Task Reconfigure_CapacityGrown_AdmitsAProducerWaitingForRoom()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Wait, configure: o => o.WaitTimeout = Timeout.InfiniteTimeSpan);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        using var admitted = new ManualResetEventSlim();
        var producer = new Thread(() =>
        {
            executor.Execute(() => { });
            admitted.Set();
        });
        producer.Start();
        TestKit.WaitForStatistics(executor, s => s.WaitingProducers == 1);

        executor.Reconfigure(executor.Settings with { QueueCapacity = 2 });

        admitted.WaitOrFail("the waiting producer to be admitted");
        Assert.Equal(2, executor.QueueLength);
        gate.Open();
        producer.Join();
    }

    [Fact]
    public async Task Reconfigure_PolicyChanged_AppliesToTheNextFullQueueDecision()
    {
        using var gate = new Gate();
        await using var executor = TestKit.Create(workers: 1, capacity: 1, policy: RejectionPolicy.Abort);
        executor.Execute(gate.Blocker);
        gate.WaitEntered();
        executor.Execute(() => { });
        Assert.Throws<RejectedExecutionException>(() => executor.Execute(() => { }));

        executor.Reconfigure(executor.Settings with { RejectionPolicy = RejectionPolicy.Discard });
        executor.Execute(() => { });

        var statistics = executor.GetStatistics();
        Assert.Equal(1, statistics.Rejected);
        Assert.Equal(1, statistics.Discarded);
        gate.Open();
    }

    [Fact]
    public async Task Reconfigure_AfterShutdown_ThrowsAndChangesNothing()
    {
        var executor = TestKit.Create(workers: 1, capacity: 4);
        await executor.ShutdownAsync();

        Assert.Throws<InvalidOperationException>(() => executor.Reconfigure(executor.Settings with { QueueCapacity = 8 }));
        Assert.Equal(4, executor.Settings.QueueCapacity);
    }

    [Fact]
    public async Task Reconfigure_ChangeFunction_AChangeThatLandsMeanwhileIsKeptAndTheFunctionRunsAgain()
    {
        // The change function reads the settings, then (gated) another change lands before it returns: had its result been
        // applied as it was, it would have written the other change's setting back to its old value.
        await using var executor = TestKit.Create(workers: 1, capacity: 4);
        using var computing = new ManualResetEventSlim();
        using var otherApplied = new ManualResetEventSlim();
        var calls = 0;
        var changer = new Thread(() => executor.Reconfigure(settings =>
        {
            if (Interlocked.Increment(ref calls) == 1)
            {
                computing.Set();
                otherApplied.WaitOrFail("the other change");
            }

            return settings with { QueueCapacity = 99 };
        }));
        changer.Start();
        computing.WaitOrFail("the change function to run");

        executor.Reconfigure(executor.Settings with { WaitTimeout = TimeSpan.FromSeconds(7) });
        otherApplied.Set();
        Assert.True(changer.Join(TestKit.Safety));

        Assert.Equal(99, executor.Settings.QueueCapacity);
        Assert.Equal(TimeSpan.FromSeconds(7), executor.Settings.WaitTimeout);
        Assert.Equal(2, Volatile.Read(ref calls));
    }

    [Fact]
    public async Task Reconfigure_Result_NamesTheChangedSettingsAndDescribesThemInvariantly()
    {
        await using var executor = TestKit.Create(workers: 1, capacity: 4);

        var result = executor.Reconfigure(executor.Settings with { QueueCapacity = 2000, WaitTimeout = Timeout.InfiniteTimeSpan });
        var unchanged = executor.Reconfigure(executor.Settings);

        Assert.Equal(["QueueCapacity", "WaitTimeout"], result.ChangedSettings);
        Assert.Equal("QueueCapacity 4 -> 2000, WaitTimeout 00:00:30 -> infinite", result.ToString());
        Assert.Empty(unchanged.ChangedSettings);
        Assert.Equal("no change", unchanged.ToString());
    }

    [Fact]
    public void WithChanges_TakesOnlyTheSettingsThatDifferBetweenFromAndTo()
    {
        var configured = new BoundedExecutorOptions { WorkerCount = 2, QueueCapacity = 100 }.ToSettings();
        var reloaded = configured with { QueueCapacity = 250 };
        var current = configured with { WorkerCount = 6, RejectionPolicy = RejectionPolicy.Discard };

        var merged = current.WithChanges(configured, reloaded);

        Assert.Equal(current with { QueueCapacity = 250 }, merged);
    }
}
