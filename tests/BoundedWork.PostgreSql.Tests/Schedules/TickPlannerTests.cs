using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>Which due ticks a pass enqueues: the missed-tick policies, without a server.</summary>
public sealed class TickPlannerTests
{
    private static readonly DateTimeOffset Now = new(2026, 6, 1, 12, 0, 30, TimeSpan.Zero);
    private static readonly RecurringSchedule Minute = RecurringSchedule.Every(TimeSpan.FromMinutes(1));

    [Theory]
    [InlineData(MissedTickPolicy.LatestOnce, 3)] // on-time ticks, so the missed ones are not run
    [InlineData(MissedTickPolicy.Skip, 3)]
    [InlineData(MissedTickPolicy.Each, 5)] // the latest two missed, then the three on time
    public void OnTimeTicks_AreAllEnqueued_MissedOnesFollowThePolicy(MissedTickPolicy policy, int expected)
    {
        var plan = TickPlanner.PlanTicks(Minute, Now.AddMinutes(-10).AddSeconds(-30), Now, policy, maxCatchUp: 2, TimeSpan.FromMinutes(2.5));

        Assert.Equal(expected, plan.Enqueue.Count);
        Assert.Equal(11 - expected, plan.Missed); // 11 due ticks: 11:50 to 12:00
        Assert.Equal(Now.AddSeconds(30), plan.NextTick);
        Assert.Equal(plan.Enqueue.Order(), plan.Enqueue);
        Assert.Equal(Now.AddSeconds(-30), plan.Enqueue[^1]);
    }

    [Fact]
    public void NothingDue_EnqueuesNothing()
    {
        var plan = TickPlanner.PlanTicks(Minute, Now.AddSeconds(30), Now, MissedTickPolicy.Each, 10, TimeSpan.FromMinutes(1));

        Assert.Empty(plan.Enqueue);
        Assert.Equal(0, plan.Missed);
        Assert.Equal(Now.AddSeconds(30), plan.NextTick);
    }

    [Fact]
    public void AYearLongOutageOfAOneSecondSchedule_IsWalkedWithABound_AndGoesOnFromNow()
    {
        var second = RecurringSchedule.Every(TimeSpan.FromSeconds(1));

        var plan = TickPlanner.PlanTicks(second, Now.AddDays(-365), Now, MissedTickPolicy.LatestOnce, 10, TimeSpan.FromMinutes(1));

        Assert.Equal(61, plan.Enqueue.Count); // the minute on time
        Assert.True(plan.Missed > TickPlanner.MaxWalk, plan.Missed.ToString(System.Globalization.CultureInfo.InvariantCulture));
        Assert.Equal(Now.AddSeconds(1), plan.NextTick);
    }
}
