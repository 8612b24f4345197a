using System.Text.Encodings.Web;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace BoundedWork.AspNetCore.Internal;

// The in-memory schedules' documents. Field names are camelCase and stable, as for every console document.

/// <summary>GET {prefix}/schedules: every in-memory schedule of the process, in registration order.</summary>
internal sealed record ScheduleListResponse(IReadOnlyList<ScheduleView> Schedules);

/// <summary>
/// One schedule: its timing (<c>cron</c> and <c>timeZone</c>, or <c>interval</c>), executor and overlap policy, state,
/// next and last run, last outcome (<c>none</c>, <c>succeeded</c>, <c>failed</c>, <c>rejected</c>) and error, and its
/// counters since the process started.
/// </summary>
internal sealed record ScheduleView(
    string Name,
    string Executor,
    string Schedule,
    string? Cron,
    string? TimeZone,
    string? Interval,
    string Overlap,
    bool Paused,
    bool Running,
    DateTimeOffset? NextRunAt,
    DateTimeOffset? LastScheduledAt,
    DateTimeOffset? LastStartedAt,
    DateTimeOffset? LastEndedAt,
    string LastOutcome,
    string? LastError,
    long Ticks,
    long Succeeded,
    long Failed,
    long Skipped,
    long Rejected,
    long Triggered);

/// <summary>PATCH {prefix}/schedules/{name}: the schedule before and after the change.</summary>
internal sealed record ScheduleChangeResponse(string Name, ScheduleView Previous, ScheduleView Current);

/// <summary>POST {prefix}/schedules/{name}/trigger: what the run did (<c>started</c>, <c>queued</c>, <c>skipped</c>, <c>rejected</c>).</summary>
internal sealed record ScheduleTriggerResponse(string Name, string Result);

/// <summary>GET {prefix}/durable-schedules: the queues that run durable schedules here, and every stored schedule of them.</summary>
internal sealed record DurableScheduleListResponse(IReadOnlyList<string> Queues, IReadOnlyList<DurableScheduleView> Schedules);

/// <summary>
/// One durable schedule as stored: its timing (<c>cron</c> and <c>timeZone</c>, or <c>interval</c>; <c>definition</c>
/// as text, with <c>definitionError</c> when this node cannot read it), missed-tick policy, state, next and last run,
/// the last item and its state (<c>lastOutcome</c>: <c>none</c>, <c>ready</c>, <c>scheduled</c>, <c>running</c>,
/// <c>completed</c>, <c>dead</c>, <c>cancelled</c>, <c>gone</c>), counts, and who changed it last.
/// </summary>
internal sealed record DurableScheduleView(
    string Name,
    string Queue,
    string Definition,
    string? Cron,
    string? TimeZone,
    string? Interval,
    string? DefinitionError,
    string MissedTicks,
    bool Paused,
    bool DefinedInCode,
    DateTimeOffset? NextRunAt,
    DateTimeOffset? LastRunAt,
    DateTimeOffset? LastEnqueuedAt,
    long? LastItemId,
    string LastOutcome,
    long Enqueued,
    long Missed,
    DateTimeOffset ChangedAt,
    string? ChangedBy);

/// <summary>PATCH {prefix}/durable-schedules/{name}: the schedule before and after the change.</summary>
internal sealed record DurableScheduleChangeResponse(string Name, DurableScheduleView Previous, DurableScheduleView Current);

/// <summary>POST {prefix}/durable-schedules/{name}/trigger: the id of the item enqueued.</summary>
internal sealed record DurableScheduleTriggerResponse(string Name, long ItemId);

/// <summary>DELETE {prefix}/durable-schedules/{name}.</summary>
internal sealed record DurableScheduleRemoveResponse(string Name, bool Removed);

[JsonSerializable(typeof(DurableScheduleListResponse))]
[JsonSerializable(typeof(DurableScheduleView))]
[JsonSerializable(typeof(DurableScheduleChangeResponse))]
[JsonSerializable(typeof(DurableScheduleTriggerResponse))]
[JsonSerializable(typeof(DurableScheduleRemoveResponse))]
[JsonSerializable(typeof(ScheduleListResponse))]
[JsonSerializable(typeof(ScheduleView))]
[JsonSerializable(typeof(ScheduleChangeResponse))]
[JsonSerializable(typeof(ScheduleTriggerResponse))]
internal sealed partial class ScheduleJsonContext : JsonSerializerContext
{
    /// <summary>The console's writing options (<see cref="AdminJsonContext.Readable"/>) for the schedule documents.</summary>
    public static ScheduleJsonContext Readable { get; } = new(new JsonSerializerOptions(JsonSerializerDefaults.Web) { Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping });
}
