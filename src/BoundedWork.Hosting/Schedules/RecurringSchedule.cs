using System.Globalization;
using Cronos;

namespace BoundedWork.Hosting;

/// <summary>
/// When a recurring schedule ticks: a cron expression in a time zone, or a fixed interval. Immutable and validated
/// when made: an expression that does not parse, an unknown time zone or an expression that never fires is refused
/// with an <see cref="ArgumentException"/> whose parameter names the field.
/// </summary>
/// <remarks>
/// <para>
/// Cron expressions have five fields (minute, hour, day of month, month, day of week) or six with seconds first, and
/// the macros <c>@yearly</c>, <c>@monthly</c>, <c>@weekly</c>, <c>@daily</c>, <c>@hourly</c> and <c>@every_second</c>;
/// they are read by Cronos. Daylight saving follows Cronos's rules: a time that falls into a gap (the hour skipped
/// when clocks go forward) fires once, at the end of the gap; in an overlap (the hour repeated when clocks go back) a
/// time fires once, at its first occurrence, unless the expression steps through the hour (a <c>*</c>, range or step
/// in the second, minute or hour field), which fires in both.
/// </para>
/// <para>
/// An interval ticks at the multiples of the interval counted from 1970-01-01 00:00 UTC, so every process computes the
/// same instants whatever its start time or time zone.
/// </para>
/// </remarks>
public sealed class RecurringSchedule : IEquatable<RecurringSchedule>
{
    /// <summary>The shortest interval accepted: one second (cron expressions cannot tick more often either).</summary>
    public static readonly TimeSpan MinInterval = TimeSpan.FromSeconds(1);

    /// <summary>The longest interval accepted: 366 days.</summary>
    public static readonly TimeSpan MaxInterval = TimeSpan.FromDays(366);

    private readonly CronExpression? _cron;

    private RecurringSchedule(string? cron, CronExpression? parsed, TimeSpan? interval, TimeZoneInfo timeZone)
    {
        CronExpression = cron;
        _cron = parsed;
        Interval = interval;
        TimeZone = timeZone;
    }

    /// <summary>Gets the cron expression, as given (trimmed), or <see langword="null"/> for an interval.</summary>
    public string? CronExpression { get; }

    /// <summary>Gets the interval, or <see langword="null"/> for a cron expression.</summary>
    public TimeSpan? Interval { get; }

    /// <summary>Gets the time zone the cron expression is read in (UTC for an interval).</summary>
    public TimeZoneInfo TimeZone { get; }

    /// <summary>
    /// Makes a schedule from a configuration section: <c>Cron</c> (with an optional <c>TimeZone</c>, UTC when left out)
    /// or <c>Interval</c> (such as <c>00:05:00</c>). Other keys in the section are left to the caller.
    /// </summary>
    /// <param name="section">The section, such as <c>configuration.GetSection("Schedules:daily-report")</c>.</param>
    /// <returns>The schedule.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="section"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">
    /// Neither or both of <c>Cron</c> and <c>Interval</c> are set, or one is invalid (an expression that does not parse
    /// or never fires, an unknown time zone, an interval out of range): the parameter name is the setting's
    /// configuration path, such as <c>Schedules:daily-report:Cron</c>.
    /// </exception>
    public static RecurringSchedule FromConfiguration(Microsoft.Extensions.Configuration.IConfiguration section)
    {
        ArgumentNullException.ThrowIfNull(section);
        var root = section is Microsoft.Extensions.Configuration.IConfigurationSection s ? s.Path : string.Empty;
        string PathOf(string key) => root.Length == 0 ? key : root + ":" + key;
        string? Text(string key) => string.IsNullOrWhiteSpace(section[key]) ? null : section[key];
        ArgumentException Problem(string key, string message) => new($"Schedule setting '{PathOf(key)}' is invalid: {message}", PathOf(key));

        var (cron, zone, interval) = (Text("Cron"), Text("TimeZone"), Text("Interval"));
        if (cron is not null && interval is not null)
        {
            throw Problem("Interval", "give either Cron (with an optional TimeZone) or Interval, not both.");
        }

        try
        {
            if (interval is not null)
            {
                return TimeSpan.TryParse(interval, CultureInfo.InvariantCulture, out var every)
                    ? Every(every)
                    : throw Problem("Interval", $"must be a time span such as 00:05:00 (was '{interval}').");
            }

            return cron is not null
                ? Cron(cron, zone ?? "UTC")
                : throw Problem("Cron", "give Cron (with an optional TimeZone) or Interval.");
        }
        catch (ArgumentException ex) when (ex.ParamName is "cron" or "timeZone" or "interval")
        {
            var key = ex.ParamName switch { "cron" => "Cron", "timeZone" => "TimeZone", _ => "Interval" };
            var message = ex.Message;
            var suffix = $" (Parameter '{ex.ParamName}')";
            message = message.EndsWith(suffix, StringComparison.Ordinal) ? message[..^suffix.Length] : message;
            var actual = message.IndexOf("Actual value", StringComparison.Ordinal);
            throw Problem(key, actual > 0 ? message[..actual].TrimEnd() : message);
        }
    }

    /// <summary>Makes a schedule from a cron expression read in a time zone.</summary>
    /// <param name="cron">Five fields, or six with seconds first, or a macro such as <c>@daily</c>.</param>
    /// <param name="timeZone">A time zone id known to the operating system (<c>Europe/Berlin</c>); <c>UTC</c> by default.</param>
    /// <returns>The schedule.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="cron"/> or <paramref name="timeZone"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">
    /// The expression does not parse or never fires (parameter <paramref name="cron"/>), or the time zone is unknown (parameter
    /// <paramref name="timeZone"/>); the message says which and why.
    /// </exception>
    public static RecurringSchedule Cron(string cron, string timeZone = "UTC")
    {
        ArgumentNullException.ThrowIfNull(cron);
        ArgumentNullException.ThrowIfNull(timeZone);
        var zone = FindTimeZone(timeZone);
        var trimmed = cron.Trim();
        if (trimmed.Length == 0)
        {
            throw new ArgumentException("The cron expression is empty: give five fields (minute hour day month weekday), six with seconds first, or a macro such as @daily.", nameof(cron));
        }

        CronExpression parsed;
        try
        {
            var fields = trimmed.Split((char[]?)null, StringSplitOptions.RemoveEmptyEntries).Length;
            parsed = Cronos.CronExpression.Parse(trimmed, fields == 6 ? CronFormat.IncludeSeconds : CronFormat.Standard);
        }
        catch (CronFormatException ex)
        {
            throw new ArgumentException($"The cron expression '{trimmed}' does not parse: {ex.Message} Give five fields (minute hour day month weekday), six with seconds first, or a macro such as @daily.", nameof(cron), ex);
        }

        // Cron expressions repeat every 400 years at most (the Gregorian cycle): one that has no occurrence from a
        // fixed point has none ever (February 30th, or the 31st of a 30-day month).
        if (parsed.GetNextOccurrence(DateTimeOffset.UnixEpoch, TimeZoneInfo.Utc) is null)
        {
            throw new ArgumentException($"The cron expression '{trimmed}' never fires (no date matches it).", nameof(cron));
        }

        return new RecurringSchedule(trimmed, parsed, null, zone);
    }

    /// <summary>Makes a schedule that ticks every <paramref name="interval"/>, at its multiples counted from 1970-01-01 00:00 UTC.</summary>
    /// <param name="interval">From <see cref="MinInterval"/> to <see cref="MaxInterval"/>, in whole milliseconds.</param>
    /// <returns>The schedule.</returns>
    /// <exception cref="ArgumentOutOfRangeException">The interval is out of range or not whole milliseconds (parameter <c>interval</c>).</exception>
    public static RecurringSchedule Every(TimeSpan interval)
    {
        if (interval < MinInterval || interval > MaxInterval || interval.Ticks % TimeSpan.TicksPerMillisecond != 0)
        {
            throw new ArgumentOutOfRangeException(nameof(interval), interval,
                $"The interval must be whole milliseconds from {MinInterval} to {MaxInterval}.");
        }

        return new RecurringSchedule(null, null, interval, TimeZoneInfo.Utc);
    }

    /// <summary>Gets the first tick strictly after <paramref name="after"/>, or <see langword="null"/> when there is none before the year 2500.</summary>
    /// <param name="after">The instant to count from.</param>
    /// <returns>The tick's instant, in the schedule's time zone's offset (UTC for an interval).</returns>
    public DateTimeOffset? GetNextOccurrence(DateTimeOffset after)
    {
        if (_cron is not null)
        {
            return _cron.GetNextOccurrence(after, TimeZone, inclusive: false);
        }

        var interval = Interval!.Value.Ticks;
        var since = after.UtcTicks - DateTimeOffset.UnixEpoch.UtcTicks;
        var steps = (since / interval) - (since % interval != 0 && since < 0 ? 1 : 0) + 1;
        var ticks = DateTimeOffset.UnixEpoch.UtcTicks + (steps * interval);
        return ticks > DateTimeOffset.MaxValue.UtcTicks ? null : new DateTimeOffset(ticks, TimeSpan.Zero);
    }

    /// <summary>Gets a description for people and logs: <c>cron '0 2 * * *' in Europe/Berlin</c> or <c>every 00:05:00</c>.</summary>
    /// <returns>The description.</returns>
    public override string ToString() =>
        CronExpression is not null
            ? $"cron '{CronExpression}' in {TimeZone.Id}"
            : "every " + Interval!.Value.ToString("c", CultureInfo.InvariantCulture);

    /// <inheritdoc/>
    public bool Equals(RecurringSchedule? other) =>
        other is not null && CronExpression == other.CronExpression && Interval == other.Interval && TimeZone.Id == other.TimeZone.Id;

    /// <inheritdoc/>
    public override bool Equals(object? obj) => Equals(obj as RecurringSchedule);

    /// <inheritdoc/>
    public override int GetHashCode() => HashCode.Combine(CronExpression, Interval, TimeZone.Id);

    internal static TimeZoneInfo FindTimeZone(string timeZone)
    {
        if (string.IsNullOrWhiteSpace(timeZone))
        {
            throw new ArgumentException("The time zone is empty: give an id such as UTC or Europe/Berlin.", nameof(timeZone));
        }

        try
        {
            return TimeZoneInfo.FindSystemTimeZoneById(timeZone.Trim());
        }
        catch (Exception ex) when (ex is TimeZoneNotFoundException or InvalidTimeZoneException)
        {
            throw new ArgumentException($"The time zone '{timeZone}' is unknown on this machine: give an id such as UTC or Europe/Berlin.", nameof(timeZone), ex);
        }
    }
}
