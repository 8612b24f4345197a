using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Tests.Schedules;

/// <summary>Timing of recurring schedules: cron and intervals, daylight saving in real time zones, and hostile input.</summary>
public sealed class RecurringScheduleTests
{
    private static DateTimeOffset Utc(string text) => DateTimeOffset.Parse(text, System.Globalization.CultureInfo.InvariantCulture);

    [Fact]
    public void Cron_FiveFields_TicksOnTheMinute()
    {
        var schedule = RecurringSchedule.Cron("*/5 * * * *");

        Assert.Equal(Utc("2026-01-01T00:05:00Z"), schedule.GetNextOccurrence(Utc("2026-01-01T00:00:00Z")));
        Assert.Equal(Utc("2026-01-01T00:10:00Z"), schedule.GetNextOccurrence(Utc("2026-01-01T00:05:00Z")));
    }

    [Fact]
    public void Cron_SixFields_ReadsSecondsFirst()
    {
        var schedule = RecurringSchedule.Cron("*/10 * * * * *");

        Assert.Equal(Utc("2026-01-01T00:00:10Z"), schedule.GetNextOccurrence(Utc("2026-01-01T00:00:00Z")));
    }

    [Fact]
    public void Cron_EverySecond_IsAccepted()
    {
        var schedule = RecurringSchedule.Cron("* * * * * *");

        Assert.Equal(Utc("2026-01-01T00:00:01Z"), schedule.GetNextOccurrence(Utc("2026-01-01T00:00:00Z")));
    }

    [Fact]
    public void Every_TicksOnMultiplesOfTheIntervalFromTheEpoch_WhateverTheStart()
    {
        var schedule = RecurringSchedule.Every(TimeSpan.FromMinutes(5));

        Assert.Equal(Utc("2026-01-01T00:05:00Z"), schedule.GetNextOccurrence(Utc("2026-01-01T00:03:17Z")));
        Assert.Equal(Utc("2026-01-01T00:10:00Z"), schedule.GetNextOccurrence(Utc("2026-01-01T00:05:00Z")));
        Assert.Equal(Utc("1969-12-31T23:55:00Z"), schedule.GetNextOccurrence(Utc("1969-12-31T23:50:00Z")));
    }

    [Theory]
    [InlineData("0 0 30 2 *")]
    [InlineData("0 0 31 4 *")]
    public void Cron_NeverFires_IsRefusedNamingTheField(string expression)
    {
        var ex = Assert.Throws<ArgumentException>(() => RecurringSchedule.Cron(expression));

        Assert.Equal("cron", ex.ParamName);
        Assert.Contains(expression, ex.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("not a cron")]
    [InlineData("61 * * * *")]
    [InlineData("* * * *")]
    [InlineData("")]
    [InlineData("   ")]
    public void Cron_DoesNotParse_IsRefusedNamingTheField(string expression)
    {
        var ex = Assert.Throws<ArgumentException>(() => RecurringSchedule.Cron(expression));

        Assert.Equal("cron", ex.ParamName);
    }

    [Theory]
    [InlineData("Mars/Olympus_Mons")]
    [InlineData("")]
    public void Cron_UnknownTimeZone_IsRefusedNamingTheField(string zone)
    {
        var ex = Assert.Throws<ArgumentException>(() => RecurringSchedule.Cron("0 2 * * *", zone));

        Assert.Equal("timeZone", ex.ParamName);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(999)]
    [InlineData(-1000)]
    public void Every_OutOfRange_IsRefusedNamingTheField(int milliseconds)
    {
        var ex = Assert.Throws<ArgumentOutOfRangeException>(() => RecurringSchedule.Every(TimeSpan.FromMilliseconds(milliseconds)));

        Assert.Equal("interval", ex.ParamName);
    }

    [Fact]
    public void AddRecurring_HostileInput_RegistersNothing()
    {
        var services = new ServiceCollection();

        Assert.Throws<ArgumentException>(() => services.AddRecurring("a", "0 0 30 2 *", "ex", _ => { }));
        Assert.Throws<ArgumentException>(() => services.AddRecurring("a", "0 2 * * *", "ex", _ => { }, timeZone: "Nowhere/Nothing"));
        Assert.Throws<ArgumentOutOfRangeException>(() => services.AddRecurring("a", "0 2 * * *", "ex", _ => { }, configure: o => o.Jitter = TimeSpan.FromDays(1)));

        Assert.Empty(services);
    }

    // Europe/Berlin springs forward on 2026-03-29: 02:00 CET becomes 03:00 CEST, so 02:30 does not exist that night.
    [Fact]
    public void Cron_InTheSpringGap_FiresOnceAtTheEndOfTheGap_Berlin()
    {
        var schedule = RecurringSchedule.Cron("30 2 * * *", "Europe/Berlin");

        var first = schedule.GetNextOccurrence(Utc("2026-03-28T23:00:00Z"))!.Value;
        var second = schedule.GetNextOccurrence(first)!.Value;

        Assert.Equal(Utc("2026-03-29T01:00:00Z"), first); // 03:00 CEST: the end of the gap
        Assert.Equal(TimeSpan.FromHours(2), first.Offset);
        Assert.Equal(Utc("2026-03-30T00:30:00Z"), second); // 02:30 CEST the next night
    }

    // Europe/Berlin falls back on 2026-10-25: 03:00 CEST becomes 02:00 CET, so 02:30 happens twice that night.
    [Fact]
    public void Cron_InTheAutumnOverlap_FixedTimeFiresOnce_Berlin()
    {
        var schedule = RecurringSchedule.Cron("30 2 * * *", "Europe/Berlin");

        var first = schedule.GetNextOccurrence(Utc("2026-10-24T22:00:00Z"))!.Value;
        var second = schedule.GetNextOccurrence(first)!.Value;

        Assert.Equal(Utc("2026-10-25T00:30:00Z"), first); // 02:30 CEST, the first of the two
        Assert.Equal(Utc("2026-10-26T01:30:00Z"), second); // 02:30 CET the next night: not 02:30 CET the same night
    }

    [Fact]
    public void Cron_InTheAutumnOverlap_StepExpressionFiresInBothHours_Berlin()
    {
        var schedule = RecurringSchedule.Cron("0,30 * * * *", "Europe/Berlin");

        var ticks = new List<DateTimeOffset>();
        var at = Utc("2026-10-24T23:45:00Z"); // 01:45 CEST
        for (var i = 0; i < 5; i++)
        {
            at = schedule.GetNextOccurrence(at)!.Value;
            ticks.Add(at);
        }

        Assert.Equal(
            [Utc("2026-10-25T00:00:00Z"), Utc("2026-10-25T00:30:00Z"), Utc("2026-10-25T01:00:00Z"), Utc("2026-10-25T01:30:00Z"), Utc("2026-10-25T02:00:00Z")],
            ticks);
    }

    // America/New_York springs forward on 2026-03-08 (02:00 EST becomes 03:00 EDT) and falls back on 2026-11-01
    // (02:00 EDT becomes 01:00 EST).
    [Fact]
    public void Cron_GapAndOverlap_NewYork()
    {
        var gap = RecurringSchedule.Cron("15 2 * * *", "America/New_York");
        var overlap = RecurringSchedule.Cron("15 1 * * *", "America/New_York");

        Assert.Equal(Utc("2026-03-08T07:00:00Z"), gap.GetNextOccurrence(Utc("2026-03-08T05:00:00Z"))); // 03:00 EDT
        var once = overlap.GetNextOccurrence(Utc("2026-11-01T04:00:00Z"))!.Value;
        Assert.Equal(Utc("2026-11-01T05:15:00Z"), once); // 01:15 EDT
        Assert.Equal(Utc("2026-11-02T06:15:00Z"), overlap.GetNextOccurrence(once)); // 01:15 EST the next night
    }

    [Fact]
    public void Every_IgnoresDaylightSaving()
    {
        var schedule = RecurringSchedule.Every(TimeSpan.FromHours(1));

        Assert.Equal(Utc("2026-03-29T02:00:00Z"), schedule.GetNextOccurrence(Utc("2026-03-29T01:00:00Z")));
    }
}
