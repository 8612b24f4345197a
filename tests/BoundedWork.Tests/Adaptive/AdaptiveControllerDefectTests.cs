using BoundedWork.Internal.Adaptive;

namespace BoundedWork.Tests.Adaptive;

/// <summary>
/// The known defects of other adaptive limiters, each turned into a test this controller must pass: a limit that
/// creeps up under mild overload (concurrency-limits' Gradient2), a gradient above 1 (ibid.), dropped requests read as
/// fast ones (ibid.), a baseline that ratchets up under load (Envoy's adaptive concurrency), and probing by collapsing
/// concurrency (ibid.).
/// </summary>
public sealed class AdaptiveControllerDefectTests
{
    private static readonly TimeSpan Ten = TimeSpan.FromMilliseconds(10);

    [Fact]
    public void MildOverload_FlatThroughputRunTimeSlightlyUp_CountDoesNotCreep()
    {
        // Past 10 calls the dependency only queues them: each worker more adds 10% run time and nothing else.
        var harness = new ControllerHarness(count: 2);
        var world = Signals.Knee(knee: 10, Ten, arrivals: 3_000);
        harness.RunUntil(world, d => d.Rule == AdaptiveRule.AtCeiling, TimeSpan.FromMinutes(1));
        var settled = harness.Decisions.Count;

        harness.Run(world, TimeSpan.FromMinutes(30));

        var later = harness.Decisions.Skip(settled).ToList();
        Assert.True(later.Max(d => d.NewCount) <= 11, harness.Describe());
        Assert.InRange(later.Average(d => d.NewCount), 9.5, 10.5);
        Assert.InRange(harness.Count, 9, 10);
    }

    [Fact]
    public void MildOverload_RunTimeFifteenPercentUpAtEveryCount_CountReturnsAfterEachProbe()
    {
        // Someone else loads the dependency a little: the run time is 15% above the baseline whatever this executor
        // does, the throughput is flat, and the queue stands. Gradient2 adds its queue allowance every update here.
        var harness = new ControllerHarness(count: 10);
        harness.Run(Signals.Knee(knee: 10, Ten, arrivals: 1_000), TimeSpan.FromSeconds(5));

        harness.Run(Signals.Knee(knee: 10, Ten * 1.15, arrivals: 3_000), TimeSpan.FromMinutes(30));

        var lastHalf = harness.Decisions.Skip(harness.Decisions.Count / 2).ToList();
        Assert.True(lastHalf.Average(d => d.NewCount) < 10.5, harness.Describe());
        Assert.Equal(10, harness.Count);
    }

    [Fact]
    public void Gradient_RunTimeFiftyTimesBaseline_NeverRemovesMoreThanHalfPerStep()
    {
        var harness = new ControllerHarness(count: 64, min: 1, max: 64);
        harness.Run(AdaptiveControllerTests.Steady(Ten), TimeSpan.FromSeconds(5));

        harness.Run(AdaptiveControllerTests.Steady(Ten * 50), TimeSpan.FromMinutes(1));

        var backoffs = harness.Changes.Where(d => d.Rule == AdaptiveRule.Saturated).ToList();
        Assert.NotEmpty(backoffs);
        Assert.All(backoffs, d => Assert.True(d.NewCount >= d.OldCount / 2 && d.NewCount < d.OldCount, d.ToString()));
    }

    [Fact]
    public void Gradient_RunTimeFallsFarBelowBaseline_DoesNotGrowWithoutAStandingQueue()
    {
        // A gradient above 1 (baseline / run time) once let Gradient2 raise its limit with no demand at all.
        var harness = new ControllerHarness(count: 10);
        harness.Run(AdaptiveControllerTests.Steady(Ten), TimeSpan.FromSeconds(5));

        harness.Run(AdaptiveControllerTests.Steady(Ten / 10), TimeSpan.FromMinutes(5));

        Assert.DoesNotContain(harness.Decisions, d => d.NewCount > d.OldCount);
    }

    [Fact]
    public void FailedItems_FailingFast_AreNotReadAsFastOnes()
    {
        var harness = new ControllerHarness(count: 10, min: 5);
        harness.Run(AdaptiveControllerTests.Steady(Ten), TimeSpan.FromSeconds(5));
        var baseline = harness.Controller.Baseline!.Value;

        // Most items now fail in a tenth of a millisecond: busy time over all finished items would read 1.8 ms, a
        // dependency ten times faster. The sampler charges the busy time to completed items only (count / 500 per
        // second), so failures can only look slow. The queue stands: failed items are not done items.
        var failing = (Func<int, Signals>)(count => new Signals(
            500, TimeSpan.FromSeconds(count / 500.0), TimeSpan.FromMilliseconds(200), 500, 6_000, FailedPerSecond: 5_000));
        harness.Run(failing, TimeSpan.FromMinutes(2));

        Assert.Equal(baseline, harness.Controller.Baseline);
        Assert.Contains(harness.Decisions, d => d.Rule == AdaptiveRule.Failures && d.IsChange);

        // Growth may be tried (the queue stands), but adding workers does not add completed items, so every step up
        // is taken back at once.
        var changes = harness.Changes.ToList();
        for (var i = 0; i < changes.Count; i++)
        {
            if (changes[i].NewCount > changes[i].OldCount)
            {
                Assert.True(i + 1 < changes.Count && changes[i + 1].Rule == AdaptiveRule.GrowthDidNotPay && changes[i + 1].NewCount == changes[i].OldCount, harness.Describe());
            }
        }
    }

    [Fact]
    public void Baseline_RunningFarPastTheKneeForMinutes_DoesNotRatchetUp()
    {
        var harness = new ControllerHarness(count: 2);
        var world = Signals.Knee(knee: 10, Ten, arrivals: 3_000);
        harness.RunUntil(world, d => d.Rule == AdaptiveRule.AtCeiling, TimeSpan.FromMinutes(1));

        // An operator pins 40 workers for five minutes: the run time is 40 ms all that time.
        harness.Controller.Pin(40);
        harness.Run(world, TimeSpan.FromMinutes(5));
        Assert.Equal(40, harness.Count);
        Assert.InRange(harness.Controller.Baseline!.Value.TotalMilliseconds, 9.9, 10.1);

        harness.Controller.Unpin();
        harness.Run(world, TimeSpan.FromSeconds(30));

        Assert.InRange(harness.Count, 9, 12);
        Assert.Contains(harness.Decisions, d => d.Rule == AdaptiveRule.Saturated && d.IsChange);
    }

    [Fact]
    public void Baseline_DependencySlowsDownBelowItsKnee_CountFollowsTheDemand()
    {
        // 1,000 items/s; the service time drifts from 10 ms to 20 ms over ten minutes: 10, then 20 workers' worth.
        var harness = new ControllerHarness(count: 10);
        var minutes = 10.0;
        Func<int, Signals> World() => count =>
        {
            var service = Ten * (1 + Math.Min(1, harness.Elapsed.TotalMinutes / minutes));
            return Signals.Knee(knee: 64, service, arrivals: 1_000)(count);
        };

        harness.Run(World(), TimeSpan.FromMinutes(minutes + 1));

        Assert.InRange(harness.Count, 20, 26);
        Assert.DoesNotContain(harness.Decisions, d => d.Rule == AdaptiveRule.Saturated && d.NewCount < 18 && d.OldCount >= 20);
    }

    [Fact]
    public void Probing_StartedFarAboveTheKnee_StepsDownInSmallStepsNeverCollapsing()
    {
        // Envoy measures its baseline by pinning concurrency low (503 bursts). Started at 64 in front of a
        // 12-connection dependency, the baseline is inflated from the first interval, so only probing can tell; here
        // each probe is one step of 10%, kept only if throughput does not fall.
        var harness = new ControllerHarness(count: 64);
        var world = Signals.Knee(knee: 12, Ten, arrivals: 3_000);

        harness.Run(world, TimeSpan.FromMinutes(5));

        Assert.InRange(harness.Count, 12, 15);
        var downs = harness.Changes.Where(d => d.NewCount < d.OldCount).ToList();
        Assert.All(downs, d => Assert.True(d.OldCount - d.NewCount <= Math.Max(1, (int)Math.Round(d.OldCount * 0.1)), d.ToString()));
    }
}
