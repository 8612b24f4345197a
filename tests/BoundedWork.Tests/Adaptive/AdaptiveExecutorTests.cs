using BoundedWork.Internal.Adaptive;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Adaptive;

/// <summary>
/// The adaptive mode on a real executor: real workers, a dependency that lets items finish only when the test says
/// (a semaphore), and a fake clock the test moves between the watchdog's looks. The test takes the looks itself
/// (<see cref="AdaptiveDriver.Tick"/>); the watchdog's own looks at the same fake time add nothing to an interval.
/// </summary>
public sealed class AdaptiveExecutorTests
{
    private static readonly TimeSpan Look = TimeSpan.FromMilliseconds(50);

    [Fact]
    public void AdaptiveOn_StandingQueue_GrowsToTheMaximum_ThenIdle_ShrinksToTheMinimum()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 2, max: 8);
        rig.Submit(400);

        var grown = rig.LookUntil(s => s.TargetWorkerCount == 8, workingLooks: true);
        Assert.Equal(8, grown.TargetWorkerCount);
        var growth = Assert.Single(rig.Executor.GetWorkerCountDecisions(), d => d.Rule == "Grow" && d.OldCount == 2);
        Assert.True(growth.Applied);
        Assert.True(growth.NewCount > 2);
        Assert.True(growth.MinQueueWait >= TimeSpan.FromMilliseconds(10), $"grew on a standing queue: {growth.Description}");
        Assert.All(rig.Executor.GetWorkerCountDecisions(), d => Assert.InRange(d.NewCount, 2, 8));

        rig.ReleaseAll();
        TestKit.WaitForStatistics(rig.Executor, s => s.QueueLength == 0 && s.Running == 0);
        var shrunk = rig.LookUntil(s => s.TargetWorkerCount == 2, workingLooks: false);
        Assert.Equal(2, shrunk.TargetWorkerCount);
        Assert.Contains(rig.Executor.GetWorkerCountDecisions(), d => d.Rule == "RetireIdle" && d.Applied && d.NewCount < d.OldCount);
        Assert.Equal(rig.Executor.GetWorkerCountDecisions().Count, rig.Reported.Count);
        Assert.Equal(rig.Reported.Count, shrunk.WorkerCountDecisions);
    }

    [Fact]
    public void AdaptiveOn_AdaptiveMaximumBelowTheHardMaximum_NeverGrowsPastIt()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 5);
        rig.Submit(400);

        var grown = rig.LookUntil(s => s.TargetWorkerCount == 5, workingLooks: true);
        for (var i = 0; i < 40; i++)
        {
            grown = rig.WorkingLook();
            Assert.True(grown.TargetWorkerCount <= 5, $"grew past the adaptive maximum: {grown.TargetWorkerCount}");
        }

        Assert.Equal(5, grown.AdaptiveMaxWorkerCount);
        Assert.All(rig.Executor.GetWorkerCountDecisions(), d => Assert.InRange(d.NewCount, 1, 5));
        rig.ReleaseAll();
    }

    [Fact]
    public void AdaptiveOn_CountAboveTheAdaptiveMaximum_BroughtInsideByTheBoundsRule()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 6, min: 1, max: 4);
        var inside = rig.LookUntil(s => s.TargetWorkerCount == 4, workingLooks: false);
        Assert.Equal(4, inside.TargetWorkerCount);
        var bounds = Assert.Single(rig.Executor.GetWorkerCountDecisions());
        Assert.Equal(("Bounds", 6, 4, true), (bounds.Rule, bounds.OldCount, bounds.NewCount, bounds.Applied));
    }

    [Fact]
    public void AdaptiveAdvisory_StandingQueue_RecordsGrowthWithoutChangingTheCount()
    {
        using var rig = new Rig(AdaptiveMode.Advisory, workers: 2, min: 2, max: 8);
        rig.Submit(400);

        rig.LookUntil(_ => rig.Executor.GetWorkerCountDecisions().Any(d => d.Rule == "Grow"), workingLooks: true);
        var proposal = rig.Executor.GetWorkerCountDecisions().First(d => d.Rule == "Grow");
        Assert.False(proposal.Applied);
        Assert.True(proposal.NewCount > 2);
        Assert.StartsWith("would grow", proposal.Description, StringComparison.Ordinal);
        var s = rig.Executor.GetStatistics();
        Assert.Equal(2, s.TargetWorkerCount);
        Assert.Equal(AdaptiveMode.Advisory, s.AdaptiveMode);
        Assert.All(rig.Executor.GetWorkerCountDecisions(), d => Assert.False(d.Applied));
        rig.ReleaseAll();
    }

    [Fact]
    public void Resize_WhileAdaptive_PinsTheCountUntilUnpinned_ThenGrowthResumes()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 8);
        rig.Executor.Resize(3);
        var pinned = rig.Executor.GetStatistics();
        Assert.True(pinned.IsWorkerCountPinned);
        Assert.Null(pinned.WorkerCountPinnedUntil);
        var pin = Assert.Single(rig.Executor.GetWorkerCountDecisions());
        Assert.Equal(("Pinned", 2, 3), (pin.Rule, pin.OldCount, pin.NewCount));

        rig.Submit(400);
        for (var i = 0; i < 60; i++)
        {
            Assert.Equal(3, rig.WorkingLook().TargetWorkerCount);
        }

        rig.Executor.UnpinWorkerCount();
        Assert.False(rig.Executor.GetStatistics().IsWorkerCountPinned);
        var resumed = rig.LookUntil(s => s.TargetWorkerCount > 3, workingLooks: true);
        Assert.True(resumed.TargetWorkerCount > 3);
        Assert.Contains(rig.Executor.GetWorkerCountDecisions(), d => d.Rule == "Unpinned");
        rig.ReleaseAll();
    }

    [Fact]
    public void Resize_WithPinDuration_PinEndsWhenItsTimeRunsOut()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 8);
        var pinnedAt = rig.Clock.GetUtcNow();
        rig.Executor.Resize(4, TimeSpan.FromSeconds(2));
        Assert.Equal(pinnedAt + TimeSpan.FromSeconds(2), rig.Executor.GetStatistics().WorkerCountPinnedUntil);

        var unpinned = rig.LookUntil(s => !s.IsWorkerCountPinned, workingLooks: false);
        Assert.False(unpinned.IsWorkerCountPinned);
        Assert.True(rig.Clock.GetUtcNow() >= pinnedAt + TimeSpan.FromSeconds(2), "the pin held until its time ran out");
        rig.LookUntil(_ => rig.Executor.GetWorkerCountDecisions().Any(d => d.Rule == "Unpinned"), workingLooks: false);
    }

    [Fact]
    public void Resize_WhileAdaptiveOff_DoesNotPin()
    {
        using var rig = new Rig(AdaptiveMode.Off, workers: 2, min: 1, max: 8);
        rig.Executor.Resize(5);
        var s = rig.Executor.GetStatistics();
        Assert.Equal((5, false, 0L), (s.TargetWorkerCount, s.IsWorkerCountPinned, s.WorkerCountDecisions));
        Assert.Empty(rig.Executor.GetWorkerCountDecisions());
    }

    [Fact]
    public void Resize_PinDurationNotPositive_ThrowsNamingIt_AndNothingChanges()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 8);
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => rig.Executor.Resize(4, TimeSpan.Zero));
        Assert.Equal("pinFor", error.ParamName);
        Assert.Equal(2, rig.Executor.GetStatistics().TargetWorkerCount);
        Assert.False(rig.Executor.GetStatistics().IsWorkerCountPinned);
    }

    [Fact]
    public void PinWorkerCount_HoldsAgainstDecisionsAndReconfigure_UnpinReturnsControlToTheController()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 8);
        Assert.False(rig.Executor.IsWorkerCountPinned);

        rig.Executor.PinWorkerCount(3);

        Assert.True(rig.Executor.IsWorkerCountPinned);
        Assert.Equal(3, rig.Executor.Settings.WorkerCount);
        var pin = Assert.Single(rig.Executor.GetWorkerCountDecisions());
        Assert.Equal(("Pinned", 2, 3), (pin.Rule, pin.OldCount, pin.NewCount));

        // A reconfiguration keeps the pin: another setting leaves the count alone; a new count holds until the next
        // decision, which brings it back to the pinned one.
        rig.Executor.Reconfigure(s => s with { QueueCapacity = 900 });
        Assert.True(rig.Executor.IsWorkerCountPinned);
        Assert.Equal(3, rig.Executor.Settings.WorkerCount);
        rig.Executor.Reconfigure(s => s with { WorkerCount = 6 });
        Assert.True(rig.Executor.IsWorkerCountPinned);
        Assert.Equal(6, rig.Executor.Settings.WorkerCount);
        var back = rig.LookUntil(s => s.TargetWorkerCount == 3, workingLooks: false);
        Assert.True(back.IsWorkerCountPinned);
        Assert.Equal(("Pinned", 6, 3), rig.Executor.GetWorkerCountDecisions().Select(d => (d.Rule, d.OldCount, d.NewCount)).Last());
        TestKit.WaitForStatistics(rig.Executor, s => s.LiveWorkerCount == 3);

        rig.Submit(400);
        for (var i = 0; i < 60; i++)
        {
            Assert.Equal(3, rig.WorkingLook().TargetWorkerCount); // a standing queue would grow an unpinned count
        }

        rig.Executor.UnpinWorkerCount();

        Assert.False(rig.Executor.IsWorkerCountPinned);
        var resumed = rig.LookUntil(s => s.TargetWorkerCount > 3, workingLooks: true);
        Assert.False(resumed.IsWorkerCountPinned);
        Assert.Contains(rig.Executor.GetWorkerCountDecisions(), d => d.Rule == "Unpinned");
        Assert.Contains(rig.Executor.GetWorkerCountDecisions(), d => d.Rule == "Grow" && d.OldCount >= 3);
        rig.ReleaseAll();
    }

    [Fact]
    public void PinWorkerCount_WhileAdaptiveOff_PinsAtOnce_AndHoldsOnceTheModeIsTurnedOn()
    {
        using var rig = new Rig(AdaptiveMode.Off, workers: 2, min: 1, max: 8);

        rig.Executor.PinWorkerCount(3, TimeSpan.FromHours(1));

        var s = rig.Executor.GetStatistics();
        Assert.Equal((3, true, true), (s.TargetWorkerCount, s.IsWorkerCountPinned, rig.Executor.IsWorkerCountPinned));
        Assert.Equal(rig.Clock.GetUtcNow() + TimeSpan.FromHours(1), s.WorkerCountPinnedUntil);
        rig.Executor.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.On });
        rig.Submit(400);
        for (var i = 0; i < 60; i++)
        {
            Assert.Equal(3, rig.WorkingLook().TargetWorkerCount);
        }

        rig.Executor.UnpinWorkerCount();
        rig.LookUntil(s => s.TargetWorkerCount > 3, workingLooks: true);
        rig.ReleaseAll();
    }

    [Fact]
    public void PinWorkerCount_PinEndsWhenItsTimeRunsOut_ThenTheControllerDecidesAgain()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 8);
        rig.Executor.PinWorkerCount(4, TimeSpan.FromSeconds(2));
        Assert.True(rig.Executor.IsWorkerCountPinned);

        rig.LookUntil(_ => !rig.Executor.IsWorkerCountPinned, workingLooks: false);

        rig.LookUntil(_ => rig.Executor.GetWorkerCountDecisions().Any(d => d.Rule == "Unpinned"), workingLooks: false);
        var shrunk = rig.LookUntil(s => s.TargetWorkerCount < 4, workingLooks: false); // idle: the controller retires workers again
        Assert.False(shrunk.IsWorkerCountPinned);
    }

    [Theory]
    [InlineData(0, 1.0, "workerCount")]
    [InlineData(9, 1.0, "workerCount")]
    [InlineData(4, 0.0, "duration")]
    [InlineData(4, -2.0, "duration")]
    public void PinWorkerCount_OutOfRange_ThrowsNamingIt_AndNothingChanges(int workers, double seconds, string parameter)
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 8);

        var error = Assert.Throws<ArgumentOutOfRangeException>(() => rig.Executor.PinWorkerCount(workers, TimeSpan.FromSeconds(seconds)));

        Assert.Equal(parameter, error.ParamName);
        Assert.Equal((2, false), (rig.Executor.Settings.WorkerCount, rig.Executor.IsWorkerCountPinned));
        Assert.Empty(rig.Executor.GetWorkerCountDecisions());
    }

    [Fact]
    public void PinWorkerCount_AfterShutdown_Throws_AndPinsNothing()
    {
        using var rig = new Rig(AdaptiveMode.On, workers: 2, min: 1, max: 8);
        rig.Executor.Dispose();

        Assert.Throws<InvalidOperationException>(() => rig.Executor.PinWorkerCount(3));
        Assert.False(rig.Executor.IsWorkerCountPinned);
    }

    [Fact]
    public void Reconfigure_TurnsAdaptiveOnAndOff_AtRuntime()
    {
        using var rig = new Rig(AdaptiveMode.Off, workers: 2, min: 2, max: 8);
        rig.Submit(400);
        for (var i = 0; i < 30; i++)
        {
            Assert.Equal(2, rig.WorkingLook().TargetWorkerCount);
        }

        var change = rig.Executor.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.On });
        Assert.Equal(["AdaptiveMode"], change.ChangedSettings);
        Assert.Equal("AdaptiveMode Off -> On", change.ToString());
        rig.LookUntil(s => s.TargetWorkerCount > 2, workingLooks: true);
        rig.ReleaseAll();
    }

    /// <summary>An executor on a fake clock whose items wait for the test's permits.</summary>
    private sealed class Rig : IDisposable
    {
        private readonly SemaphoreSlim _permits = new(0);
        private int _submitted;

        public Rig(AdaptiveMode mode, int workers, int min, int max)
        {
            Executor = TestKit.Create(workers, capacity: 1000, configure: o =>
            {
                o.MaxWorkerCount = 8;
                o.TimeProvider = Clock;
                o.SlowItemThreshold = Timeout.InfiniteTimeSpan;
                o.AdaptiveMode = mode;
                o.AdaptiveMinWorkerCount = min;
                o.AdaptiveMaxWorkerCount = max;
                o.AdaptiveParameters = AdaptiveParameters.Default with { MinItemsPerInterval = 4, IdleRetireAfter = TimeSpan.FromSeconds(1) };
                o.OnWorkerCountDecision = Reported.Add;
            });
        }

        public FakeTimeProvider Clock { get; } = new();

        public BoundedExecutor Executor { get; }

        public System.Collections.Concurrent.ConcurrentBag<WorkerCountDecision> Reported { get; } = [];

        public void Submit(int count)
        {
            for (var i = 0; i < count; i++)
            {
                Executor.Execute(() => Assert.True(_permits.Wait(TestKit.Safety), "The test never released the item."));
            }

            _submitted += count;
        }

        /// <summary>
        /// One look with work flowing: every worker is busy on an item, each finishes exactly one (the dependency
        /// serves them all), then the clock moves on and the driver looks.
        /// </summary>
        public BoundedExecutorStatistics WorkingLook()
        {
            var s = TestKit.WaitForStatistics(Executor, s => s.BusyWorkerCount == s.TargetWorkerCount && s.LiveWorkerCount == s.TargetWorkerCount);
            _permits.Release(s.BusyWorkerCount);
            TestKit.WaitForStatistics(Executor, after => after.Completed >= s.Completed + s.BusyWorkerCount);
            return IdleLook();
        }

        public BoundedExecutorStatistics IdleLook()
        {
            Clock.Advance(Look);
            Executor.Adaptive.Tick();
            return Executor.GetStatistics();
        }

        public BoundedExecutorStatistics LookUntil(Func<BoundedExecutorStatistics, bool> condition, bool workingLooks)
        {
            var s = Executor.GetStatistics();
            for (var look = 0; look < 2000 && !condition(s); look++)
            {
                s = workingLooks ? WorkingLook() : IdleLook();
            }

            Assert.True(condition(s), $"Never reached the expected state; decisions: {string.Join(" | ", Executor.GetWorkerCountDecisions().Select(d => d.Description))}");
            return s;
        }

        public void ReleaseAll()
        {
            if (_submitted > 0)
            {
                _permits.Release(_submitted);
            }
        }

        public void Dispose()
        {
            ReleaseAll();
            Executor.Dispose();
            _permits.Dispose();
        }
    }
}
