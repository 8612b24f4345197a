using System.Text.Json;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging.Testing;

namespace BoundedWork.Cli.Tests;

/// <summary><c>bw schedules</c> as an operator runs it: the real tool in its own process, against an app's socket.</summary>
public sealed class ScheduleCommandTests
{
    [Fact]
    public async Task Schedules_ListPauseSetTriggerResume_ThroughTheSocket_LoggedAsTheToolsUser()
    {
        await using var app = await ScheduleApp.StartAsync();

        var list = await Bw.RunAsync(app.Bw("schedules"));
        Assert.True(list.ExitCode == 0, list.ToString());
        var plain = Plain(list.Out);
        Assert.Matches(@"nightly\s+cron '0 2 \* \* \*' in Europe/Berlin\s+payments\s+waiting", plain);

        var pause = await Bw.RunAsync(app.Bw("schedules", "pause", "nightly"));
        Assert.True(pause.ExitCode == 0, pause.ToString());
        Assert.Contains("paused no -> yes", Plain(pause.Out), StringComparison.Ordinal);

        var set = await Bw.RunAsync(app.Bw("schedules", "set", "nightly", "--cron", "30 3 * * *"));
        Assert.True(set.ExitCode == 0, set.ToString());
        Assert.Contains("cron '30 3 * * *' in Europe/Berlin", Plain(set.Out), StringComparison.Ordinal);

        var bad = await Bw.RunAsync(app.Bw("schedules", "set", "nightly", "--cron", "0 0 30 2 *"));
        Assert.Equal(1, bad.ExitCode);
        Assert.Contains("never fires", bad.Error + bad.Out, StringComparison.Ordinal);

        var trigger = await Bw.RunAsync(app.Bw("schedules", "trigger", "nightly"));
        Assert.True(trigger.ExitCode == 0, trigger.ToString());
        Assert.Contains("triggered, started", Plain(trigger.Out), StringComparison.Ordinal);

        var json = JsonDocument.Parse((await Bw.RunAsync(app.Bw("schedules", "nightly", "--json"))).Out).RootElement;
        Assert.True(json.GetProperty("paused").GetBoolean());
        Assert.Equal(1, json.GetProperty("triggered").GetInt64());
        Assert.Equal(0, (await Bw.RunAsync(app.Bw("schedules", "resume", "nightly"))).ExitCode);
        Assert.Equal(1, (await Bw.RunAsync(app.Bw("schedules", "pause", "nope"))).ExitCode);
        Assert.Equal(4, app.Logs.GetSnapshot().Count(r => r.Id.Name == "ScheduleChangedByConsole"));
    }

    [Fact]
    public async Task DurableSchedules_ListAddPauseSetTriggerRemove_ThroughTheSocket_StoredAsTheToolsUser()
    {
        var durable = new BoundedWork.AspNetCore.Tests.FakeDurableSchedules("reconciliation");
        durable.Define("settlements", "reconciliation", BoundedWork.Hosting.RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"));
        await using var app = await ScheduleApp.StartAsync(durable);

        var list = await Bw.RunAsync(app.Bw("schedules"));
        Assert.True(list.ExitCode == 0, list.ToString());
        Assert.Matches(@"settlements\s+cron '0 2 \* \* \*' in Europe/Berlin\s+reconciliation\s+waiting", Plain(list.Out));

        var add = await Bw.RunAsync(app.Bw("schedules", "add", "retry-callbacks", "--interval", "00:05:00", "--missed-ticks", "skip"));
        Assert.True(add.ExitCode == 0, add.ToString());
        Assert.Contains("retry-callbacks: added on reconciliation, every 00:05:00", Plain(add.Out), StringComparison.Ordinal);

        var badAdd = await Bw.RunAsync(app.Bw("schedules", "add", "x", "--cron", "0 2 * * *", "--time-zone", "Mars/Base"));
        Assert.Equal(1, badAdd.ExitCode);
        Assert.Contains("timeZone", badAdd.Error + badAdd.Out, StringComparison.Ordinal);

        var pause = await Bw.RunAsync(app.Bw("schedules", "pause", "settlements", "--durable"));
        Assert.True(pause.ExitCode == 0, pause.ToString());
        Assert.Contains("paused no -> yes", Plain(pause.Out), StringComparison.Ordinal);

        var set = await Bw.RunAsync(app.Bw("schedules", "set", "settlements", "--durable", "--cron", "30 3 * * *"));
        Assert.True(set.ExitCode == 0, set.ToString());
        Assert.Contains("cron '30 3 * * *' in Europe/Berlin", Plain(set.Out), StringComparison.Ordinal);

        var trigger = await Bw.RunAsync(app.Bw("schedules", "trigger", "settlements", "-d"));
        Assert.True(trigger.ExitCode == 0, trigger.ToString());
        Assert.Matches(@"settlements: triggered, item \d+ enqueued", Plain(trigger.Out));

        var json = JsonDocument.Parse((await Bw.RunAsync(app.Bw("schedules", "settlements", "--durable", "--json"))).Out).RootElement;
        Assert.True(json.GetProperty("paused").GetBoolean());
        Assert.Equal(1, json.GetProperty("enqueued").GetInt64());
        Assert.Equal(0, (await Bw.RunAsync(app.Bw("schedules", "remove", "retry-callbacks"))).ExitCode);
        Assert.Equal(1, (await Bw.RunAsync(app.Bw("schedules", "remove", "retry-callbacks"))).ExitCode);
        Assert.All(durable.Changes, c => Assert.Contains(" by ", c, StringComparison.Ordinal));
        Assert.Equal(5, durable.Changes.Count);
        Assert.Equal(5, app.Logs.GetSnapshot().Count(r => r.Id.Name == "DurableScheduleChangedByConsole"));
    }

    [Fact]
    public async Task DurableSchedules_SetMissedTicks_ChangesThePolicy_OnlyForADurableSchedule_HostileValueRefusedNamingTheField()
    {
        var durable = new BoundedWork.AspNetCore.Tests.FakeDurableSchedules("reconciliation");
        durable.Define("settlements", "reconciliation", BoundedWork.Hosting.RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"));
        await using var app = await ScheduleApp.StartAsync(durable);

        var policy = await Bw.RunAsync(app.Bw("schedules", "set", "settlements", "-d", "--missed-ticks", "each"));
        Assert.True(policy.ExitCode == 0, policy.ToString());
        Assert.Contains("missedTicks latestOnce -> each", Plain(policy.Out), StringComparison.Ordinal);
        var notDurable = await Bw.RunAsync(app.Bw("schedules", "set", "settlements", "--missed-ticks", "skip"));
        Assert.NotEqual(0, notDurable.ExitCode);
        Assert.Contains("--durable", notDurable.Error + notDurable.Out, StringComparison.Ordinal);
        var badPolicy = await Bw.RunAsync(app.Bw("schedules", "set", "settlements", "-d", "--missed-ticks", "2"));
        Assert.Equal(1, badPolicy.ExitCode);
        Assert.Contains("missedTicks must be latestOnce, skip or each", badPolicy.Error + badPolicy.Out, StringComparison.Ordinal);
        Assert.Equal(BoundedWork.Hosting.MissedTickPolicy.Each, (await durable.GetAsync("settlements"))!.MissedTicks);
        Assert.StartsWith("settlements: missed ticks Each by ", Assert.Single(durable.Changes), StringComparison.Ordinal);
    }

    private static string Plain(string output) => System.Text.RegularExpressions.Regex.Replace(output, @"\x1b\[[0-9;]*m", "");
}

public sealed class ScheduleApp : SocketAppHost
{
    private ScheduleApp(WebApplication app, string socketPath, FakeLogCollector logs)
        : base(app, socketPath, logs)
    {
    }

    public static async Task<ScheduleApp> StartAsync(BoundedWork.Hosting.IDurableSchedules? durable = null)
    {
        var (built, socketPath, logs) = SocketApp.Build("sc", services =>
        {
            if (durable is not null)
            {
                services.AddSingleton(durable);
            }

            services.AddBoundedExecutor("payments", o => o.WorkerCount = 1);
            services.AddRecurring("nightly", "0 2 * * *", "payments", _ => { }, timeZone: "Europe/Berlin");
        });
        return await StartedAsync(new ScheduleApp(built, socketPath, logs));
    }
}
