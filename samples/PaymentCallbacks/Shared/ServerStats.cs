namespace PaymentCallbacks.Shared;

/// <summary>What <c>GET /stats</c> returns: one read of every counter the benchmark reports.</summary>
internal sealed record ServerStats(
    double UptimeSeconds,
    SideEffectSettings SideEffect,
    EndpointStats Naive,
    EndpointStats NaiveSync,
    BoundedStats Bounded,
    ThreadPoolStats ThreadPool,
    ProcessStats Process);

/// <summary>The slow dependency's settings the server runs with.</summary>
internal sealed record SideEffectSettings(int MinDelayMs, int MaxDelayMs, int CpuIterations);

/// <summary>
/// A naive endpoint's ledger. <see cref="InFlight"/> is received minus completed: side effects queued on the
/// ThreadPool or running. Nothing bounds it and nothing reports it unless you count it yourself.
/// </summary>
internal sealed record EndpointStats(long Received, long Completed, long InFlight);

/// <summary>
/// The bounded endpoint's ledger, from the endpoint's own counters and one executor statistics snapshot.
/// Received = Rejected503 + Accepted; Accepted = Completed + Failed + Queued + Running + HandedBack.
/// </summary>
internal sealed record BoundedStats(
    long Received,
    long Accepted,
    long Rejected503,
    long Completed,
    long Failed,
    long Queued,
    long Running,
    long HandedBack,
    int Workers,
    int BusyWorkers,
    int QueueCapacity,
    bool FlowExecutionContext,
    bool LedgerBalanced);

/// <summary>
/// The shared ThreadPool, sampled once per sampling interval by a dedicated thread. <see cref="QueueDelayMs"/> is
/// how long the latest probe item waited in the pool's queue before it ran (or has waited so far, if it has not).
/// Peaks are since start or the last <c>POST /stats/reset-peaks</c>.
/// </summary>
internal sealed record ThreadPoolStats(
    int Threads,
    long PendingItems,
    double QueueDelayMs,
    int PeakThreads,
    long PeakPendingItems,
    double PeakQueueDelayMs,
    int Samples);

/// <summary>Process memory and GC figures.</summary>
internal sealed record ProcessStats(
    long GcHeapBytes,
    long WorkingSetBytes,
    long PrivateBytes,
    int ThreadCount,
    int Gen2Collections,
    double GcPauseMs);
