using BoundedWork.Internal.Adaptive;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Adaptive;

/// <summary>
/// CPU-bound items on a 2-vCPU machine while a neighbour's CPU burst raises their run time: more workers do not make
/// the burst worse, so the controller must never shrink below the workers the arrivals need, and a standing queue that
/// keeps growing is probed again. The world is synthetic and the clock fake: deterministic.
/// </summary>
public sealed class AdaptiveCpuBurstTests
{
    [Fact]
    public void CpuBurst_RunTimeRisesWhileTwoWorkersKeepUp_NeverShrinksBelowTheArrivalsDemand()
    {
        // 1,200 items/s of 0.8 ms; from 5 s the neighbour's burst makes them 1.4 ms at 2 workers (1.0 ms alone): 2
        // workers still keep up (1.7 busy on average), 1 would complete 1,000/s and fall behind by 200/s.
        var world = new CpuWorld(arrivals: 1_200, burstFrom: 5, burstUntil: 65);
        var run = world.Run(startAt: 2, TimeSpan.FromSeconds(70));

        foreach (var (_, sample, decision) in run)
        {
            var demand = (int)Math.Ceiling(sample.Arrivals / sample.Interval.TotalSeconds * sample.RunTime!.Value.TotalSeconds);
            Assert.True(decision.NewCount >= demand, $"{decision} left fewer workers than the arrivals need ({demand}).");
        }

        Assert.DoesNotContain(run, r => r.Decision.Rule == AdaptiveRule.Saturated && r.Decision.IsChange);
        Assert.True(world.MaxQueue < 50, $"The queue reached {world.MaxQueue:F0} items.");
    }

    [Fact]
    public void CpuBurst_ShrunkWithAStandingGrowingQueue_GrowsBackWithinTheProbeTime()
    {
        // 1,390 items/s: 2 workers are busy throughout in the burst (1.95 on average), so the arrivals could be paced
        // by the workers and a back-off is allowed; at 1 worker the queue then grows by 390/s and must be probed again.
        var world = new CpuWorld(arrivals: 1_390, burstFrom: 5, burstUntil: 95);
        var run = world.Run(startAt: 2, TimeSpan.FromSeconds(100));

        var shrink = run.FindIndex(r => r.Decision.IsChange && r.Decision.NewCount == 1);
        Assert.True(shrink >= 0, "The back-off this test needs did not happen: " + string.Join(Environment.NewLine, run.Select(r => r.Decision)));
        var regrown = run.FindIndex(shrink, r => r.Decision.IsChange && r.Decision.NewCount >= 2);
        Assert.True(regrown >= 0, "It never grew back: " + string.Join(Environment.NewLine, run.Skip(shrink).Select(r => r.Decision).Where(d => d.IsChange)));
        var after = run[regrown].Decision.Time - run[shrink].Decision.Time;
        var bound = TimeSpan.FromSeconds(10); // the starving-queue probe time (5 s), plus measuring and cooldowns
        Assert.True(after <= bound, $"It grew back {after.TotalSeconds:F1} s after the back-off (at most {bound.TotalSeconds} s): {run[regrown].Decision}");

        // And it stays where the arrivals are served: the count never falls back below 2 in the burst, and the queue
        // stops growing (at 1,390/s against 1,428/s it drains slowly).
        var rest = run.Skip(regrown).TakeWhile(r => r.Time < 95).ToList();
        Assert.All(rest, r => Assert.True(r.Decision.NewCount >= 2, r.Decision.ToString()));
        var regrownAt = run[regrown].Time;
        Assert.True(world.QueueAt(94) <= world.QueueAt(regrownAt + 3), $"The queue grew from {world.QueueAt(regrownAt + 3):F0} to {world.QueueAt(94):F0} items after the count grew back.");
    }

    /// <summary>One random interval of an arbitrary world: arrivals, run time, busy workers and queue.</summary>
    public sealed record Interval(int Arrivals, int RunTimeTenthsOfMs, int BusyPercent, int QueueLength, bool Standing);

    /// <summary>The generators of the property.</summary>
    public static class Arbitraries
    {
        /// <summary>Sequences of random intervals, with random run-time bursts.</summary>
        public static Arbitrary<Interval[]> Intervals() =>
            Gen.ArrayOf(
                from arrivals in Gen.Choose(0, 3_000)
                from runTime in Gen.Choose(5, 40)
                from busy in Gen.Choose(0, 100)
                from queue in Gen.Choose(0, 2_000)
                from standing in Gen.Elements(true, false)
                select new Interval(arrivals, runTime, busy, queue, standing),
                400).ToArbitrary();
    }

    [Property(MaxTest = 200, Arbitrary = [typeof(Arbitraries)])]
    public void AnySamples_ABackoffWhileTheWorkersHadSlack_NeverGoesBelowTheArrivalsDemand(Interval[] intervals)
    {
        var clock = new FakeTimeProvider();
        var parameters = AdaptiveParameters.Default;
        var controller = new AdaptiveController(parameters, clock);
        var count = 8;
        foreach (var interval in intervals)
        {
            clock.Advance(parameters.Interval);
            var seconds = parameters.Interval.TotalSeconds;
            var runTime = TimeSpan.FromMilliseconds(interval.RunTimeTenthsOfMs / 10.0);
            var meanBusy = count * interval.BusyPercent / 100.0;
            var completed = (long)Math.Round(meanBusy / runTime.TotalSeconds * seconds);
            var sample = new AdaptiveSample
            {
                Interval = parameters.Interval,
                WorkerCount = count,
                MinWorkerCount = 1,
                MaxWorkerCount = 16,
                Completed = completed,
                Arrivals = (long)Math.Round(interval.Arrivals * seconds),
                MinQueueWait = interval.Standing ? TimeSpan.FromMilliseconds(50) : TimeSpan.Zero,
                QueueLength = interval.Standing ? interval.QueueLength : 0,
                MeanBusyWorkers = meanBusy,
                MaxBusyWorkers = (int)Math.Ceiling(meanBusy),
                RunTime = completed > 0 ? runTime : null,
            };
            var decision = controller.Decide(sample);
            if (decision.Rule == AdaptiveRule.Saturated && decision.IsChange)
            {
                // The arrivals' demand at the run time the controller read (the interval's, or the smoothed one if higher).
                var read = Math.Max(decision.Signals.RunTime?.TotalSeconds ?? 0, decision.Signals.SmoothedRunTime?.TotalSeconds ?? 0);
                var demand = decision.Signals.ArrivalsPerSecond * read;
                if (demand < count * 0.95)
                {
                    Assert.True(decision.NewCount >= Math.Ceiling(demand), $"{decision} went below the arrivals' demand of {demand:F2} workers.");
                }
            }

            if (decision.IsChange)
            {
                count = decision.NewCount;
            }
        }
    }

    /// <summary>
    /// Two cores; items of 0.8 ms; during the neighbour's burst an item takes 1.0 ms alone and 1.4 ms when two run at
    /// once (beyond two workers they share the cores). Arrivals alternate 10% above and below their mean from one
    /// interval to the next (so the 0.8 ms baseline is learned at more than one busy worker). A fluid queue: what the
    /// workers cannot serve waits.
    /// </summary>
    private sealed class CpuWorld(double arrivals, double burstFrom, double burstUntil)
    {
        private readonly List<(double Time, double Queue)> _queue = [];

        public double MaxQueue => _queue.Count == 0 ? 0 : _queue.Max(q => q.Queue);

        public double QueueAt(double time) => _queue.LastOrDefault(q => q.Time <= time).Queue;

        public List<(double Time, AdaptiveSample Sample, AdaptiveDecision Decision)> Run(int startAt, TimeSpan duration)
        {
            var clock = new FakeTimeProvider();
            var parameters = AdaptiveParameters.Default;
            var controller = new AdaptiveController(parameters, clock);
            var seconds = parameters.Interval.TotalSeconds;
            var count = startAt;
            var queue = 0.0;
            var results = new List<(double, AdaptiveSample, AdaptiveDecision)>();
            for (var t = seconds; t <= duration.TotalSeconds; t += seconds)
            {
                clock.Advance(parameters.Interval);
                var burst = t > burstFrom && t <= burstUntil;
                var runTime = !burst ? 0.0008 * Math.Max(1, count / 2.0) : count == 1 ? 0.0010 : 0.0014 * Math.Max(1, count / 2.0);
                var capacity = count / runTime;
                var arrived = arrivals * seconds * (results.Count % 2 == 0 ? 1.1 : 0.9);
                var offered = arrived + queue;
                var completed = Math.Min(offered, capacity * seconds);
                var queueBefore = queue;
                queue = offered - completed;
                var meanBusy = completed * runTime / seconds;
                var wait = Math.Min(queueBefore, queue) / capacity;
                var sample = new AdaptiveSample
                {
                    Interval = parameters.Interval,
                    WorkerCount = count,
                    MinWorkerCount = 1,
                    MaxWorkerCount = 64,
                    Completed = (long)Math.Round(completed),
                    Arrivals = (long)Math.Round(arrived),
                    MinQueueWait = TimeSpan.FromSeconds(wait),
                    QueueLength = (int)Math.Round(queue),
                    MeanBusyWorkers = meanBusy,
                    MaxBusyWorkers = queue >= 1 ? count : Math.Min(count, (int)Math.Ceiling(meanBusy * 1.5)),
                    RunTime = TimeSpan.FromSeconds(runTime),
                };
                var decision = controller.Decide(sample);
                results.Add((t, sample, decision));
                _queue.Add((t, queue));
                if (decision.IsChange)
                {
                    count = decision.NewCount;
                }
            }

            return results;
        }
    }
}
