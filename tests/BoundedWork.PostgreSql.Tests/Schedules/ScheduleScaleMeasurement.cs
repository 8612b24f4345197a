using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Globalization;
using Microsoft.Extensions.DependencyInjection;
using Xunit.Abstractions;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>
/// The figure in docs/performance.md: 5,000 durable schedules on one queue, each every minute (all due in the same
/// second, the worst burst), on one node that only enqueues. Measures how late each tick is enqueued, the node's CPU,
/// the commands this process sent (Npgsql's <c>db.client.operation.duration</c>, one per command; a transaction's
/// commit is not one) and the server's transactions per minute. Opt-in (it runs for minutes): <c>BOUNDEDWORK_SCHEDULE_SCALE=1</c>.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ScheduleScaleMeasurement(PostgresFixture postgres, ITestOutputHelper output)
{
    [OptInMeasurement]
    public async Task FiveThousandSchedules_OneQueue_EveryTickEnqueuedOnTime()
    {
        const int count = 5000;
        var minutes = int.TryParse(Environment.GetEnvironmentVariable("BOUNDEDWORK_SCHEDULE_SCALE_MINUTES"), out var m) ? m : 3;
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        await using var node = await ScheduleNode.StartAsync(postgres.ConnectionString, schema, "a", s => s.AddDurableSchedules("ticks"), storage: o => o.Consume = false);
        var first = DateTimeOffset.UtcNow.AddMinutes(1);
        first = new DateTimeOffset(first.Year, first.Month, first.Day, first.Hour, first.Minute, 0, TimeSpan.Zero);
        await postgres.ExecuteAsync($"""
            INSERT INTO {schema}.schedules (name, queue, interval_ms, time_zone, next_tick, changed_by)
            SELECT 'job-' || n, 'ticks', 60000, 'UTC', '{first:O}'::timestamptz, 'scale' FROM generate_series(1, {count}) n
            """);

        // Measure from the first tick's minute to the end of the last one.
        while (DateTimeOffset.UtcNow < first)
        {
            await Task.Delay(100);
        }

        long commands = 0;
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == "Npgsql" && instrument.Name == "db.client.operation.duration")
                {
                    l.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<double>((_, _, _, _) => Interlocked.Increment(ref commands));
        listener.Start();
        var cpu = Process.GetCurrentProcess().TotalProcessorTime;
        var commits = await postgres.ScalarAsync<long>("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
        var clock = Stopwatch.StartNew();
        var end = first.AddMinutes(minutes);
        while (DateTimeOffset.UtcNow < end.AddSeconds(-1))
        {
            await Task.Delay(200);
        }

        var elapsed = clock.Elapsed;
        var sent = Interlocked.Read(ref commands);
        var usedCpu = Process.GetCurrentProcess().TotalProcessorTime - cpu;
        var transactions = await postgres.ScalarAsync<long>("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()") - commits;
        var items = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE queue = 'ticks'");
        var lateness = await postgres.ScalarAsync<double[]>($"""
            SELECT ARRAY[
                percentile_cont(0.5) WITHIN GROUP (ORDER BY late),
                percentile_cont(0.99) WITHIN GROUP (ORDER BY late),
                max(late)]
            FROM (SELECT extract(epoch FROM enqueued_at - (payload->>'ScheduledAt')::timestamptz) ::float8 AS late FROM {schema}.items WHERE queue = 'ticks') t
            """);
        var perMinute = elapsed.TotalMinutes;
        output.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{count} schedules, {minutes} min: {items} ticks enqueued; lateness p50 {lateness[0]:0.000} s, p99 {lateness[1]:0.000} s, max {lateness[2]:0.000} s; node CPU {usedCpu.TotalSeconds / perMinute:0.00} s per minute; {sent / perMinute:0} commands sent per minute ({(double)sent / Math.Max(items, 1):0.000} per tick); {transactions / perMinute:0} server transactions per minute (whole database, the queue's own maintenance included); {Environment.ProcessorCount} cores"));

        Assert.Equal((long)count * minutes, items);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) - count(DISTINCT idempotency_key) FROM {schema}.items"));
        Assert.True(lateness[2] < 10, $"the latest tick was enqueued {lateness[2]} s late");
    }
}

/// <summary>
/// A measurement that runs for minutes: reported as skipped (with how to run it) unless
/// <c>BOUNDEDWORK_SCHEDULE_SCALE=1</c>, never as a test that passed without running.
/// </summary>
[AttributeUsage(AttributeTargets.Method)]
internal sealed class OptInMeasurementAttribute : FactAttribute
{
    public OptInMeasurementAttribute()
    {
        if (Environment.GetEnvironmentVariable("BOUNDEDWORK_SCHEDULE_SCALE") is not "1")
        {
            Skip = "A measurement of several minutes: run it with BOUNDEDWORK_SCHEDULE_SCALE=1 (docs/performance.md).";
        }
    }
}
