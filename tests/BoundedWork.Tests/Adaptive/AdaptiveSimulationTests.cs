using BoundedWork.AdaptiveSimulation;
using BoundedWork.Internal.Adaptive;

namespace BoundedWork.Tests.Adaptive;

/// <summary>
/// The controller driving a simulated executor in front of a K-connection dependency (the benchmark's scenarios, in
/// discrete time): it converges near the knee, drains the seed incident's backlog, and stays put in steady phases.
/// Deterministic: each run has a fixed seed.
/// </summary>
public sealed class AdaptiveSimulationTests
{
    [Fact]
    public void Saturating_KneeAt12_SettlesNearItWithTheOraclesGoodput()
    {
        var result = Simulator.Run(Scenarios.Saturating(AdaptiveParameters.Default));
        var oracle = new[] { 10, 11, 12, 13, 14, 16 }
            .Select(n => Simulator.Run(Scenarios.Saturating(null).Fixed(n)))
            .MaxBy(r => r.Goodput(10, 120))!;

        Assert.InRange(result.MeanWorkers(60, 120), 12 * 0.75, 12 * 1.25);
        Assert.True(result.Goodput(10, 120) >= 0.95 * oracle.Goodput(10, 120), $"goodput {result.Goodput(10, 120):F0}/s against the oracle's {oracle.Goodput(10, 120):F0}/s");
        Assert.True(result.RunTimePercentile(0.99, 10, 120) <= 1.2 * oracle.RunTimePercentile(0.99, 10, 120), "p99 run time above 1.2 times the oracle's");
    }

    [Fact]
    public void CpuBurst_TwoWorkersKeepUp_NeverShrinksBelowThemAndServesTheArrivals()
    {
        var result = Simulator.Run(Scenarios.CpuBurst(AdaptiveParameters.Default));
        var two = Simulator.Run(Scenarios.CpuBurst(null).Fixed(2));

        Assert.DoesNotContain(result.Changes, d => d.NewCount < 2);
        Assert.Equal(0, result.Rejected);
        Assert.True(result.Goodput(10, 120) >= 0.99 * two.Goodput(10, 120), $"goodput {result.Goodput(10, 120):F0}/s against 2 fixed workers' {two.Goodput(10, 120):F0}/s");
        Assert.True(result.Points.Max(p => p.QueueWaitMs) < 100, $"an item waited {result.Points.Max(p => p.QueueWaitMs):F0} ms");
    }

    [Fact]
    public void Saturating_StartedAtTheMaximum_ProbesDownNearTheKnee()
    {
        var result = Simulator.Run(Scenarios.Saturating(AdaptiveParameters.Default) with { InitialWorkers = 64, Duration = TimeSpan.FromMinutes(4) });

        Assert.InRange(result.MeanWorkers(180, 240), 12 * 0.75, 12 * 1.25);
        Assert.All(result.Changes, d => Assert.True(d.NewCount >= d.OldCount / 2 || d.Rule == AdaptiveRule.GrowthDidNotPay, d.ToString()));
    }

    [Fact]
    public void SeedIncident_TooFewWorkers_BacklogDrainsWithinTwiceAManualResize()
    {
        var adaptive = Simulator.Run(Scenarios.SeedIncident(AdaptiveParameters.Default));

        // The manual fix of the replay: 2 workers until an operator resizes to 16, here at 6 s.
        var manual = Simulator.Run(Scenarios.SeedIncident(null), (sim, seconds) =>
        {
            if (seconds >= 6 && seconds < 6.06)
            {
                sim.Resize(16);
            }
        });

        var manualDrain = manual.Points.First(p => p.Seconds > 6 && p.QueueLength <= 200).Seconds - 6;
        var drain = adaptive.Drain(200, 200);
        Assert.NotNull(drain);
        Assert.True(drain.Value.Drained - drain.Value.Formed <= 2 * manualDrain, $"adaptive drained in {drain.Value.Drained - drain.Value.Formed:F2} s, the manual resize in {manualDrain:F2} s");
        Assert.Equal(0, adaptive.Rejected);
        Assert.All(adaptive.Points.Where(p => p.Seconds > 10), p => Assert.True(p.QueueLength < 200, $"backlog of {p.QueueLength} at {p.Seconds} s"));
    }

    [Fact]
    public void BurstsOnADriftingDependency_AtMostOneChangePer30sInSteadyPhasesAndFollowsTheDrift()
    {
        var result = Simulator.Run(Scenarios.BurstsAndDrift(AdaptiveParameters.Default));

        for (var phase = 0; phase < 16; phase++)
        {
            var from = (phase * 30) + 10.0;
            Assert.True(result.MostChangesInAnyWindow(30, from, from + 20) <= 1, $"more than one change in the steady part of phase {phase}");
        }

        // Bursts when the dependency is twice as slow (around 120 s and 360 s) need more workers than the first.
        var burstAtSlowest = result.Points.Where(p => p.Seconds is > 125 and < 150).Average(p => p.BusyWorkers);
        var firstBurst = result.Points.Where(p => p.Seconds is > 5 and < 30).Average(p => p.BusyWorkers);
        Assert.True(burstAtSlowest > 1.5 * firstBurst, $"busy workers {burstAtSlowest:F1} at the slowest, {firstBurst:F1} in the first burst");
        Assert.True(result.Goodput(0, 480) >= 0.97 * 1_100, $"goodput {result.Goodput(0, 480):F0}/s against 1,100/s offered on average");
        Assert.True(result.Rejected <= 0.01 * result.Submitted, $"{result.Rejected} of {result.Submitted} rejected");
    }

    [Fact]
    public void Advisory_InTheSaturatingScenario_RecordsAdviceAndKeepsTheCount()
    {
        var result = Simulator.Run(Scenarios.Saturating(AdaptiveParameters.Default) with { Advisory = true, Duration = TimeSpan.FromSeconds(30) });

        Assert.All(result.Points, p => Assert.Equal(2, p.Workers));
        Assert.NotEmpty(result.Changes);
        Assert.All(result.Changes, d => Assert.False(d.Applied));
    }

    [Fact]
    public void Run_SameSeed_SameResult()
    {
        var first = Simulator.Run(Scenarios.Saturating(AdaptiveParameters.Default) with { Duration = TimeSpan.FromSeconds(20) });
        var second = Simulator.Run(Scenarios.Saturating(AdaptiveParameters.Default) with { Duration = TimeSpan.FromSeconds(20) });

        Assert.Equal(first.Points, second.Points);
        Assert.Equal(first.Changes.Select(d => (d.NewCount, d.Rule)), second.Changes.Select(d => (d.NewCount, d.Rule)));
    }
}
