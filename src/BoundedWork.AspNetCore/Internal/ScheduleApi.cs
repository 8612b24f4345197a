using System.Buffers;
using System.Globalization;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The console's in-memory recurring schedules (<see cref="IRecurringSchedules"/>), independent of the transport:
/// list them, read one, change one (pause, resume, new timing) and trigger one now. A change meets the console's rules
/// (<see cref="AdminApi.CheckChangeRules"/>), is read strictly (every problem named against its field, and a body
/// with any problem changes nothing), and is audited like a settings change: logged with who, where from and what
/// (event 620; refusals 621). Adding a schedule needs its handler, so it is done in code or with the API.
/// </summary>
internal sealed class ScheduleApi(IRecurringSchedules? schedules, ILogger logger, DurableScheduleApi? durable = null)
{
    /// <summary>Gets the durable schedules' API, served beside the in-memory ones.</summary>
    public DurableScheduleApi Durable { get; } = durable ?? new DurableScheduleApi(null, logger);

    public const string Paused = "paused";
    public const string Cron = "cron";
    public const string TimeZone = "timeZone";
    public const string Interval = "interval";

    /// <summary>The largest body read, as for an executor's settings.</summary>
    public const int MaxBodyBytes = SettingsRequest.MaxBodyBytes;

    public static readonly string[] Fields = [Paused, Cron, TimeZone, Interval];

    /// <summary>The fields of a durable schedule's change: <see cref="Fields"/> and its missed-tick policy.</summary>
    public static readonly string[] DurableFields = [Paused, Cron, TimeZone, Interval, DurableScheduleApi.MissedTicks];

    public AdminReply List() =>
        AdminReply.Ok(new ScheduleListResponse([.. (schedules?.GetStatus() ?? []).Select(View)]), ScheduleJsonContext.Readable.ScheduleListResponse);

    public AdminReply Get(string name) =>
        Find(name) is { } status ? AdminReply.Ok(View(status), ScheduleJsonContext.Readable.ScheduleView) : UnknownSchedule(name);

    public AdminReply Change(ChangeRequest request)
    {
        var name = request.ExecutorName;
        if (AdminApi.CheckChangeRules(request, "the schedule change") is { } broken)
        {
            return Refuse(request, broken.Reason, broken.Problem);
        }

        if (Find(name) is not { } before)
        {
            return Refuse(request, "not_found", UnknownSchedule(name));
        }

        var (paused, timing, errors) = request.BodyTooLarge ? (null, null, ChangeRequest.TooLarge(MaxBodyBytes)) : Parse(request.Body, before);
        if (errors.Count > 0)
        {
            return Refuse(request, "invalid", AdminReply.Problem(
                request.InvalidBodyStatus,
                "Invalid schedule change",
                $"Schedule '{name}' is unchanged: {string.Join(" ", errors.Listed.Values.SelectMany(static e => e))}",
                errors.Listed));
        }

        if (timing is not null)
        {
            schedules!.Change(name, timing);
        }

        if (paused is { } pause)
        {
            schedules!.SetPaused(name, pause);
        }

        var after = schedules!.GetStatus(name);
        if (logger.IsEnabled(LogLevel.Information))
        {
            var change = string.Join(", ", new[]
            {
                timing is null ? null : $"timing {before.Schedule} -> {after.Schedule}",
                paused is null ? null : $"paused {before.IsPaused} -> {after.IsPaused}",
            }.Where(static c => c is not null));
            logger.ScheduleChangedByConsole(AdminLog.Escape(name), AdminLog.Escape(request.User), request.RemoteAddress, change);
        }

        return AdminReply.Ok(new ScheduleChangeResponse(before.Name, View(before), View(after)), ScheduleJsonContext.Readable.ScheduleChangeResponse);
    }

    public AdminReply Trigger(ChangeRequest request)
    {
        var name = request.ExecutorName;
        if (AdminApi.CheckChangeRules(request, "the trigger") is { } broken)
        {
            return Refuse(request, broken.Reason, broken.Problem);
        }

        if (Find(name) is not { } status)
        {
            return Refuse(request, "not_found", UnknownSchedule(name));
        }

        var result = schedules!.TriggerNow(status.Name);
        var text = result.ToString().ToLowerInvariant();
        if (logger.IsEnabled(LogLevel.Information))
        {
            logger.ScheduleChangedByConsole(AdminLog.Escape(status.Name), AdminLog.Escape(request.User), request.RemoteAddress, "triggered now: " + text);
        }

        return AdminReply.Ok(new ScheduleTriggerResponse(status.Name, text), ScheduleJsonContext.Readable.ScheduleTriggerResponse);
    }

    /// <summary>Reads a change: any of <see cref="Fields"/>, at least one; <c>cron</c> (with an optional <c>timeZone</c>) or <c>interval</c>, not both.</summary>
    internal static (bool? Paused, RecurringSchedule? Timing, FieldErrors Errors) Parse(ReadOnlySequence<byte> body, RecurringScheduleStatus current) =>
        Parse(body, current.Schedule);

    /// <summary>Reads a change to a schedule whose timing is <paramref name="current"/> (<see langword="null"/> when it cannot be read here).</summary>
    internal static (bool? Paused, RecurringSchedule? Timing, FieldErrors Errors) Parse(ReadOnlySequence<byte> body, RecurringSchedule? current)
    {
        var (paused, timing, _, errors) = Parse(body, current, durable: false);
        return (paused, timing, errors);
    }

    /// <summary>
    /// Reads a change to a schedule whose timing is <paramref name="current"/>; a <paramref name="durable"/> schedule's
    /// change also takes <c>missedTicks</c> (<see cref="DurableScheduleApi.MissedTicks"/>).
    /// </summary>
    internal static (bool? Paused, RecurringSchedule? Timing, MissedTickPolicy? MissedTicks, FieldErrors Errors) Parse(ReadOnlySequence<byte> body, RecurringSchedule? current, bool durable)
    {
        var errors = new FieldErrors();
        var names = durable ? "paused, cron, timeZone, interval, missedTicks" : "paused, cron, timeZone, interval";
        if (body.IsEmpty)
        {
            errors[SettingsRequest.Body] = [$"The request body is missing: send a JSON object with any of {names}, such as {{\"paused\": true}} or {{\"cron\": \"0 2 * * *\", \"timeZone\": \"Europe/Berlin\"}}."];
            return (null, null, null, errors);
        }

        bool? paused = null;
        string? cron = null;
        string? zone = null;
        string? interval = null;
        MissedTickPolicy? missed = null;
        if (JsonChangeReader.ReadFields(body, durable ? DurableFields : Fields, "a schedule change takes " + names, errors, ReadField) is not { } count)
        {
            return (null, null, null, errors);
        }

        void ReadField(ref Utf8JsonReader reader, string field)
        {
            switch (field)
            {
                case Paused when reader.TokenType is JsonTokenType.True or JsonTokenType.False:
                    paused = reader.GetBoolean();
                    break;
                case Paused:
                    errors[field] = ["paused must be true or false."];
                    break;
                case DurableScheduleApi.MissedTicks:
                    missed = DurableScheduleApi.ReadMissedTicks(reader.TokenType == JsonTokenType.String ? reader.GetString() : null, reader.TokenType, errors);
                    break;
                case Cron or TimeZone or Interval when reader.TokenType == JsonTokenType.String:
                    var text = reader.GetString();
                    _ = field switch { Cron => cron = text, TimeZone => zone = text, _ => interval = text };
                    break;
                default:
                    errors[field] = [$"{field} must be a string."];
                    break;
            }
        }

        if (count == 0)
        {
            errors[SettingsRequest.Body] = [$"The request names no field: send any of {names}."];
        }

        RecurringSchedule? timing = null;
        if (interval is not null && (cron is not null || zone is not null))
        {
            errors[Interval] = ["Give either interval, or cron with an optional timeZone, not both."];
        }
        else if (interval is not null)
        {
            if (!TimeSpan.TryParse(interval, CultureInfo.InvariantCulture, out var every))
            {
                errors[Interval] = [$"interval must be a time span such as 00:05:00 (was '{SettingsRequest.Shorten(interval)}')."];
            }
            else
            {
                timing = Make(() => RecurringSchedule.Every(every), errors);
            }
        }
        else if (cron is not null || zone is not null)
        {
            var expression = cron ?? current?.CronExpression;
            if (expression is null)
            {
                errors[TimeZone] = ["timeZone applies to a cron expression; this schedule runs on an interval: give cron too."];
            }
            else
            {
                timing = Make(() => RecurringSchedule.Cron(expression, zone ?? current?.TimeZone.Id ?? "UTC"), errors);
            }
        }

        return (paused, timing, missed, errors);
    }

    internal static RecurringSchedule? Make(Func<RecurringSchedule> make, FieldErrors errors)
    {
        try
        {
            return make();
        }
        catch (ArgumentException ex)
        {
            var field = ex.ParamName is "timeZone" ? TimeZone : ex.ParamName is "interval" ? Interval : Cron;
            var message = ex.Message;
            var suffix = ex.ParamName is { } p ? $" (Parameter '{p}')" : null;
            message = suffix is not null && message.EndsWith(suffix, StringComparison.Ordinal) ? message[..^suffix.Length] : message;
            message = ex is ArgumentOutOfRangeException && message.Contains("Actual value", StringComparison.Ordinal) ? message[..message.IndexOf("Actual value", StringComparison.Ordinal)].TrimEnd() : message;
            errors[field] = [SettingsRequest.Shorten(message, 300)];
            return null;
        }
    }

    private RecurringScheduleStatus? Find(string name)
    {
        try
        {
            return schedules?.GetStatus(name);
        }
        catch (KeyNotFoundException)
        {
            return null;
        }
    }

    private AdminReply Refuse(ChangeRequest request, string reason, AdminReply problem)
    {
        logger.ScheduleChangeRefused(AdminLog.Escape(request.ExecutorName), AdminLog.Escape(request.User), request.RemoteAddress, problem.Status, reason);
        return problem;
    }

    private static AdminReply UnknownSchedule(string name) =>
        AdminReply.Problem(404, "Unknown schedule", $"No recurring schedule named '{SettingsRequest.Shorten(name)}' runs in this process.");

    internal static ScheduleView View(RecurringScheduleStatus s) =>
        new(s.Name, s.Executor, s.Schedule.ToString(), s.Schedule.CronExpression, s.Schedule.CronExpression is null ? null : s.Schedule.TimeZone.Id,
            s.Schedule.Interval?.ToString("c", CultureInfo.InvariantCulture), s.Overlap.ToString().ToLowerInvariant(), s.IsPaused, s.IsRunning,
            s.NextRunAt, s.LastScheduledAt, s.LastStartedAt, s.LastEndedAt, s.LastOutcome.ToString().ToLowerInvariant(), s.LastError,
            s.Ticks, s.Succeeded, s.Failed, s.Skipped, s.Rejected, s.Triggered);
}
