using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Extensions.Configuration;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Reads durable schedules from a configuration section, one child per schedule (its key is the name), all of them
/// before any is registered: a problem throws an <see cref="ArgumentException"/> whose parameter is the setting's
/// configuration path (<c>DurableSchedules:nightly:Cron</c>), and nothing is registered.
/// </summary>
internal static class DurableScheduleConfiguration
{
    public const string Queue = "Queue";
    public const string Cron = "Cron";
    public const string TimeZone = "TimeZone";
    public const string Interval = "Interval";
    public const string MissedTicks = "MissedTicks";
    public const string MaxCatchUp = "MaxCatchUp";
    public const string MisfireThreshold = "MisfireThreshold";
    public const string StartPaused = "StartPaused";

    private static readonly string[] s_fields = [Queue, Cron, TimeZone, Interval, MissedTicks, MaxCatchUp, MisfireThreshold, StartPaused];

    public static List<DurableScheduleRegistration> Read(IConfiguration section)
    {
        var read = new List<DurableScheduleRegistration>();
        foreach (var child in section.GetChildren())
        {
            var path = child.Path;
            try
            {
                DurableScheduleRegistration.ValidateName(child.Key);
            }
            catch (ArgumentException ex)
            {
                throw Problem(path, ex.Message);
            }

            if (child.Value is not null)
            {
                throw Problem(path, $"A durable schedule is a section with {Queue} and {Cron} or {Interval}, not a value.");
            }

            var settings = child.GetChildren().ToDictionary(static s => s.Key, StringComparer.OrdinalIgnoreCase);
            if (settings.Keys.FirstOrDefault(static k => !s_fields.Contains(k, StringComparer.OrdinalIgnoreCase)) is { } unknown)
            {
                throw Problem(settings[unknown].Path, $"Unknown setting '{unknown}'; a durable schedule takes {string.Join(", ", s_fields)}.");
            }

            string? Text(string field) => settings.TryGetValue(field, out var s) && !string.IsNullOrWhiteSpace(s.Value) ? s.Value : null;
            string PathOf(string field) => settings.TryGetValue(field, out var s) ? s.Path : ConfigurationPath.Combine(path, field);

            var queue = Text(Queue) ?? throw Problem(PathOf(Queue), "Name the queue its ticks are enqueued on (a PostgreSQL work queue of ScheduledTick).");
            var cron = Text(Cron);
            var interval = Text(Interval);
            var zone = Text(TimeZone);
            RecurringSchedule schedule;
            if (cron is not null && interval is not null)
            {
                throw Problem(PathOf(Interval), $"Give either {Cron} (with an optional {TimeZone}) or {Interval}, not both.");
            }
            else if (interval is not null)
            {
                if (zone is not null)
                {
                    throw Problem(PathOf(TimeZone), $"{TimeZone} applies to a cron expression, not to an {Interval}.");
                }

                if (!TimeSpan.TryParse(interval, CultureInfo.InvariantCulture, out var every))
                {
                    throw Problem(PathOf(Interval), $"Must be a time span such as 00:05:00 (was '{interval}').");
                }

                schedule = Make(() => RecurringSchedule.Every(every), PathOf);
            }
            else if (cron is not null)
            {
                schedule = Make(() => RecurringSchedule.Cron(cron, zone ?? "UTC"), PathOf);
            }
            else
            {
                throw Problem(PathOf(Cron), $"Give {Cron} (with an optional {TimeZone}) or {Interval}.");
            }

            var options = new DurableScheduleOptions();
            if (Text(MissedTicks) is { } policy)
            {
                options.MissedTicks = Enum.TryParse<MissedTickPolicy>(policy, ignoreCase: true, out var p) && Enum.IsDefined(p) && !char.IsDigit(policy.Trim()[0])
                    ? p
                    : throw Problem(PathOf(MissedTicks), $"Must be LatestOnce, Skip or Each (was '{policy}').");
            }

            if (Text(MaxCatchUp) is { } catchUp)
            {
                options.MaxCatchUp = int.TryParse(catchUp, NumberStyles.Integer, CultureInfo.InvariantCulture, out var n)
                    ? n
                    : throw Problem(PathOf(MaxCatchUp), $"Must be a whole number from 1 to 1000 (was '{catchUp}').");
            }

            if (Text(MisfireThreshold) is { } threshold)
            {
                options.MisfireThreshold = TimeSpan.TryParse(threshold, CultureInfo.InvariantCulture, out var t)
                    ? t
                    : throw Problem(PathOf(MisfireThreshold), $"Must be a time span such as 00:01:00 (was '{threshold}').");
            }

            if (Text(StartPaused) is { } paused)
            {
                options.StartPaused = bool.TryParse(paused, out var b) ? b : throw Problem(PathOf(StartPaused), $"Must be true or false (was '{paused}').");
            }

            try
            {
                options.Validate();
            }
            catch (ArgumentException ex)
            {
                throw Problem(PathOf(ex.ParamName ?? MissedTicks), Message(ex));
            }

            read.Add(new DurableScheduleRegistration(queue, child.Key, schedule, options));
        }

        return read;
    }

    private static RecurringSchedule Make(Func<RecurringSchedule> make, Func<string, string> pathOf)
    {
        try
        {
            return make();
        }
        catch (ArgumentException ex)
        {
            throw Problem(pathOf(ex.ParamName switch { "timeZone" => TimeZone, "interval" => Interval, _ => Cron }), Message(ex));
        }
    }

    private static string Message(ArgumentException ex)
    {
        var message = ex.Message;
        var suffix = ex.ParamName is { } p ? $" (Parameter '{p}')" : null;
        message = suffix is not null && message.EndsWith(suffix, StringComparison.Ordinal) ? message[..^suffix.Length] : message;
        var actual = message.IndexOf("Actual value", StringComparison.Ordinal);
        return actual > 0 ? message[..actual].TrimEnd() : message;
    }

    private static ArgumentException Problem(string path, string message) =>
        new($"Durable schedule setting '{path}' is invalid: {message} No durable schedule from configuration is registered.", path);
}
