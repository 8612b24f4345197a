using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.Hosting.Tests.Schedules;

/// <summary>In-memory schedules in a real host on a fake clock: runs, overlap, failures, and the operator's controls.</summary>
public sealed class RecurringHostingTests
{
    private static readonly DateTimeOffset Start = new(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);

    private static IHost Build(FakeTimeProvider clock, Action<IServiceCollection> schedules, FakeLogCollector? logs = null)
    {
        var builder = TestHost.CreateBuilder(logs);
        builder.Services.AddSingleton<TimeProvider>(clock);
        builder.Services.AddBoundedExecutor("jobs", o => o.WorkerCount = 2);
        schedules(builder.Services);
        var host = builder.Build();
        host.Start();
        return host;
    }

    private static IRecurringSchedules Schedules(IHost host) => host.Services.GetRequiredService<IRecurringSchedules>();

    [Fact]
    public void Tick_RunsTheHandlerOnTheNamedExecutor_WithTheScheduledInstant()
    {
        var clock = new FakeTimeProvider(Start);
        var ran = new List<(DateTimeOffset At, string? Thread)>();
        using var host = Build(clock, s => s.AddRecurring("report", "*/5 * * * *", "jobs", c =>
        {
            lock (ran)
            {
                ran.Add((c.ScheduledAt, Thread.CurrentThread.Name));
            }
        }));

        Assert.Equal(Start.AddMinutes(5), Schedules(host).GetStatus("report").NextRunAt);
        clock.Advance(TimeSpan.FromMinutes(5));
        TestHost.WaitUntil(() => Schedules(host).GetStatus("report").Succeeded == 1);
        clock.Advance(TimeSpan.FromMinutes(5));
        TestHost.WaitUntil(() => Schedules(host).GetStatus("report").Succeeded == 2);

        var status = Schedules(host).GetStatus("REPORT");
        Assert.Equal([Start.AddMinutes(5), Start.AddMinutes(10)], ran.Select(r => r.At));
        Assert.All(ran, r => Assert.Contains("jobs", r.Thread ?? "", StringComparison.OrdinalIgnoreCase));
        Assert.Equal(RecurringRunOutcome.Succeeded, status.LastOutcome);
        Assert.Equal(2, status.Ticks);
        Assert.Equal(Start.AddMinutes(15), status.NextRunAt);
        Assert.Equal(2, host.Services.GetRequiredService<IBoundedExecutorRegistry>().GetExecutor("jobs").GetStatistics().Completed);
    }

    [Fact]
    public void Tick_WhilePreviousRunGoes_IsSkippedAndCounted_ByDefault()
    {
        var clock = new FakeTimeProvider(Start);
        using var gate = new Gate();
        var runs = 0;
        using var host = Build(clock, s => s.AddRecurring("slow", "* * * * * *", "jobs", _ =>
        {
            if (Interlocked.Increment(ref runs) == 1)
            {
                gate.Item();
            }
        }));

        clock.Advance(TimeSpan.FromSeconds(1));
        gate.WaitStarted();
        clock.Advance(TimeSpan.FromSeconds(1));
        clock.Advance(TimeSpan.FromSeconds(1));
        var during = Schedules(host).GetStatus("slow");
        gate.Open();
        TestHost.WaitUntil(() => !Schedules(host).GetStatus("slow").IsRunning);
        clock.Advance(TimeSpan.FromSeconds(1));
        TestHost.WaitUntil(() => Schedules(host).GetStatus("slow").Succeeded == 2);

        Assert.Equal(2, during.Skipped);
        Assert.True(during.IsRunning);
        var after = Schedules(host).GetStatus("slow");
        Assert.Equal(4, after.Ticks);
        Assert.Equal(2, after.Skipped);
        Assert.Equal(2, Volatile.Read(ref runs));
    }

    [Fact]
    public void Tick_WhilePreviousRunGoes_WaitsUnderQueue_AndAtMostOneWaits()
    {
        var clock = new FakeTimeProvider(Start);
        using var gate = new Gate();
        var ran = new List<DateTimeOffset>();
        using var host = Build(clock, s => s.AddRecurring("queued", TimeSpan.FromSeconds(1), "jobs", c =>
        {
            lock (ran)
            {
                ran.Add(c.ScheduledAt);
            }

            if (ran.Count == 1)
            {
                gate.Item();
            }
        }, o => o.Overlap = RecurringOverlapPolicy.Queue));

        clock.Advance(TimeSpan.FromSeconds(1));
        gate.WaitStarted();
        clock.Advance(TimeSpan.FromSeconds(1)); // waits
        clock.Advance(TimeSpan.FromSeconds(1)); // skipped: one already waits
        gate.Open();
        TestHost.WaitUntil(() => Schedules(host).GetStatus("queued").Succeeded == 2);

        lock (ran)
        {
            Assert.Equal([Start.AddSeconds(1), Start.AddSeconds(2)], ran);
        }

        var status = Schedules(host).GetStatus("queued");
        Assert.Equal(1, status.Skipped);
        Assert.Equal(3, status.Ticks);
    }

    [Fact]
    public void Run_ThatThrows_IsCountedLoggedAndTheScheduleCarriesOn()
    {
        var clock = new FakeTimeProvider(Start);
        var logs = new FakeLogCollector();
        var runs = 0;
        using var host = Build(clock, s => s.AddRecurring("flaky", TimeSpan.FromMinutes(1), "jobs", _ =>
        {
            if (Interlocked.Increment(ref runs) == 1)
            {
                throw new InvalidOperationException("settlement file missing");
            }
        }), logs);

        clock.Advance(TimeSpan.FromMinutes(1));
        TestHost.WaitUntil(() => Schedules(host).GetStatus("flaky").Failed == 1);
        var failed = Schedules(host).GetStatus("flaky");
        clock.Advance(TimeSpan.FromMinutes(1));
        TestHost.WaitUntil(() => Schedules(host).GetStatus("flaky").Succeeded == 1);

        Assert.Equal(RecurringRunOutcome.Failed, failed.LastOutcome);
        Assert.Contains("settlement file missing", failed.LastError, StringComparison.Ordinal);
        Assert.Contains(logs.GetSnapshot(), r => r.Id.Name == "ScheduleRunFailed" && r.Message.Contains("'flaky'", StringComparison.Ordinal));
        Assert.Equal(RecurringRunOutcome.Succeeded, Schedules(host).GetStatus("flaky").LastOutcome);
        Assert.Null(Schedules(host).GetStatus("flaky").LastError);
    }

    [Fact]
    public void PauseResumeTriggerChange_TakeEffectAndAreLogged()
    {
        var clock = new FakeTimeProvider(Start);
        var logs = new FakeLogCollector();
        var ran = new List<(DateTimeOffset At, bool Triggered)>();
        using var host = Build(clock, s => s.AddRecurring("ops", TimeSpan.FromMinutes(1), "jobs", c =>
        {
            lock (ran)
            {
                ran.Add((c.ScheduledAt, c.IsTriggered));
            }
        }), logs);
        var schedules = Schedules(host);

        Assert.True(schedules.SetPaused("ops", paused: true));
        Assert.False(schedules.SetPaused("ops", paused: true));
        Assert.Null(schedules.GetStatus("ops").NextRunAt);
        clock.Advance(TimeSpan.FromMinutes(3));
        Assert.Equal(0, schedules.GetStatus("ops").Ticks);

        Assert.Equal(RecurringTriggerResult.Started, schedules.TriggerNow("ops"));
        TestHost.WaitUntil(() => schedules.GetStatus("ops").Succeeded == 1);

        Assert.True(schedules.SetPaused("ops", paused: false));
        schedules.Change("ops", RecurringSchedule.Every(TimeSpan.FromMinutes(10)));
        Assert.Equal(Start.AddMinutes(10), schedules.GetStatus("ops").NextRunAt);
        clock.Advance(TimeSpan.FromMinutes(7));
        TestHost.WaitUntil(() => schedules.GetStatus("ops").Succeeded == 2);

        lock (ran)
        {
            Assert.Equal([(Start.AddMinutes(3), true), (Start.AddMinutes(10), false)], ran);
        }

        Assert.Equal(1, schedules.GetStatus("ops").Triggered);
        var changes = logs.GetSnapshot().Where(r => r.Category == "BoundedWork.Schedules").Select(r => r.Id.Name).ToList();
        Assert.Contains("ScheduleTriggered", changes);
        Assert.Contains("ScheduleRetimed", changes);
        Assert.Equal(3, changes.Count(n => n == "ScheduleChanged"));
        Assert.Throws<KeyNotFoundException>(() => schedules.TriggerNow("nope"));
    }

    [Fact]
    public void AddAndRemove_AtRuntime()
    {
        var clock = new FakeTimeProvider(Start);
        var runs = 0;
        using var host = Build(clock, s => s.AddRecurring("first", TimeSpan.FromHours(1), "jobs", _ => { }));
        var schedules = Schedules(host);

        schedules.Add("second", RecurringSchedule.Cron("0 * * * * *"), "jobs", _ => Interlocked.Increment(ref runs));
        Assert.Throws<ArgumentException>(() => schedules.Add("SECOND", RecurringSchedule.Every(TimeSpan.FromMinutes(1)), "jobs", _ => { }));
        var unknown = Assert.Throws<ArgumentException>(() => schedules.Add("third", RecurringSchedule.Every(TimeSpan.FromMinutes(1)), "nope", _ => { }));
        Assert.Equal("executor", unknown.ParamName);
        clock.Advance(TimeSpan.FromMinutes(1));
        TestHost.WaitUntil(() => Volatile.Read(ref runs) == 1);
        Assert.True(schedules.Remove("second"));
        clock.Advance(TimeSpan.FromMinutes(1));

        Assert.Equal(["first"], schedules.GetStatus().Select(s => s.Name));
        Assert.Equal(1, Volatile.Read(ref runs));
    }

    [Fact]
    public void Start_WithAnUnknownExecutor_FailsNamingIt()
    {
        var builder = TestHost.CreateBuilder();
        builder.Services.AddBoundedExecutor("jobs");
        builder.Services.AddRecurring("orphan", "0 2 * * *", "missing", _ => { });
        using var host = builder.Build();

        var ex = Assert.Throws<InvalidOperationException>(() => host.Start());

        Assert.Contains("'orphan'", ex.Message, StringComparison.Ordinal);
        Assert.Contains("'missing'", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void AddRecurring_SameNameTwice_IsRefused()
    {
        var services = new ServiceCollection();
        services.AddRecurring("nightly", "0 2 * * *", "jobs", _ => { });

        var ex = Assert.Throws<ArgumentException>(() => services.AddRecurring("NIGHTLY", TimeSpan.FromMinutes(1), "jobs", _ => { }));

        Assert.Equal("name", ex.ParamName);
    }

    [Fact]
    public void HandlerType_IsResolvedFromAScopePerRun()
    {
        var clock = new FakeTimeProvider(Start);
        using var host = Build(clock, s => s.AddRecurring<CountingHandler>("typed", RecurringSchedule.Every(TimeSpan.FromSeconds(30)), "jobs"));

        clock.Advance(TimeSpan.FromSeconds(30));
        TestHost.WaitUntil(() => Schedules(host).GetStatus("typed").Succeeded == 1);
        clock.Advance(TimeSpan.FromSeconds(30));
        TestHost.WaitUntil(() => Schedules(host).GetStatus("typed").Succeeded == 2);

        Assert.Equal(2, CountingHandler.Instances);
    }

    private sealed class CountingHandler : IRecurringHandler
    {
        public static int Instances;

        public CountingHandler() => Interlocked.Increment(ref Instances);

        public void Run(RecurringTickContext context) => Assert.Equal("typed", context.ScheduleName);
    }
}
