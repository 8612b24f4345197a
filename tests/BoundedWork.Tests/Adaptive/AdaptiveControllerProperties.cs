using BoundedWork.Internal.Adaptive;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Tests.Adaptive;

/// <summary>
/// Whatever the signals, and whatever an operator does meanwhile: every decision stays within the bounds, the
/// controller's own changes respect the cooldown and the budget per minute, a step up never multiplies the count by
/// more than the growth factor, and a step down by a rule of the controller never removes more than half.
/// </summary>
public sealed class AdaptiveControllerProperties
{
    /// <summary>What happens at one step: a sample to decide on, or an operator action.</summary>
    public enum Act
    {
        Sample,
        Pin,
        PinFor,
        Unpin,
        Advise,
    }

    /// <summary>One step of a script.</summary>
    public sealed record ScriptStep(Act Act, int Completed, int Failed, int Slow, int RunTimeMs, int MinWaitMs, int Queue, int Arrivals, int BusyShare, int IntervalMs, int PinCount)
    {
        public override string ToString() =>
            $"{Act}(done={Completed} failed={Failed} slow={Slow} run={RunTimeMs}ms wait={MinWaitMs}ms queue={Queue} arrived={Arrivals} busy={BusyShare}% interval={IntervalMs}ms pin={PinCount})";
    }

    /// <summary>The controller's bounds, cooldown and budget, and 300 steps.</summary>
    public sealed record Script(int Min, int Max, int Initial, int Cooldown, int Budget, ScriptStep[] Events)
    {
        public override string ToString() =>
            $"min={Min} max={Max} initial={Initial} cooldown={Cooldown}ms budget={Budget}/min events=[{string.Join(", ", Events.AsEnumerable())}]";
    }

    /// <summary>
    /// Run 200 times: a case is 300 pure decisions on a fake clock (no threads), well under a millisecond each, so 200
    /// scripts (60,000 decisions) cost little and reach the rare paths: pins that expire, budgets exhausted, advisory
    /// mode toggled mid-run. On failure FsCheck.Xunit prints the script and its replay seed.
    /// </summary>
    [Property(MaxTest = 200, Arbitrary = [typeof(Arbitraries)])]
    public void Decide_AnySignalsAndOperatorActions_BoundsCooldownBudgetAndStepSizesHold(Script script) => Run(script);

    /// <summary>The generators of this property.</summary>
    public static class Arbitraries
    {
        // One step: mostly samples with signals from quiet to overloaded, now and then an operator action.
        private static readonly Gen<ScriptStep> Events =
            (from act in Gen.Frequency((20, Gen.Constant(Act.Sample)), (1, Gen.Constant(Act.Pin)), (1, Gen.Constant(Act.PinFor)), (1, Gen.Constant(Act.Unpin)), (1, Gen.Constant(Act.Advise)))
             from completed in Gen.Frequency((3, Gen.Choose(0, 5_000)), (1, Gen.Choose(0, 30)))
             from failed in Gen.Frequency((3, Gen.Constant(0)), (1, Gen.Choose(0, 3_000)))
             from slow in Gen.Frequency((5, Gen.Constant(0)), (1, Gen.Choose(0, 50)))
             from runTime in Gen.Choose(1, 2_000)
             from wait in Gen.Frequency((1, Gen.Constant(0)), (1, Gen.Choose(0, 5_000)))
             from queue in Gen.Choose(0, 2_000)
             from arrivals in Gen.Choose(0, 10_000)
             from busy in Gen.Choose(0, 100)
             from interval in Gen.Frequency((4, Gen.Choose(250, 1_000)), (1, Gen.Choose(1, 10_000)))
             from pin in Gen.Choose(1, 100)
             select new ScriptStep(act, completed, failed, slow, runTime, wait, queue, arrivals, busy, interval, pin));

        /// <summary>Bounds, cooldown and budget, and 300 steps.</summary>
        public static Arbitrary<Script> Scripts() =>
            (from min in Gen.Choose(1, 10)
             from span in Gen.Choose(0, 60)
             from initial in Gen.Choose(1, 80)
             from cooldown in Gen.Choose(0, 3_000)
             from budget in Gen.Choose(1, 20)
             from events in Gen.ArrayOf(Events, 300).Resize(300)
             select new Script(min, min + span, initial, cooldown, budget, events)).ToArbitrary();
    }

    private static void Run(Script script)
    {
        var parameters = AdaptiveParameters.Default with { Cooldown = TimeSpan.FromMilliseconds(script.Cooldown), MaxChangesPerMinute = script.Budget };
        var clock = new FakeTimeProvider();
        var controller = new AdaptiveController(parameters, clock);
        var count = script.Initial;
        var own = new List<DateTimeOffset>();
        foreach (var e in script.Events)
        {
            switch (e.Act)
            {
                case Act.Pin:
                    controller.Pin(e.PinCount);
                    continue;
                case Act.PinFor:
                    controller.Pin(e.PinCount, TimeSpan.FromMilliseconds(e.IntervalMs * 3));
                    continue;
                case Act.Unpin:
                    controller.Unpin();
                    continue;
                case Act.Advise:
                    controller.Advisory = !controller.Advisory;
                    continue;
            }

            var interval = TimeSpan.FromMilliseconds(e.IntervalMs);
            clock.Advance(interval);
            var busy = count * e.BusyShare / 100;
            var decision = controller.Decide(new AdaptiveSample
            {
                Interval = interval,
                WorkerCount = count,
                MinWorkerCount = script.Min,
                MaxWorkerCount = script.Max,
                Completed = e.Completed,
                Failed = e.Failed,
                SlowItems = e.Slow,
                Arrivals = e.Arrivals,
                MinQueueWait = TimeSpan.FromMilliseconds(e.MinWaitMs),
                QueueLength = e.Queue,
                MeanBusyWorkers = busy,
                MaxBusyWorkers = busy,
                RunTime = e.Completed > 0 ? TimeSpan.FromMilliseconds(e.RunTimeMs) : null,
            });

            Assert.InRange(decision.NewCount, script.Min, script.Max);
            Assert.Equal(count, decision.OldCount);
            if (!decision.IsChange)
            {
                continue;
            }

            if (decision.Rule is not (AdaptiveRule.Pinned or AdaptiveRule.Unpinned or AdaptiveRule.Bounds))
            {
                Assert.True(own.Count == 0 || decision.Time - own[^1] >= parameters.Cooldown, $"{decision} within the cooldown of the previous change");
                own.Add(decision.Time);
                var inLastMinute = own.Count(t => t > decision.Time - TimeSpan.FromMinutes(1));
                Assert.True(inLastMinute <= script.Budget, $"{inLastMinute} changes in a minute, budget {script.Budget}");
                if (decision.NewCount > decision.OldCount)
                {
                    Assert.True(decision.NewCount <= Math.Max(decision.OldCount + 1, (int)(decision.OldCount * parameters.MaxGrowthFactor)), decision.ToString());
                }
                else if (decision.Rule is AdaptiveRule.Saturated or AdaptiveRule.Failures or AdaptiveRule.ProbeDown or AdaptiveRule.RetireIdle)
                {
                    Assert.True(decision.NewCount >= Math.Min(decision.OldCount - 1, decision.OldCount / 2), decision.ToString());
                }
            }

            if (decision.Applied)
            {
                count = decision.NewCount;
            }
        }
    }
}
