using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Hosting.Tests.Schedules;

/// <summary>
/// An in-memory schedule timed from configuration (<see cref="RecurringSchedule.FromConfiguration"/>): read, refused
/// naming the setting's path, and which wins after a runtime change (the runtime change until the process ends, then
/// the configuration).
/// </summary>
public sealed class RecurringConfigurationTests
{
    private static readonly DateTimeOffset Start = new(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);

    private static IConfigurationSection Section(params (string Key, string? Value)[] settings) =>
        new ConfigurationBuilder()
            .AddInMemoryCollection(settings.Select(s => new KeyValuePair<string, string?>("Schedules:report:" + s.Key, s.Value)))
            .Build()
            .GetSection("Schedules:report");

    [Fact]
    public void FromConfiguration_ReadsCronWithItsTimeZone_OrAnInterval()
    {
        Assert.Equal(RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"), RecurringSchedule.FromConfiguration(Section(("Cron", "0 2 * * *"), ("TimeZone", "Europe/Berlin"))));
        Assert.Equal(RecurringSchedule.Cron("*/5 * * * *"), RecurringSchedule.FromConfiguration(Section(("Cron", "*/5 * * * *"))));
        Assert.Equal(RecurringSchedule.Every(TimeSpan.FromMinutes(5)), RecurringSchedule.FromConfiguration(Section(("Interval", "00:05:00"))));
        Assert.Equal(RecurringSchedule.Cron("* * * * * *"), RecurringSchedule.FromConfiguration(Section(("Cron", "* * * * * *")))); // every second is fine
    }

    [Theory]
    [InlineData("Cron", "0 0 30 2 *", "Schedules:report:Cron")] // never fires
    [InlineData("Cron", "every night", "Schedules:report:Cron")]
    [InlineData("TimeZone", "Mars/Olympus_Mons", "Schedules:report:TimeZone")]
    [InlineData("Interval", "00:00:00.2", "Schedules:report:Interval")]
    [InlineData("Interval", "soon", "Schedules:report:Interval")]
    [InlineData("Other", "x", "Schedules:report:Cron")] // neither Cron nor Interval
    public void FromConfiguration_Hostile_IsRefusedNamingTheSettingsPath(string key, string value, string path)
    {
        var settings = key is "TimeZone" ? new[] { ("Cron", (string?)"0 2 * * *"), (key, value) } : [(key, value)];

        var error = Assert.ThrowsAny<ArgumentException>(() => RecurringSchedule.FromConfiguration(Section(settings)));

        Assert.Equal(path, error.ParamName);
        Assert.Contains(path, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void FromConfiguration_CronAndInterval_IsRefused()
    {
        var error = Assert.Throws<ArgumentException>(() => RecurringSchedule.FromConfiguration(Section(("Cron", "0 2 * * *"), ("Interval", "00:05:00"))));
        Assert.Equal("Schedules:report:Interval", error.ParamName);
    }

    [Fact]
    public void RuntimeChange_HoldsForTheProcess_TheConfigurationWinsAtTheNextStart()
    {
        var configured = Section(("Cron", "0 2 * * *"), ("TimeZone", "Europe/Berlin"));
        IHost Start(FakeTimeProvider clock)
        {
            var builder = TestHost.CreateBuilder(null);
            builder.Services.AddSingleton<TimeProvider>(clock);
            builder.Services.AddBoundedExecutor("jobs", o => o.WorkerCount = 1);
            builder.Services.AddRecurring<NoOp>("report", RecurringSchedule.FromConfiguration(configured), "jobs");
            var host = builder.Build();
            host.Start();
            return host;
        }

        using (var first = Start(new FakeTimeProvider(RecurringConfigurationTests.Start)))
        {
            var schedules = first.Services.GetRequiredService<IRecurringSchedules>();
            schedules.Change("report", RecurringSchedule.Cron("0 4 * * *", "Europe/Berlin"));
            Assert.Equal("0 4 * * *", schedules.GetStatus("report").Schedule.CronExpression);
        }

        using var second = Start(new FakeTimeProvider(RecurringConfigurationTests.Start));
        Assert.Equal(RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"), second.Services.GetRequiredService<IRecurringSchedules>().GetStatus("report").Schedule);
    }

    private sealed class NoOp : IRecurringHandler
    {
        public void Run(RecurringTickContext context)
        {
        }
    }
}
