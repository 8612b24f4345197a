using BoundedWork.Internal.Adaptive;

namespace BoundedWork.Tests.Adaptive;

/// <summary>The controller's rules, one by one, with synthetic signals on a fake clock.</summary>
public sealed class AdaptiveControllerTests
{
    private static readonly TimeSpan Ten = TimeSpan.FromMilliseconds(10);

    [Fact]
    public void Decide_StandingQueueRunTimeAtBaseline_Grows()
    {
        var harness = new ControllerHarness(count: 2);
        var world = Signals.Knee(knee: 32, Ten, arrivals: 2_000);

        var grow = harness.RunUntil(world, d => d.IsChange, TimeSpan.FromSeconds(5));

        Assert.Equal(AdaptiveRule.Grow, grow.Rule);
        Assert.Equal(2, grow.OldCount);
        Assert.InRange(grow.NewCount, 3, 8); // at most MaxGrowthFactor (4) times the count
        Assert.True(grow.Applied);
        Assert.NotNull(grow.Signals.Baseline);
    }

    [Fact]
    public void Decide_GrowthKeepsPaying_ReachesTheDemandInFewSteps()
    {
        var harness = new ControllerHarness(count: 2);
        var world = Signals.Knee(knee: 64, Ten, arrivals: 2_000); // 20 workers' worth of demand, knee far above

        harness.Run(world, TimeSpan.FromSeconds(10));

        var grows = harness.Changes.ToList();
        Assert.All(grows, d => Assert.Equal(AdaptiveRule.Grow, d.Rule));
        Assert.All(grows, d => Assert.True(d.NewCount <= d.OldCount * 4, d.ToString()));
        Assert.InRange(harness.Count, 20, 30);
        Assert.InRange(grows.Count, 2, 4);
    }

    [Fact]
    public void Decide_GrowthStopsPaying_SettlesAtTheKneeAndHolds()
    {
        var harness = new ControllerHarness(count: 2);
        var world = Signals.Knee(knee: 12, Ten, arrivals: 3_000); // demand far above what 12 connections serve

        harness.RunUntil(world, d => d.Rule == AdaptiveRule.AtCeiling, TimeSpan.FromSeconds(30));
        var settled = harness.Count;
        var changesBefore = harness.Changes.Count();
        harness.Run(world, TimeSpan.FromSeconds(55)); // less than the probe hold (60 s)

        Assert.InRange(settled, 11, 13);
        Assert.Contains(harness.Decisions, d => d.Rule is AdaptiveRule.GrowthDidNotPay or AdaptiveRule.GrowthPaidPartly);
        Assert.True(changesBefore == harness.Changes.Count(), harness.Describe());
        Assert.Equal(AdaptiveRule.AtCeiling, harness.Decisions[^1].Rule);
    }

    [Fact]
    public void Decide_AfterProbeHold_ProbesOnceAndDoublesTheHoldWhenItDoesNotPay()
    {
        var harness = new ControllerHarness(count: 2);
        var world = Signals.Knee(knee: 12, Ten, arrivals: 3_000);
        harness.Run(world, TimeSpan.FromSeconds(30));
        var settled = harness.Count;

        harness.Run(world, TimeSpan.FromMinutes(10));

        // Probes after 60 s, then 120 s, 240 s...: each one step up and one back, so few changes in ten minutes.
        var probes = harness.Changes.Where(d => harness.Decisions.IndexOf(d) > 0 && d.NewCount > d.OldCount && d.OldCount == settled).Count();
        Assert.InRange(probes, 1, 4);
        Assert.InRange(harness.Count, settled - 1, settled + 1);
    }

    [Fact]
    public void Decide_RunTimeClimbsPastBaseline_BacksOffWithBoundedGradient()
    {
        var harness = new ControllerHarness(count: 20);
        harness.Run(Steady(Ten), TimeSpan.FromSeconds(5));

        // The dependency saturates: run time 10 times the baseline, every worker busy.
        var backoff = harness.RunUntil(Steady(Ten * 10), d => d.IsChange, TimeSpan.FromSeconds(5));

        Assert.Equal(AdaptiveRule.Saturated, backoff.Rule);
        Assert.Equal(10, backoff.NewCount); // the gradient (0.12) is bounded below by 1 - MaxDecrease
    }

    [Fact]
    public void Decide_RunTimeJustPastBackoffThreshold_RemovesInProportionToTheGradient()
    {
        var harness = new ControllerHarness(count: 20);
        harness.Run(Steady(Ten), TimeSpan.FromSeconds(5));

        var backoff = harness.RunUntil(Steady(Ten * 1.6), d => d.IsChange, TimeSpan.FromSeconds(5));

        Assert.Equal(AdaptiveRule.Saturated, backoff.Rule);
        Assert.Equal(15, backoff.NewCount); // gradient: (1 + GrowthTolerance) / 1.6 = 0.75
    }

    [Fact]
    public void Decide_FailuresRise_BacksOff()
    {
        var harness = new ControllerHarness(count: 16);
        harness.Run(Steady(Ten), TimeSpan.FromSeconds(5));

        var backoff = harness.RunUntil(
            count => Steady(Ten)(count) with { CompletedPerSecond = 800, FailedPerSecond = 800 },
            d => d.IsChange,
            TimeSpan.FromSeconds(5));

        Assert.Equal(AdaptiveRule.Failures, backoff.Rule);
        Assert.Equal(8, backoff.NewCount); // half failing: gradient 0.5
        Assert.Equal(0.5, backoff.Signals.FailureShare, 3);
    }

    [Fact]
    public void Decide_PersistentFailureShare_BecomesUsualAndBackOffsStop()
    {
        var harness = new ControllerHarness(count: 32, min: 2);
        harness.Run(Steady(Ten), TimeSpan.FromSeconds(5));

        harness.Run(count => Steady(Ten)(count) with { FailedPerSecond = 0.3 * count / Ten.TotalSeconds }, TimeSpan.FromMinutes(10));

        var backoffs = harness.Decisions.Where(d => d.Rule == AdaptiveRule.Failures && d.IsChange).ToList();
        Assert.NotEmpty(backoffs);
        Assert.True(backoffs.Count <= 6, $"{backoffs.Count} back-offs for one persistent failure level");
        var lastBackoff = harness.Decisions.LastIndexOf(backoffs[^1]);
        Assert.True(lastBackoff < harness.Decisions.Count / 2, "back-offs went on into the second half of the run");
    }

    [Fact]
    public void Decide_WorkersIdleWithoutStandingQueue_RetiresSlowly()
    {
        var harness = new ControllerHarness(count: 20);
        var world = Signals.Knee(knee: 64, Ten, arrivals: 300); // 3 busy workers of 20

        harness.Run(world, TimeSpan.FromSeconds(29));
        Assert.Equal(20, harness.Count);

        var first = harness.RunUntil(world, d => d.IsChange, TimeSpan.FromSeconds(2));
        Assert.Equal(AdaptiveRule.RetireIdle, first.Rule);
        Assert.Equal(12, first.NewCount); // half of the 17 idle throughout, rounded down
        var firstAt = harness.Elapsed;

        var second = harness.RunUntil(world, d => d.IsChange, TimeSpan.FromSeconds(40));
        Assert.Equal(AdaptiveRule.RetireIdle, second.Rule);
        Assert.True(harness.Elapsed - firstAt >= AdaptiveParameters.Default.IdleRetireAfter, "two retirements closer than the idle period");
        Assert.Equal(8, second.NewCount);
    }

    [Fact]
    public void Decide_Idle_NeverRetiresBelowTheMinimum()
    {
        var harness = new ControllerHarness(count: 6, min: 4);

        harness.Run(Signals.Knee(knee: 64, Ten, arrivals: 10), TimeSpan.FromMinutes(10));

        Assert.Equal(4, harness.Count);
        Assert.All(harness.Decisions, d => Assert.True(d.NewCount >= 4));
    }

    [Fact]
    public void Pin_UntilUnpinned_HoldsThenResumes()
    {
        var harness = new ControllerHarness(count: 5);
        var world = Signals.Knee(knee: 64, Ten, arrivals: 2_000);
        harness.Controller.Pin(5);

        harness.Run(world, TimeSpan.FromMinutes(5));

        Assert.Equal(5, harness.Count);
        Assert.All(harness.Decisions, d => Assert.Equal(AdaptiveRule.Pinned, d.Rule));
        Assert.True(harness.Controller.TryGetPin(out var pinned, out var until));
        Assert.Equal(5, pinned);
        Assert.Null(until);

        harness.Controller.Unpin();
        Assert.Equal(AdaptiveRule.Unpinned, harness.Step(world).Rule);
        Assert.False(harness.Controller.TryGetPin(out _, out _));
        harness.RunUntil(world, d => d.Rule == AdaptiveRule.Grow, TimeSpan.FromSeconds(5));
    }

    [Fact]
    public void Pin_ForDuration_ExpiresAndResumes()
    {
        var harness = new ControllerHarness(count: 5);
        var world = Signals.Knee(knee: 64, Ten, arrivals: 2_000);
        harness.Controller.Pin(5, TimeSpan.FromSeconds(30));
        Assert.True(harness.Controller.TryGetPin(out _, out var until));
        Assert.Equal(harness.Clock.GetUtcNow() + TimeSpan.FromSeconds(30), until);

        harness.Run(world, TimeSpan.FromSeconds(29.5));
        Assert.All(harness.Decisions, d => Assert.Equal(AdaptiveRule.Pinned, d.Rule));

        var unpinned = harness.RunUntil(world, d => d.Rule != AdaptiveRule.Pinned, TimeSpan.FromSeconds(1));
        Assert.Equal(AdaptiveRule.Unpinned, unpinned.Rule);
        Assert.True(harness.Elapsed >= TimeSpan.FromSeconds(30));
        harness.RunUntil(world, d => d.Rule == AdaptiveRule.Grow, TimeSpan.FromSeconds(5));
    }

    [Fact]
    public void Pin_AtACountOutsideTheBounds_IsClampedIntoThem()
    {
        var harness = new ControllerHarness(count: 10, min: 4, max: 16);
        harness.Controller.Pin(40);

        var decision = harness.Step(Steady(Ten));

        Assert.Equal(AdaptiveRule.Pinned, decision.Rule);
        Assert.Equal(16, decision.NewCount);
        Assert.Throws<ArgumentOutOfRangeException>(() => harness.Controller.Pin(0));
        Assert.Throws<ArgumentOutOfRangeException>(() => harness.Controller.Pin(4, TimeSpan.Zero));
    }

    [Fact]
    public void Advisory_RecordsWhatItWouldDoWithoutApplyingIt()
    {
        var harness = new ControllerHarness(count: 2);
        harness.Controller.Advisory = true;
        var world = Signals.Knee(knee: 64, Ten, arrivals: 2_000);

        harness.Run(world, TimeSpan.FromMinutes(2));

        Assert.Equal(2, harness.Count);
        var advice = harness.Changes.ToList();
        Assert.NotEmpty(advice);
        Assert.All(advice, d => Assert.False(d.Applied));
        Assert.All(advice, d => Assert.Equal(AdaptiveRule.Grow, d.Rule));
        Assert.All(advice, d => Assert.Equal(2, d.OldCount));
        Assert.StartsWith("would grow 2 -> ", advice[0].ToString(), StringComparison.Ordinal);
        Assert.True(advice.Count <= 2 * AdaptiveParameters.Default.MaxChangesPerMinute, $"{advice.Count} pieces of advice in two minutes");

        // Leaving advisory mode, the controller acts on what it sees.
        harness.Controller.Advisory = false;
        harness.RunUntil(world, d => d.IsChange && d.Applied, TimeSpan.FromSeconds(5));
        Assert.True(harness.Count > 2);
    }

    [Fact]
    public void Decide_CountOutsideBounds_BringsItInside()
    {
        var harness = new ControllerHarness(count: 40, min: 4, max: 16);

        var decision = harness.Step(Steady(Ten));

        Assert.Equal(AdaptiveRule.Bounds, decision.Rule);
        Assert.Equal(16, decision.NewCount);
        harness.Min = 20;
        harness.Max = 30;
        Assert.Equal(20, harness.Step(Steady(Ten)).NewCount);
    }

    [Fact]
    public void Decide_StandingQueueAtTheMaximum_HoldsThere()
    {
        var harness = new ControllerHarness(count: 2, max: 8);

        harness.Run(Signals.Knee(knee: 64, Ten, arrivals: 5_000), TimeSpan.FromMinutes(2));

        Assert.Equal(8, harness.Count);
        Assert.All(harness.Decisions, d => Assert.InRange(d.NewCount, 2, 8));
        Assert.Equal(AdaptiveRule.AtMaximum, harness.Decisions[^1].Rule);
    }

    [Fact]
    public void Decide_MomentaryBurstBelowTheQueueWaitTarget_DoesNotGrow()
    {
        var harness = new ControllerHarness(count: 4);

        // The queue fills and empties within each interval: its shortest wait stays below the 10 ms target.
        harness.Run(_ => new Signals(400, Ten, TimeSpan.FromMilliseconds(2), 30, 400), TimeSpan.FromMinutes(1));

        Assert.Empty(harness.Changes);
        Assert.All(harness.Decisions, d => Assert.Equal(AdaptiveRule.Steady, d.Rule));
    }

    [Fact]
    public void Decide_SteadyLoadAtTheKnee_SettlesAndChangesRarely()
    {
        var harness = new ControllerHarness(count: 2);
        var world = Signals.Knee(knee: 16, Ten, arrivals: 2_500);
        harness.Run(world, TimeSpan.FromMinutes(1));
        var settledAt = harness.Decisions.Count;

        harness.Run(world, TimeSpan.FromMinutes(20));

        // After the first minute: probes only, each one step up and back, with holds that double (60 s, 120 s, ...).
        var later = harness.Decisions.Skip(settledAt).Where(d => d.IsChange).ToList();
        Assert.True(later.Count <= 12, $"{later.Count} changes in 20 minutes of a steady load");
        Assert.InRange(harness.Count, 15, 17);
    }

    [Fact]
    public void Decide_TwoChanges_NeverCloserThanTheCooldownNorMoreThanTheBudgetPerMinute()
    {
        var parameters = AdaptiveParameters.Default with { Cooldown = TimeSpan.FromSeconds(2), MaxChangesPerMinute = 3 };
        var harness = new ControllerHarness(count: 2, parameters: parameters);

        // A world that flips between a standing queue and heavy failures, to provoke a change at every chance.
        var flip = false;
        harness.Run(
            count => (flip = !flip)
                ? Signals.Knee(knee: 64, Ten, arrivals: 5_000)(count)
                : Steady(Ten)(count) with { FailedPerSecond = count / Ten.TotalSeconds },
            TimeSpan.FromMinutes(5));

        var times = harness.Decisions.Select((d, i) => (d, i)).Where(x => x.d.IsChange).Select(x => x.i * parameters.Interval).ToList();
        Assert.NotEmpty(times);
        for (var i = 1; i < times.Count; i++)
        {
            Assert.True(times[i] - times[i - 1] >= parameters.Cooldown, $"changes at {times[i - 1]} and {times[i]}");
        }

        Assert.All(times, t => Assert.True(times.Count(u => u > t - TimeSpan.FromMinutes(1) && u <= t) <= 3, $"more than 3 changes in the minute before {t}"));
        Assert.Contains(harness.Decisions, d => d.Rule == AdaptiveRule.RateLimited);
    }

    [Fact]
    public void Constructor_InvalidParameters_NamesEachOne()
    {
        var bad = AdaptiveParameters.Default with { Interval = TimeSpan.Zero, MaxDecrease = 1.5, GrowthTolerance = 0.9 };

        var error = Assert.Throws<ArgumentException>(() => new AdaptiveController(bad, TimeProvider.System));

        Assert.Contains("Interval", error.Message, StringComparison.Ordinal);
        Assert.Contains("MaxDecrease", error.Message, StringComparison.Ordinal);
        Assert.Contains("GrowthTolerance", error.Message, StringComparison.Ordinal);
        Assert.Empty(AdaptiveParameters.Default.Validate());
    }

    [Fact]
    public void Decide_InvalidSample_NamesTheField()
    {
        var harness = new ControllerHarness(count: 4);
        var sample = harness.Sample(Steady(Ten)(4), TimeSpan.FromSeconds(1)) with { MinWorkerCount = 0 };

        var error = Assert.Throws<ArgumentException>(() => harness.Controller.Decide(sample));

        Assert.Contains("MinWorkerCount", error.Message, StringComparison.Ordinal);
    }

    /// <summary>Every worker busy, no standing queue, the run time given: the dependency at a steady load.</summary>
    internal static Func<int, Signals> Steady(TimeSpan runTime) => count =>
        new Signals(count / runTime.TotalSeconds, runTime, TimeSpan.Zero, 0, count / runTime.TotalSeconds, MaxBusy: count);
}
