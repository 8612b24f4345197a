using System.Text.Encodings.Web;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace BoundedWork.AspNetCore.Internal;

// The console's JSON documents. Field names are camelCase and stable; new fields may be added, none renamed or
// removed. Every document is an object at the top, so fields can be added to it too.

/// <summary>GET {prefix}/executors.</summary>
internal sealed record ExecutorListResponse(DateTimeOffset Timestamp, IReadOnlyList<ExecutorResponse> Executors);

/// <summary>One executor: GET {prefix}/executors/{name}, and each entry of the list.</summary>
internal sealed record ExecutorResponse(
    string Name,
    bool IsShutdown,
    WorkersView Workers,
    QueueView Queue,
    SettingsView Settings,
    CountersView Counters,
    RatesView Rates,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] HistoryView? History,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyList<RunningItemView>? Running,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] StorageView? Storage = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] RateLimitView? RateLimit = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] AdaptiveView? Adaptive = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] PauseView? Pause = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyList<TenantView>? Tenants = null);

/// <summary>
/// One of the busiest tenants under fair share (<see cref="BoundedExecutor.GetTenantStatistics(int)"/>), busiest first:
/// its weight, items queued and running now, its outcomes so far, and its average queue wait. <c>(other)</c> counts the
/// tenants past the executor's series limit together.
/// </summary>
internal sealed record TenantView(string Tenant, int Weight, int Queued, int Running, long Completed, long Failed, long Refused, double AverageWaitMs);

/// <summary>
/// Whether the executor is paused (its workers start no new item), why, since when and until when (<see langword="null"/>:
/// until resumed).
/// </summary>
internal sealed record PauseView(bool Paused, string? Reason, DateTimeOffset? Since, DateTimeOffset? Until);

/// <summary>The answer to a pause or a resume: the executor's pause after it, and whether the request changed it.</summary>
internal sealed record PauseResponse(string Executor, PauseView Pause, bool Changed);

/// <summary>
/// The rate limit: <c>Kind</c> is <c>none</c>, <c>permitsPerSecond</c> (the executor's token bucket, set with
/// <c>permitsPerSecond</c> and <c>permitBurst</c>) or <c>custom</c> (a limiter the application passed, <c>Limiter</c> its
/// type); <c>WaitingWorkers</c> wait for a permit now (their items still queued), <c>PermitsRefused</c> counts the waits
/// and <c>WaitTimeMs</c> their total time.
/// </summary>
internal sealed record RateLimitView(
    string Kind,
    string? Limiter,
    int PermitsPerSecond,
    int PermitBurst,
    int WaitingWorkers,
    long PermitsAcquired,
    long PermitsRefused,
    double WaitTimeMs);

/// <summary>The adaptive mode of one executor: its bounds, the pin, the run-time baseline and the last decisions, oldest first.</summary>
internal sealed record AdaptiveView(
    string Mode,
    int MinWorkers,
    int MaxWorkers,
    bool Pinned,
    DateTimeOffset? PinnedUntil,
    double? RunTimeBaselineMs,
    long DecisionCount,
    IReadOnlyList<DecisionView> Decisions);

/// <summary>One entry of the worker-count decision log.</summary>
internal sealed record DecisionView(
    DateTimeOffset Time,
    int OldCount,
    int NewCount,
    string Rule,
    bool Applied,
    double MinQueueWaitMs,
    int QueueLength,
    double CompletedPerSecond,
    double? RunTimeMs,
    string Description);

/// <summary>
/// The durable storage of a typed work queue (only for queues that have one): what the node last read from the database
/// (every node's items, not only this node's), whether this node reaches it, and whether the console serves the
/// queue's dead letters (<c>GET {prefix}/queues/{name}/dead-letters</c>), its cluster (<c>GET {prefix}/queues/{name}/cluster</c>) and its stored items (<c>GET {prefix}/queues/{name}/items</c>).
/// </summary>
internal sealed record StorageView(
    string Kind,
    bool Available,
    string? LastError,
    long Ready,
    long Scheduled,
    long Running,
    long DeadLettered,
    long Completed,
    double OldestReadyAgeMs,
    DateTimeOffset? ReadAt,
    long Cancelled = 0,
    bool DeadLetters = false,
    bool Cluster = false,
    bool Items = false,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyList<StoredTenantView>? Tenants = null);

/// <summary>
/// One of a durable queue's busiest tenants by stored items (only while some ready or running item has a tenant), as
/// the node last read them: ready and running across every node, and this node's completed, failed (a retry stored) and
/// dead-lettered deliveries of the tenant; <c>(other)</c> counts the tenants past the storage's series limit together.
/// </summary>
internal sealed record StoredTenantView(string Tenant, long Ready, long Running, long Completed, long Failed, long DeadLettered);

/// <summary>
/// An item running on a worker now (only in GET {prefix}/executors/{name}): the worker's thread name, how long the item
/// has run, and what it runs (<see cref="BoundedWork.WorkItem.Description"/>: the type and method its delegate calls,
/// lambdas named after the method that declares them; never its state, which may hold personal data).
/// </summary>
internal sealed record RunningItemView(string Worker, double ElapsedMs, string Method);

/// <summary>Worker counts; <c>Slow</c> is how many run an item for longer than the slow-item threshold now.</summary>
internal sealed record WorkersView(int Target, int Live, int Busy, int Peak, int Max, int Slow);

/// <summary>The queue; <c>WaitingProducers</c> are producers blocked or awaiting room (Wait-policy submits, channel writers in WaitToWriteAsync).</summary>
internal sealed record QueueView(int Length, int Capacity, double OldestItemAgeMs, int WaitingProducers);

/// <summary>The settings that PATCH changes, under the same field names ("infinite" for no limit, or off).</summary>
internal sealed record SettingsView(int Workers, int QueueCapacity, string RejectionPolicy, string WaitTimeout, string SlowItemThreshold, string QueueWaitThreshold, int PermitsPerSecond = 0, int PermitBurst = 1, string? AdaptiveMode = null, int? AdaptiveMinWorkers = null, int? AdaptiveMaxWorkers = null);

/// <summary>
/// The counters of one snapshot: <c>Submitted</c> = queue length + <c>Starting</c> + <c>Running</c> + every outcome, and
/// <c>Running</c> = busy workers + <c>RunningOnCallers</c>.
/// </summary>
internal sealed record CountersView(
    long Submitted,
    long Completed,
    long Failed,
    long Cancelled,
    long Rejected,
    long Discarded,
    long Abandoned,
    long CallerRuns,
    long CallbackFailures,
    long ThreadPoolBlockingWaits,
    long Running,
    long SlowItemsReported,
    long LongQueueWaitsReported,
    long WorkersReplaced,
    long Starting,
    long RunningOnCallers);

/// <summary>Items per second over the last <see cref="WindowSeconds"/> (up to a minute); null until a second of history exists.</summary>
internal sealed record RatesView(
    double WindowSeconds,
    double? Submitted,
    double? Completed,
    double? Failed,
    double? Cancelled,
    double? Rejected,
    double? Discarded);

/// <summary>
/// One value per sample, oldest first, one sample per <see cref="IntervalSeconds"/>. For an executor whose adaptive mode
/// is not Off, also what the dashboard's adaptive chart draws: the target worker count, the oldest queued item's age
/// (the longest wait in the queue then) and the items' mean run time since the sample before (busy workers over items
/// finished per second, Little's law, as the adaptive mode measures it; <see langword="null"/> when none finished).
/// </summary>
internal sealed record HistoryView(
    double IntervalSeconds,
    IReadOnlyList<int> QueueLength,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyList<int>? Workers = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyList<double>? QueueWaitMs = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] IReadOnlyList<double?>? RunTimeMs = null);

/// <summary>PUT {prefix}/executors/{name}/workers and PATCH {prefix}/executors/{name}.</summary>
internal sealed record ReconfigurationResponse(string Name, SettingsView Previous, SettingsView Current, WorkersView Workers);

/// <summary>GET {prefix}/threadpool.</summary>
internal sealed record ThreadPoolResponse(
    DateTimeOffset Timestamp,
    int ThreadCount,
    long PendingWorkItemCount,
    long CompletedWorkItemCount,
    double? CompletedPerSecond,
    int MinThreads,
    int MaxThreads,
    int MinCompletionPortThreads,
    int MaxCompletionPortThreads,
    double? QueueLatencyMs,
    bool IsStarved,
    double StarvationThresholdMs,
    string? Starvation,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] ThreadPoolHistoryView? History,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] ThreadPoolDiagnosisView? LastDiagnosis = null,
    [property: JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] string? DiagnosisLimitation = null);

/// <summary>The last diagnosis of the app's starvation sentinel (BoundedWork.Diagnostics), when it runs.</summary>
internal sealed record ThreadPoolDiagnosisView(
    DateTimeOffset DiagnosedAt,
    bool IsStarved,
    string Verdict,
    IReadOnlyList<string> BlockingSites,
    IReadOnlyList<string> Evidence,
    IReadOnlyList<string> Advice);

internal sealed record ThreadPoolHistoryView(double IntervalSeconds, IReadOnlyList<long> PendingWorkItemCount, IReadOnlyList<int> ThreadCount);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(ExecutorListResponse))]
[JsonSerializable(typeof(ExecutorResponse))]
[JsonSerializable(typeof(ReconfigurationResponse))]
[JsonSerializable(typeof(PauseResponse))]
[JsonSerializable(typeof(ThreadPoolResponse))]
[JsonSerializable(typeof(ProblemDocument))]
[JsonSerializable(typeof(DeadLetterListResponse))]
[JsonSerializable(typeof(DeadLetterResponse))]
[JsonSerializable(typeof(DeadLetterChangeResponse))]
internal sealed partial class AdminJsonContext : JsonSerializerContext
{
    /// <summary>
    /// The context the console writes with: web defaults, and quotes and apostrophes in messages left readable
    /// (the documents are served as JSON, never embedded in HTML).
    /// </summary>
    public static AdminJsonContext Readable { get; } = new(new JsonSerializerOptions(JsonSerializerDefaults.Web) { Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping });
}
