using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>Durable schedules on a real server: one enqueue per tick across nodes and clock steps, missed-tick policies, operations.</summary>
[Collection(PostgresCollection.Name)]
public sealed class DurableScheduleTests(PostgresFixture postgres)
{
    private static readonly DateTimeOffset Frozen = new(2026, 6, 1, 12, 0, 30, TimeSpan.Zero);

    private static async Task WaitAsync(Func<Task<bool>> condition, string what)
    {
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "Timed out waiting until " + what);
            await Task.Delay(50);
        }
    }

    [Fact]
    public async Task ThreeNodes_OneSecondSchedule_WithSkewedAndSteppedClocks_EnqueueEachTickOnce_AndRunItOnce()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        var ahead = new SteppedClock { Offset = TimeSpan.FromSeconds(3) };
        var stepping = new SteppedClock { Offset = TimeSpan.FromSeconds(-3) };
        void Define(IServiceCollection s) => s.AddDurableSchedule("pulse", "ticks", RecurringSchedule.Cron("* * * * * *"));
        await using var a = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", Define);
        await using var b = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "b", Define, ahead);
        await using var c = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "c", Define, stepping);

        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness") >= 4, "four ticks ran");
        stepping.Offset = TimeSpan.FromSeconds(6); // a step forward on one node
        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness") >= 10, "ten ticks ran");
        stepping.Offset = TimeSpan.FromSeconds(-8); // and back
        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness") >= 14, "fourteen ticks ran");
        await c.DisposeAsync();
        await b.DisposeAsync();
        await a.DisposeAsync();

        // Each tick is one item, and the items' ticks are whole consecutive seconds: none doubled, none skipped.
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) - count(DISTINCT payload->>'ScheduledAt') FROM {schema}.items WHERE queue = 'ticks'"));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"""
            SELECT count(*) FROM (
                SELECT (payload->>'ScheduledAt')::timestamptz AS at,
                       lag((payload->>'ScheduledAt')::timestamptz) OVER (ORDER BY (payload->>'ScheduledAt')::timestamptz) AS previous
                FROM {schema}.items WHERE queue = 'ticks') t
            WHERE previous IS NOT NULL AND at - previous <> interval '1 second'
            """));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE queue = 'ticks' AND idempotency_key <> 'schedule:pulse:' || to_char((payload->>'ScheduledAt')::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"));

        // Each completed item ran once, by the witness; each witnessed run is one completed item.
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) - count(DISTINCT scheduled_at) FROM {schema}.witness"));
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"""
            SELECT count(*) FROM {schema}.items i FULL JOIN {schema}.witness w ON w.item_id = i.id
            WHERE i.queue = 'ticks' AND i.state = 2 AND w.item_id IS NULL OR i.id IS NULL
            """));
        var ran = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness");
        Assert.True(ran >= 14, $"{ran} ticks ran");
        Assert.Equal(await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE queue = 'ticks'"),
            await postgres.ScalarAsync<long>($"SELECT enqueued FROM {schema}.schedules WHERE name = 'pulse'"));
    }

    [Fact]
    public async Task MissedTicks_AfterAnOutage_FollowEachPolicy()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        var clock = new SteppedClock();
        clock.Freeze(Frozen); // 12:00:30: the ticks of every minute from 11:50 to 12:00 are due, and older than 10 s
        var minute = RecurringSchedule.Every(TimeSpan.FromMinutes(1));
        await using var node = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s
            .AddDurableSchedule("latest", "ticks", minute, o => o.MisfireThreshold = TimeSpan.FromSeconds(10))
            .AddDurableSchedule("skip", "ticks", minute, o => { o.MisfireThreshold = TimeSpan.FromSeconds(10); o.MissedTicks = MissedTickPolicy.Skip; })
            .AddDurableSchedule("each", "ticks", minute, o => { o.MisfireThreshold = TimeSpan.FromSeconds(10); o.MissedTicks = MissedTickPolicy.Each; o.MaxCatchUp = 3; }),
            clock);

        Assert.Equal(Frozen.AddSeconds(30), (await node.Schedules.GetAsync("latest"))!.NextRunAt);
        await postgres.ExecuteAsync($"UPDATE {schema}.schedules SET next_tick = '2026-06-01T11:50:00Z'");
        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.schedules WHERE next_tick = '2026-06-01T12:01:00Z'") == 3, "every schedule caught up");
        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness") == 4, "the enqueued ticks ran");

        var statuses = (await node.Schedules.ListAsync()).ToDictionary(s => s.Name);
        Assert.Equal((1L, 10L), (statuses["latest"].Enqueued, statuses["latest"].Missed));
        Assert.Equal((0L, 11L), (statuses["skip"].Enqueued, statuses["skip"].Missed));
        Assert.Equal((3L, 8L), (statuses["each"].Enqueued, statuses["each"].Missed));
        Assert.Equal("12:00:00", (await postgres.ScalarAsync<DateTime>($"SELECT scheduled_at FROM {schema}.witness WHERE schedule = 'latest'")).ToString("HH:mm:ss", System.Globalization.CultureInfo.InvariantCulture));
        Assert.Equal(3L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness WHERE schedule = 'each' AND scheduled_at >= '2026-06-01T11:58:00Z'"));
        // The witness row is the handler's own, written while it runs: its outcome is written after it returns.
        await WaitAsync(async () => (await node.Schedules.GetAsync("latest"))!.LastOutcome == "completed", "the latest tick's outcome written");
        Assert.Null(statuses["skip"].LastOutcome);
    }

    [Fact]
    public async Task Operations_AddChangePauseResumeTriggerRemove_AreStoredSharedAndAudited()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        var clock = new SteppedClock();
        clock.Freeze(Frozen);
        await using var a = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedules("ticks"), clock);
        await using var b = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "b", s => s.AddDurableSchedules("ticks"), clock);

        var added = await a.Schedules.AddAsync("report", "ticks", RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"), changedBy: "ops@a");
        Assert.Equal(new DateTimeOffset(2026, 6, 2, 0, 0, 0, TimeSpan.Zero), added.NextRunAt); // 02:00 CEST
        Assert.False(added.IsDefinedInCode);
        Assert.Equal("ops@a", added.ChangedBy);
        await Assert.ThrowsAsync<ArgumentException>(() => b.Schedules.AddAsync("report", "ticks", RecurringSchedule.Every(TimeSpan.FromMinutes(1))));
        Assert.Equal("queue", (await Assert.ThrowsAsync<ArgumentException>(() => b.Schedules.AddAsync("other", "nope", RecurringSchedule.Every(TimeSpan.FromMinutes(1))))).ParamName);
        Assert.Equal("name", (await Assert.ThrowsAsync<ArgumentException>(() => b.Schedules.AddAsync("bad\nname", "ticks", RecurringSchedule.Every(TimeSpan.FromMinutes(1))))).ParamName);
        Assert.Equal("MaxCatchUp", (await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => b.Schedules.AddAsync("other", "ticks", RecurringSchedule.Every(TimeSpan.FromMinutes(1)), o => o.MaxCatchUp = 0))).ParamName);
        Assert.Equal(["report"], (await b.Schedules.ListAsync()).Select(s => s.Name));

        var changed = await b.Schedules.ChangeAsync("report", RecurringSchedule.Every(TimeSpan.FromMinutes(15)), "ops@b");
        Assert.Equal(Frozen.AddMinutes(14).AddSeconds(30), changed.NextRunAt);
        Assert.Equal("every 00:15:00", changed.Definition);

        Assert.True((await a.Schedules.SetPausedAsync("report", true, "ops@a")).IsPaused);
        Assert.True((await b.Schedules.GetAsync("report"))!.IsPaused);
        var id = await b.Schedules.TriggerNowAsync("report", "ops@b"); // runs while paused
        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness WHERE triggered AND item_id = {id}") == 1, "the triggered run ran");
        var resumed = await a.Schedules.SetPausedAsync("report", false, "ops@a");
        Assert.False(resumed.IsPaused);
        Assert.Equal(id, resumed.LastItemId);
        Assert.Equal(1L, resumed.Enqueued);

        // The missed-tick policy, changed on one node, is stored for every node; its timing and pause stay.
        var policy = await b.Schedules.SetMissedTicksAsync("report", MissedTickPolicy.Each, "ops@b");
        Assert.Equal((MissedTickPolicy.Each, "every 00:15:00", false, "ops@b"), (policy.MissedTicks, policy.Definition, policy.IsPaused, policy.ChangedBy));
        Assert.Equal(MissedTickPolicy.Each, (await a.Schedules.GetAsync("report"))!.MissedTicks);
        Assert.Equal(2L, await postgres.ScalarAsync<long>($"SELECT missed_policy::bigint FROM {schema}.schedules WHERE name = 'report'"));
        Assert.Equal("missedTicks", (await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => a.Schedules.SetMissedTicksAsync("report", (MissedTickPolicy)42))).ParamName);
        await Assert.ThrowsAsync<KeyNotFoundException>(() => a.Schedules.SetMissedTicksAsync("nope", MissedTickPolicy.Skip));
        Assert.Equal(MissedTickPolicy.Each, (await a.Schedules.GetAsync("report"))!.MissedTicks);

        await Assert.ThrowsAsync<KeyNotFoundException>(() => a.Schedules.TriggerNowAsync("nope"));
        Assert.True(await b.Schedules.RemoveAsync("report", "ops@b"));
        Assert.False(await b.Schedules.RemoveAsync("report", "ops@b"));
        Assert.Empty(await a.Schedules.ListAsync());
    }

    [Fact]
    public async Task CodeDefinition_RuntimeChangeHolds_UntilTheCodeChanges()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        var clock = new SteppedClock();
        clock.Freeze(Frozen);
        var nightly = RecurringSchedule.Cron("0 2 * * *");
        await using (var first = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedule("nightly", "ticks", nightly), clock))
        {
            Assert.True((await first.Schedules.GetAsync("nightly"))!.IsDefinedInCode);
            await first.Schedules.ChangeAsync("nightly", RecurringSchedule.Cron("0 3 * * *"), "ops");
            await first.Schedules.SetPausedAsync("nightly", true, "ops");
        }

        await using (var same = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedule("nightly", "ticks", nightly), clock))
        {
            var kept = (await same.Schedules.GetAsync("nightly"))!;
            Assert.Equal("cron '0 3 * * *' in UTC", kept.Definition); // the runtime change holds
            Assert.True(kept.IsPaused);
        }

        await using var changed = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedule("nightly", "ticks", RecurringSchedule.Cron("0 4 * * *")), clock);
        var status = (await changed.Schedules.GetAsync("nightly"))!;
        Assert.Equal("cron '0 4 * * *' in UTC", status.Definition); // the code changed: the code wins
        Assert.True(status.IsPaused); // a start never undoes a pause
        Assert.Null(status.ChangedBy);
    }

    [Fact]
    public async Task StoredDefinitionThisNodeCannotRead_IsReported_AndDoesNotStopTheOthers()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        await using var node = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s
            .AddDurableSchedule("broken", "ticks", RecurringSchedule.Every(TimeSpan.FromSeconds(1)))
            .AddDurableSchedule("fine", "ticks", RecurringSchedule.Every(TimeSpan.FromSeconds(1))));
        await postgres.ExecuteAsync($"UPDATE {schema}.schedules SET cron = '0 2 * * *', time_zone = 'Mars/Olympus_Mons' WHERE name = 'broken'");

        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness WHERE schedule = 'fine'") >= 3, "the readable schedule runs");

        var broken = (await node.Schedules.GetAsync("broken"))!;
        Assert.Null(broken.Schedule);
        Assert.Contains("Mars/Olympus_Mons", broken.DefinitionError, StringComparison.Ordinal);
        Assert.Equal("cron '0 2 * * *' in Mars/Olympus_Mons", broken.Definition);
    }

    [Fact]
    public async Task QueueThatIsNotAScheduledTickQueue_FailsTheStartNamingIt()
    {
        var schema = await postgres.NewSchemaAsync();
        var ex = await Assert.ThrowsAsync<InvalidOperationException>(() => ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a",
            s => s.AddDurableSchedule("x", "missing", RecurringSchedule.Every(TimeSpan.FromMinutes(1)))));

        Assert.Contains("'missing'", ex.Message, StringComparison.Ordinal);
    }
}
