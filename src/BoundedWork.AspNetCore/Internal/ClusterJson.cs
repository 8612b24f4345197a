using System.Text.Encodings.Web;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace BoundedWork.AspNetCore.Internal;

// The cluster documents. Field names are camelCase and stable, as for every console document. Limits that are not
// set are written as null ("none"), never left out.

/// <summary>
/// GET {prefix}/queues/{name}/cluster: a durable queue's cluster as its storage describes it now: the fleet-wide
/// settings, the limits and their use, the live nodes (ordered by name), and every node's stored items by state.
/// </summary>
internal sealed record ClusterResponse(
    string Queue,
    DateTimeOffset ReadAt,
    ClusterSettingsView Settings,
    ClusterLimitsView Limits,
    IReadOnlyList<ClusterNodeView> Nodes,
    ClusterStorageView Storage,
    QueuePausesView? Pauses = null);

/// <summary>A durable queue's fleet-wide pauses in force: the queue's (null: not paused) and its paused ordering keys.</summary>
internal sealed record QueuePausesView(QueuePauseView? Queue, IReadOnlyList<QueuePauseView> Keys);

/// <summary>One fleet-wide pause: the key (null: the whole queue), why, since and until when (null: until resumed), by whom.</summary>
internal sealed record QueuePauseView(string? Key, string Reason, DateTimeOffset Since, DateTimeOffset? Until, string? By);

/// <summary>POST {prefix}/queues/{name}/pause and /resume: what the request did, and the pauses in force after it.</summary>
internal sealed record QueuePauseResponse(string Queue, bool Changed, QueuePauseView? Pause, QueuePausesView Pauses);

/// <summary>
/// The fleet-wide settings, under the names PATCH takes, with their version and who changed them last. <c>FairShare</c>
/// is null while fair share across tenants is off.
/// </summary>
internal sealed record ClusterSettingsView(
    int? WorkersPerNode,
    int? MaxRunning,
    int MaxRunningPerKey,
    double? StartsPerSecond,
    int? StartBurst,
    long Version,
    DateTimeOffset? UpdatedAt,
    string? UpdatedBy,
    FairShareView? FairShare);

/// <summary>
/// Fair share across tenants, fleet-wide, under the names PATCH takes in <c>fairShare</c>: the default weight, the
/// tenants with a weight of their own (ordered by name), the most items of one tenant running at once (null: no bound),
/// the most starts of one tenant per second (null: no limit) and its burst (null: one second's worth).
/// </summary>
internal sealed record FairShareView(int DefaultWeight, IReadOnlyDictionary<string, int> TenantWeights, int? MaxRunningPerTenant, double? StartsPerSecondPerTenant, int? StartsBurstPerTenant);

/// <summary>
/// The cluster limits and their use: <c>Running</c> (stored items in state running) of <c>MaxRunning</c> (null: no
/// limit), split into <c>HandlersRunning</c> (handlers started and not ended, as the nodes' heartbeats reported) and
/// <c>ReservedOrSettling</c> (the rest, never negative: held in a node's reserve or with their outcome being written),
/// starts in the last second against <c>StartsPerSecond</c>, and the items a limit holds back now and how long the
/// oldest has waited.
/// </summary>
internal sealed record ClusterLimitsView(
    long Running,
    long HandlersRunning,
    long ReservedOrSettling,
    int? MaxRunning,
    int MaxRunningPerKey,
    double StartsLastSecond,
    double? StartsPerSecond,
    int? StartBurst,
    long WaitingForPermit,
    double OldestPermitWaitMs);

/// <summary>One live node, as its latest heartbeat described it.</summary>
internal sealed record ClusterNodeView(
    string Name,
    string Host,
    int ProcessId,
    string Version,
    DateTimeOffset StartedAt,
    DateTimeOffset LastSeen,
    int Workers,
    long InFlight,
    int HandlersRunning,
    long Completed,
    long Failed,
    long SettingsVersion,
    bool PinnedLocally);

/// <summary>The queue's stored items by state, across every node.</summary>
internal sealed record ClusterStorageView(
    long Ready,
    long Scheduled,
    long Running,
    long DeadLettered,
    long Completed,
    long Cancelled,
    double OldestReadyAgeMs);

/// <summary>PATCH {prefix}/queues/{name}/cluster: the settings before and after the change (its new version included).</summary>
internal sealed record ClusterChangeResponse(string Queue, ClusterSettingsView Previous, ClusterSettingsView Current);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(ClusterResponse))]
[JsonSerializable(typeof(ClusterChangeResponse))]
[JsonSerializable(typeof(QueuePauseResponse))]
[JsonSerializable(typeof(QueuePausesView))]
internal sealed partial class ClusterJsonContext : JsonSerializerContext
{
    /// <summary>The console's writing options (<see cref="AdminJsonContext.Readable"/>) for the cluster documents.</summary>
    public static ClusterJsonContext Readable { get; } = new(new JsonSerializerOptions(JsonSerializerDefaults.Web) { Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping });
}
