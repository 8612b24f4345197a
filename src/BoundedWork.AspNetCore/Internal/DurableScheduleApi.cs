using System.Buffers;
using System.Globalization;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The console's durable schedules (<see cref="IDurableSchedules"/>, whatever the storage), independent of the
/// transport: list them, read one, add one, change one (pause, resume, new timing, missed-tick policy), trigger one now and remove one.
/// A change meets the console's rules (<see cref="AdminApi.CheckChangeRules"/>), is read strictly (every problem named
/// against its field; a body with any problem changes nothing), is stored with the operator's identity as
/// <c>changedBy</c>, and is audited: logged with who, where from and what (event 622; refusals 623; storage failures
/// 624). These wait for the database, asynchronously.
/// </summary>
internal sealed class DurableScheduleApi(IDurableSchedules? schedules, ILogger logger)
{
    public const string Name = "name";
    public const string Queue = "queue";
    public const string MissedTicks = "missedTicks";

    /// <summary>The largest body read, as for an executor's settings.</summary>
    public const int MaxBodyBytes = SettingsRequest.MaxBodyBytes;

    private static readonly string[] s_addFields = [Name, Queue, ScheduleApi.Cron, ScheduleApi.TimeZone, ScheduleApi.Interval, MissedTicks, ScheduleApi.Paused];

    /// <summary>Gets whether a storage serves durable schedules in this process.</summary>
    public bool IsServed => schedules is not null;

    public async Task<AdminReply> ListAsync(CancellationToken cancellationToken)
    {
        if (schedules is null)
        {
            return AdminReply.Ok(new DurableScheduleListResponse([], []), ScheduleJsonContext.Readable.DurableScheduleListResponse);
        }

        try
        {
            var list = await schedules.ListAsync(cancellationToken).ConfigureAwait(false);
            return AdminReply.Ok(new DurableScheduleListResponse(schedules.Queues, [.. list.Select(View)]), ScheduleJsonContext.Readable.DurableScheduleListResponse);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Unavailable(null, "read the durable schedules", ex);
        }
    }

    public async Task<AdminReply> GetAsync(string name, CancellationToken cancellationToken)
    {
        try
        {
            return await FindAsync(name, cancellationToken).ConfigureAwait(false) is { } status
                ? AdminReply.Ok(View(status), ScheduleJsonContext.Readable.DurableScheduleView)
                : UnknownSchedule(name);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Unavailable(name, "read the schedule", ex);
        }
    }

    public async Task<AdminReply> AddAsync(ChangeRequest request, CancellationToken cancellationToken)
    {
        if (AdminApi.CheckChangeRules(request, "the schedule") is { } broken)
        {
            return Refuse(request, "(new)", broken.Reason, broken.Problem);
        }

        if (schedules is null)
        {
            return Refuse(request, "(new)", "not_served", NotServed());
        }

        var (add, errors) = request.BodyTooLarge ? (null, ChangeRequest.TooLarge(MaxBodyBytes)) : ParseAdd(request.Body, schedules.Queues);
        if (add is not { } a)
        {
            return Refuse(request, "(new)", "invalid", Invalid("The schedule is not added", errors, request.InvalidBodyStatus));
        }

        try
        {
            var added = await schedules.AddAsync(a.Name, a.Queue, a.Schedule, o =>
            {
                o.MissedTicks = a.MissedTicks;
                o.StartPaused = a.Paused;
            }, request.User, cancellationToken).ConfigureAwait(false);
            Audit(request, a.Name, $"added on queue {a.Queue}: {added.Definition}, missed ticks {added.MissedTicks}{(added.IsPaused ? ", paused" : string.Empty)}");
            return AdminReply.Ok(View(added), ScheduleJsonContext.Readable.DurableScheduleView) with { Status = 201 };
        }
        catch (ArgumentException ex)
        {
            var field = ex.ParamName is "queue" ? Queue : Name;
            return Refuse(request, a.Name, "invalid", Invalid("The schedule is not added", new FieldErrors { [field] = [Message(ex)] }));
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Refuse(request, a.Name, "unavailable", Unavailable(a.Name, "add the schedule", ex));
        }
    }

    public async Task<AdminReply> ChangeAsync(ChangeRequest request, CancellationToken cancellationToken)
    {
        var name = request.ExecutorName;
        if (AdminApi.CheckChangeRules(request, "the schedule change") is { } broken)
        {
            return Refuse(request, name, broken.Reason, broken.Problem);
        }

        try
        {
            if (await FindAsync(name, cancellationToken).ConfigureAwait(false) is not { } before)
            {
                return Refuse(request, name, "not_found", UnknownSchedule(name));
            }

            var (paused, timing, missed, errors) = request.BodyTooLarge ? (null, null, null, ChangeRequest.TooLarge(MaxBodyBytes)) : ScheduleApi.Parse(request.Body, before.Schedule, durable: true);
            if (errors.Count > 0)
            {
                return Refuse(request, name, "invalid", Invalid($"Schedule '{SettingsRequest.Shorten(name)}' is unchanged", errors, request.InvalidBodyStatus));
            }

            var after = before;
            if (timing is not null)
            {
                after = await schedules!.ChangeAsync(name, timing, request.User, cancellationToken).ConfigureAwait(false);
            }

            if (missed is { } policy)
            {
                after = await schedules!.SetMissedTicksAsync(name, policy, request.User, cancellationToken).ConfigureAwait(false);
            }

            if (paused is { } pause)
            {
                after = await schedules!.SetPausedAsync(name, pause, request.User, cancellationToken).ConfigureAwait(false);
            }

            var change = string.Join(", ", new[]
            {
                timing is null ? null : $"timing {before.Definition} -> {after.Definition}",
                missed is null ? null : $"missed ticks {before.MissedTicks} -> {after.MissedTicks}",
                paused is null ? null : $"paused {before.IsPaused} -> {after.IsPaused}",
            }.Where(static c => c is not null));
            Audit(request, name, change);
            return AdminReply.Ok(new DurableScheduleChangeResponse(before.Name, View(before), View(after)), ScheduleJsonContext.Readable.DurableScheduleChangeResponse);
        }
        catch (KeyNotFoundException)
        {
            return Refuse(request, name, "not_found", UnknownSchedule(name));
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Refuse(request, name, "unavailable", Unavailable(name, "change the schedule", ex));
        }
    }

    public async Task<AdminReply> TriggerAsync(ChangeRequest request, CancellationToken cancellationToken)
    {
        var name = request.ExecutorName;
        if (AdminApi.CheckChangeRules(request, "the trigger") is { } broken)
        {
            return Refuse(request, name, broken.Reason, broken.Problem);
        }

        if (schedules is null)
        {
            return Refuse(request, name, "not_found", UnknownSchedule(name));
        }

        try
        {
            var id = await schedules.TriggerNowAsync(name, request.User, cancellationToken).ConfigureAwait(false);
            Audit(request, name, $"triggered now (item {id})");
            return AdminReply.Ok(new DurableScheduleTriggerResponse(name, id), ScheduleJsonContext.Readable.DurableScheduleTriggerResponse);
        }
        catch (KeyNotFoundException)
        {
            return Refuse(request, name, "not_found", UnknownSchedule(name));
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Refuse(request, name, "unavailable", Unavailable(name, "trigger the schedule", ex));
        }
    }

    public async Task<AdminReply> RemoveAsync(ChangeRequest request, CancellationToken cancellationToken)
    {
        var name = request.ExecutorName;
        if (AdminApi.CheckChangeRules(request, "the removal") is { } broken)
        {
            return Refuse(request, name, broken.Reason, broken.Problem);
        }

        try
        {
            if (schedules is null || !await schedules.RemoveAsync(name, request.User, cancellationToken).ConfigureAwait(false))
            {
                return Refuse(request, name, "not_found", UnknownSchedule(name));
            }

            Audit(request, name, "removed");
            return AdminReply.Ok(new DurableScheduleRemoveResponse(name, true), ScheduleJsonContext.Readable.DurableScheduleRemoveResponse);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            return Refuse(request, name, "unavailable", Unavailable(name, "remove the schedule", ex));
        }
    }

    /// <summary>
    /// Reads a new schedule: <c>name</c>, <c>queue</c> (optional when one queue runs schedules), <c>cron</c> with an
    /// optional <c>timeZone</c> or <c>interval</c>, and optionally <c>missedTicks</c> and <c>paused</c>.
    /// </summary>
    internal static (DurableScheduleAdd? Add, FieldErrors Errors) ParseAdd(ReadOnlySequence<byte> body, IReadOnlyList<string> queues)
    {
        var errors = new FieldErrors();
        if (body.IsEmpty)
        {
            errors[SettingsRequest.Body] = ["The request body is missing: send a JSON object such as {\"name\": \"nightly\", \"queue\": \"reconciliation\", \"cron\": \"0 2 * * *\", \"timeZone\": \"Europe/Berlin\"}."];
            return (null, errors);
        }

        string? name = null, queue = null, cron = null, zone = null, interval = null, missed = null;
        var paused = false;
        if (JsonChangeReader.ReadFields(body, s_addFields, "a new schedule takes name, queue, cron, timeZone, interval, missedTicks, paused", errors, ReadField) is null)
        {
            return (null, errors);
        }

        void ReadField(ref Utf8JsonReader reader, string field)
        {
            switch (field)
            {
                case ScheduleApi.Paused when reader.TokenType is JsonTokenType.True or JsonTokenType.False:
                    paused = reader.GetBoolean();
                    break;
                case ScheduleApi.Paused:
                    errors[field] = ["paused must be true or false."];
                    break;
                case var _ when reader.TokenType == JsonTokenType.String:
                    var text = reader.GetString();
                    _ = field switch
                    {
                        Name => name = text,
                        Queue => queue = text,
                        ScheduleApi.Cron => cron = text,
                        ScheduleApi.TimeZone => zone = text,
                        ScheduleApi.Interval => interval = text,
                        _ => missed = text,
                    };
                    break;
                default:
                    errors[field] = [$"{field} must be a string."];
                    break;
            }
        }

        if (errors.Count > 0)
        {
            return (null, errors);
        }

        if (string.IsNullOrWhiteSpace(name))
        {
            errors[Name] = ["name is required: 1 to 200 characters without control characters."];
        }
        else if (name.Length > 200 || name.Any(char.IsControl))
        {
            errors[Name] = [$"name must be 1 to 200 characters without control characters (was '{SettingsRequest.Shorten(name)}')."];
        }

        if (queue is null && queues.Count == 1)
        {
            queue = queues[0];
        }

        if (string.IsNullOrWhiteSpace(queue))
        {
            errors[Queue] = [queues.Count == 0
                ? "queue is required, and no queue runs durable schedules in this process."
                : $"queue is required: one of {string.Join(", ", queues)}."];
        }
        else if (!queues.Contains(queue, StringComparer.Ordinal))
        {
            errors[Queue] = [$"Queue '{SettingsRequest.Shorten(queue)}' does not run durable schedules in this process; queues that do: {(queues.Count == 0 ? "none" : string.Join(", ", queues))}."];
        }

        RecurringSchedule? schedule = null;
        if (interval is not null && (cron is not null || zone is not null))
        {
            errors[ScheduleApi.Interval] = ["Give either interval, or cron with an optional timeZone, not both."];
        }
        else if (interval is not null)
        {
            schedule = TimeSpan.TryParse(interval, CultureInfo.InvariantCulture, out var every)
                ? ScheduleApi.Make(() => RecurringSchedule.Every(every), errors)
                : Fail(ScheduleApi.Interval, $"interval must be a time span such as 00:05:00 (was '{SettingsRequest.Shorten(interval)}').");
        }
        else if (cron is not null)
        {
            schedule = ScheduleApi.Make(() => RecurringSchedule.Cron(cron, zone ?? "UTC"), errors);
        }
        else
        {
            errors[ScheduleApi.Cron] = [zone is null ? "Give cron (with an optional timeZone) or interval." : "timeZone applies to a cron expression: give cron too."];
        }

        var policy = missed is null ? MissedTickPolicy.LatestOnce : ReadMissedTicks(missed, JsonTokenType.String, errors) ?? default;

        return errors.Count > 0 || schedule is null ? (null, errors) : (new DurableScheduleAdd(name!, queue!, schedule, policy, paused), errors);

        RecurringSchedule? Fail(string field, string message)
        {
            errors[field] = [message];
            return null;
        }
    }

    /// <summary>Reads a missed-tick policy (<c>latestOnce</c>, <c>skip</c> or <c>each</c>, any case); anything else is an error of <see cref="MissedTicks"/>.</summary>
    internal static MissedTickPolicy? ReadMissedTicks(string? text, JsonTokenType token, FieldErrors errors)
    {
        if (token != JsonTokenType.String || text is null)
        {
            errors[MissedTicks] = ["missedTicks must be latestOnce, skip or each, as a string."];
            return null;
        }

        if (text.Length == 0 || !char.IsLetter(text[0]) || !Enum.TryParse<MissedTickPolicy>(text, ignoreCase: true, out var policy) || !Enum.IsDefined(policy))
        {
            errors[MissedTicks] = [$"missedTicks must be latestOnce, skip or each (was '{SettingsRequest.Shorten(text)}')."];
            return null;
        }

        return policy;
    }

    private async Task<DurableScheduleStatus?> FindAsync(string name, CancellationToken cancellationToken) =>
        schedules is null ? null : await schedules.GetAsync(name, cancellationToken).ConfigureAwait(false);

    private void Audit(ChangeRequest request, string name, string change)
    {
        if (logger.IsEnabled(LogLevel.Information))
        {
            logger.DurableScheduleChangedByConsole(AdminLog.Escape(name), AdminLog.Escape(request.User), request.RemoteAddress, AdminLog.Escape(change));
        }
    }

    private AdminReply Refuse(ChangeRequest request, string name, string reason, AdminReply problem)
    {
        logger.DurableScheduleChangeRefused(AdminLog.Escape(name), AdminLog.Escape(request.User), request.RemoteAddress, problem.Status, reason);
        return problem;
    }

    private static string Message(ArgumentException exception)
    {
        var message = exception.Message;
        var suffix = exception.ParamName is { } p ? $" (Parameter '{p}')" : null;
        message = suffix is not null && message.EndsWith(suffix, StringComparison.Ordinal) ? message[..^suffix.Length] : message;
        return SettingsRequest.Shorten(message, 300);
    }

    private static AdminReply Invalid(string what, FieldErrors errors, int status = 400) =>
        AdminReply.Problem(status, "Invalid schedule", $"{what}: {string.Join(" ", errors.Listed.Values.SelectMany(static e => e))}", errors.Listed);

    private static AdminReply NotServed() =>
        AdminReply.Problem(404, "No durable schedules", "No queue runs durable schedules in this process (AddDurableSchedules(\"queue\") with a storage that runs them).");

    private static AdminReply UnknownSchedule(string name) =>
        AdminReply.Problem(404, "Unknown schedule", $"No durable schedule named '{SettingsRequest.Shorten(name)}' is stored for the queues of this process.");

    private AdminReply Unavailable(string? name, string what, Exception error)
    {
        if (logger.IsEnabled(LogLevel.Error))
        {
            logger.DurableScheduleStorageFailed(AdminLog.Escape(name ?? "(all)"), what, error);
        }

        return AdminReply.Problem(503, "Storage unavailable", $"Could not {what}: {SettingsRequest.Shorten(error.GetBaseException().Message, 300)}");
    }

    internal static DurableScheduleView View(DurableScheduleStatus s) =>
        new(s.Name, s.Queue, s.Definition, s.Schedule?.CronExpression, s.Schedule is { CronExpression: not null } c ? c.TimeZone.Id : null,
            s.Schedule?.Interval?.ToString("c", CultureInfo.InvariantCulture), s.DefinitionError, ToCamel(s.MissedTicks.ToString()), s.IsPaused, s.IsDefinedInCode,
            s.NextRunAt, s.LastRunAt, s.LastEnqueuedAt, s.LastItemId, s.LastOutcome ?? "none", s.Enqueued, s.Missed, s.ChangedAt, s.ChangedBy);

    private static string ToCamel(string text) => text.Length == 0 ? text : char.ToLowerInvariant(text[0]) + text[1..];
}

/// <summary>A new durable schedule as the console read it.</summary>
internal readonly record struct DurableScheduleAdd(string Name, string Queue, RecurringSchedule Schedule, MissedTickPolicy MissedTicks, bool Paused);
