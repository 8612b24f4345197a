using System.Text.Json;
using System.Text.Json.Serialization;

namespace PaymentCallbacks.Shared;

/// <summary>
/// What <c>GET /stats/capacity</c> returns: the executor's workers and queue, the endpoints' counters, the shared
/// ThreadPool's thread count and the limited-capacity dependency's calls, in one read. The adaptive-workers
/// benchmark samples it a few times per second to draw workers, queue wait and run time over time.
/// </summary>
/// <param name="Seconds">Seconds since the server started.</param>
/// <param name="Workers">The executor's target worker count.</param>
/// <param name="LiveWorkers">The executor's live workers.</param>
/// <param name="BusyWorkers">The executor's busy workers.</param>
/// <param name="Queued">Items in the executor's queue.</param>
/// <param name="OldestQueuedMs">How long the oldest queued item has waited.</param>
/// <param name="BoundedCompleted">Side effects the bounded endpoint completed.</param>
/// <param name="BoundedRejected503">Requests the bounded endpoint refused with 503.</param>
/// <param name="NaiveCompleted">Side effects the naive (ThreadPool) endpoint completed.</param>
/// <param name="NaiveReceived">Requests the naive endpoint received.</param>
/// <param name="ThreadPoolThreads">The shared ThreadPool's threads.</param>
/// <param name="Dependency">The limited-capacity dependency, or <see langword="null"/> when the plain one runs.</param>
internal sealed record CapacityStats(
    double Seconds,
    int Workers,
    int LiveWorkers,
    int BusyWorkers,
    int Queued,
    double OldestQueuedMs,
    long BoundedCompleted,
    long BoundedRejected503,
    long NaiveCompleted,
    long NaiveReceived,
    int ThreadPoolThreads,
    DependencyStats? Dependency);

/// <summary>The limited-capacity dependency's counters.</summary>
/// <param name="Capacity">The calls it serves at once (its knee).</param>
/// <param name="InFlight">Calls in it now, served or waiting for a connection.</param>
/// <param name="PeakInFlight">The most calls in it at once so far.</param>
/// <param name="PeakServing">The most calls holding a connection at once so far (never above <paramref name="Capacity"/>).</param>
/// <param name="Calls">Calls finished so far.</param>
/// <param name="SpeedFactor">The drift's multiplier of the delay now.</param>
/// <param name="RunTimeBuckets">Cumulative call durations (<see cref="RunTimeHistogram"/>'s buckets).</param>
internal sealed record DependencyStats(int Capacity, int InFlight, int PeakInFlight, int PeakServing, long Calls, double SpeedFactor, long[] RunTimeBuckets);

/// <summary>Source-generated JSON for <see cref="CapacityStats"/>.</summary>
[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(CapacityStats))]
internal sealed partial class CapacityJson : JsonSerializerContext;
