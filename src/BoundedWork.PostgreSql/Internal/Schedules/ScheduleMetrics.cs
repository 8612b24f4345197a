using System.Diagnostics.Metrics;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The durable schedules' instruments on the meter <c>BoundedWork.PostgreSql</c>, recorded by the node whose pass
/// committed them (a pass that fails records nothing): ticks enqueued, missed and triggered, and how late each tick was
/// enqueued after its scheduled instant. Tagged with <c>boundedwork.queue</c> and <c>boundedwork.schedule</c>.
/// </summary>
internal static class ScheduleMetrics
{
    private static readonly Meter s_meter = new(PostgreSqlWorkQueueDiagnostics.MeterName, typeof(ScheduleMetrics).Assembly.GetName().Version?.ToString());

    private static readonly Counter<long> s_ticks = s_meter.CreateCounter<long>("boundedwork.schedule.ticks", "{tick}",
        "Ticks of durable schedules by outcome (boundedwork.outcome: enqueued, missed, triggered), counted by the node that committed them.");

    private static readonly Histogram<double> s_lag = s_meter.CreateHistogram<double>("boundedwork.schedule.lag", "s",
        "How long after its scheduled instant each tick of a durable schedule was enqueued, by the node that enqueued it.");

    public static void Enqueued(string queue, string schedule, long count) => Ticks(queue, schedule, "enqueued", count);

    public static void Missed(string queue, string schedule, long count) => Ticks(queue, schedule, "missed", count);

    public static void Triggered(string queue, string schedule) => Ticks(queue, schedule, "triggered", 1);

    public static void Lag(string queue, string schedule, TimeSpan lag) =>
        s_lag.Record(Math.Max(lag.TotalSeconds, 0), new("boundedwork.queue", queue), new("boundedwork.schedule", schedule));

    private static void Ticks(string queue, string schedule, string outcome, long count)
    {
        if (count > 0)
        {
            s_ticks.Add(count, new("boundedwork.queue", queue), new("boundedwork.schedule", schedule), new("boundedwork.outcome", outcome));
        }
    }
}
