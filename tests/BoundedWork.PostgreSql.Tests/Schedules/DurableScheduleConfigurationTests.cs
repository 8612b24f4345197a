using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using BoundedWork.Hosting;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>
/// Durable schedules from configuration (a definition like one in code: a runtime change holds until the configuration
/// changes), hostile configuration refused naming the setting, and the schedules' metrics.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class DurableScheduleConfigurationTests(PostgresFixture postgres)
{
    private static readonly DateTimeOffset Frozen = new(2026, 6, 1, 12, 0, 30, TimeSpan.Zero);

    private static IConfigurationSection Section(params (string Key, string? Value)[] settings) =>
        new ConfigurationBuilder()
            .AddInMemoryCollection(settings.Select(s => new KeyValuePair<string, string?>("DurableSchedules:" + s.Key, s.Value)))
            .Build()
            .GetSection("DurableSchedules");

    [Fact]
    public async Task ConfigurationDefinition_RuntimeChangeHolds_UntilTheConfigurationChanges()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        var clock = new SteppedClock();
        clock.Freeze(Frozen);
        var configured = Section(("nightly:Queue", "ticks"), ("nightly:Cron", "0 2 * * *"), ("nightly:TimeZone", "Europe/Berlin"), ("nightly:MissedTicks", "Skip"));
        await using (var first = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedules(configured), clock))
        {
            var stored = (await first.Schedules.GetAsync("nightly"))!;
            Assert.True(stored.IsDefinedInCode);
            Assert.Equal("cron '0 2 * * *' in Europe/Berlin", stored.Definition);
            Assert.Equal(MissedTickPolicy.Skip, stored.MissedTicks);
            await first.Schedules.ChangeAsync("nightly", RecurringSchedule.Cron("0 3 * * *", "Europe/Berlin"), "ops");
            await first.Schedules.SetPausedAsync("nightly", true, "ops");
        }

        // A restart with the same configuration: the runtime change holds.
        await using (var same = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedules(configured), clock))
        {
            var kept = (await same.Schedules.GetAsync("nightly"))!;
            Assert.Equal("cron '0 3 * * *' in Europe/Berlin", kept.Definition);
            Assert.True(kept.IsPaused);
            Assert.Equal("ops", kept.ChangedBy);
        }

        // A restart with a changed configuration: the configuration wins, and the pause stays.
        var changed = Section(("nightly:Queue", "ticks"), ("nightly:Cron", "0 4 * * *"), ("nightly:TimeZone", "Europe/Berlin"), ("nightly:MissedTicks", "Skip"));
        await using var later = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedules(changed), clock);
        var status = (await later.Schedules.GetAsync("nightly"))!;
        Assert.Equal("cron '0 4 * * *' in Europe/Berlin", status.Definition);
        Assert.True(status.IsPaused);
        Assert.Null(status.ChangedBy);
    }

    [Theory]
    [InlineData("DurableSchedules:nightly:Cron", "nightly:Cron", "0 0 30 2 *")] // never fires
    [InlineData("DurableSchedules:nightly:Cron", "nightly:Cron", "every night")]
    [InlineData("DurableSchedules:nightly:TimeZone", "nightly:TimeZone", "Mars/Olympus_Mons")]
    [InlineData("DurableSchedules:nightly:Interval", "nightly:Interval", "00:00:00.1")]
    [InlineData("DurableSchedules:nightly:MissedTicks", "nightly:MissedTicks", "Sometimes")]
    [InlineData("DurableSchedules:nightly:MissedTicks", "nightly:MissedTicks", "7")]
    [InlineData("DurableSchedules:nightly:MaxCatchUp", "nightly:MaxCatchUp", "0")]
    [InlineData("DurableSchedules:nightly:MisfireThreshold", "nightly:MisfireThreshold", "soon")]
    [InlineData("DurableSchedules:nightly:StartPaused", "nightly:StartPaused", "maybe")]
    [InlineData("DurableSchedules:nightly:Workers", "nightly:Workers", "3")]
    [InlineData("DurableSchedules:nightly:Queue", "nightly:Queue", "")]
    [InlineData("DurableSchedules:bad\r\nname", "bad\r\nname:Queue", "ticks")]
    public void HostileConfiguration_IsRefusedNamingTheSetting_AndRegistersNothing(string path, string key, string value)
    {
        var settings = new List<(string, string?)> { ("ok:Queue", "ticks"), ("ok:Interval", "00:05:00") };
        if (!key.StartsWith("nightly:Queue", StringComparison.Ordinal))
        {
            settings.Add(("nightly:Queue", "ticks"));
        }

        if (!key.StartsWith("nightly:Cron", StringComparison.Ordinal) && !key.StartsWith("nightly:Interval", StringComparison.Ordinal) && key.StartsWith("nightly", StringComparison.Ordinal))
        {
            settings.Add(("nightly:Cron", "0 2 * * *"));
        }

        settings.Add((key, value));
        var services = new ServiceCollection();

        var error = Assert.ThrowsAny<ArgumentException>(() => services.AddDurableSchedules(Section([.. settings])));

        Assert.Equal(path, error.ParamName);
        Assert.Contains(path, error.Message, StringComparison.Ordinal);
        Assert.Empty(services);
    }

    [Fact]
    public void ConfigurationName_AlreadyDefinedInCode_IsRefused_AndRegistersNothingMore()
    {
        var services = new ServiceCollection().AddDurableSchedule("nightly", "ticks", RecurringSchedule.Cron("0 2 * * *"));
        var count = services.Count;

        var error = Assert.Throws<ArgumentException>(() => services.AddDurableSchedules(Section(("other:Queue", "ticks"), ("other:Interval", "00:01:00"), ("nightly:Queue", "ticks"), ("nightly:Cron", "0 3 * * *"))));

        Assert.Equal("DurableSchedules:nightly", error.ParamName);
        Assert.Equal(count, services.Count);
    }

    [Fact]
    public async Task Metrics_CountEnqueuedAndMissedTicks_AndTheirLag()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        var clock = new SteppedClock();
        clock.Freeze(Frozen);
        var name = "metered-" + Guid.NewGuid().ToString("N")[..8];
        var ticks = new ConcurrentDictionary<string, long>();
        var lags = new ConcurrentBag<double>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == PostgreSqlWorkQueueDiagnostics.MeterName && instrument.Name.StartsWith("boundedwork.schedule.", StringComparison.Ordinal))
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            if (Tag(tags, "boundedwork.schedule") == name)
            {
                ticks.AddOrUpdate(Tag(tags, "boundedwork.outcome")!, value, (_, v) => v + value);
            }
        });
        listener.SetMeasurementEventCallback<double>((_, value, tags, _) =>
        {
            if (Tag(tags, "boundedwork.schedule") == name)
            {
                lags.Add(value);
            }
        });
        listener.Start();

        await using var node = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s
            .AddDurableSchedule(name, "ticks", RecurringSchedule.Every(TimeSpan.FromMinutes(1)), o => o.MisfireThreshold = TimeSpan.FromSeconds(10)), clock);
        await postgres.ExecuteAsync($"UPDATE {schema}.schedules SET next_tick = '2026-06-01T11:50:00Z'");
        await WaitAsync(() => Task.FromResult(ticks.GetValueOrDefault("missed") == 10), "the outage's ticks were counted");
        await node.Schedules.TriggerNowAsync(name, "ops");

        Assert.Equal(1, ticks.GetValueOrDefault("enqueued"));
        Assert.Equal(10, ticks.GetValueOrDefault("missed"));
        Assert.Equal(1, ticks.GetValueOrDefault("triggered"));
        Assert.Equal([30.0], lags); // the 12:00:00 tick, enqueued at 12:00:30 by the frozen clock
    }

    private static string? Tag(ReadOnlySpan<KeyValuePair<string, object?>> tags, string key)
    {
        foreach (var tag in tags)
        {
            if (tag.Key == key)
            {
                return tag.Value as string;
            }
        }

        return null;
    }

    private static async Task WaitAsync(Func<Task<bool>> condition, string what)
    {
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "Timed out waiting until " + what);
            await Task.Delay(50);
        }
    }
}
