namespace PaymentCallbacks.Shared;

/// <summary>
/// The incident replay: the bounded endpoint under load with too few workers, then a resize through the admin API.
/// Times are from the start of the load; "after" durations are from the moment the resize was requested.
/// </summary>
internal sealed record ReplayReport(
    int WorkersBefore,
    int WorkersAfter,
    int QueueCapacity,
    double ResizeRequestedAtSeconds,
    int ResizeStatusCode,
    double ResizeAnsweredAfterMs,
    double NewWorkersBusyAfterMs,
    double BacklogDrainedAfterMs,
    long PeakBacklog,
    double GoodputBefore,
    double GoodputAfter,
    long Rejected503BeforeResize,
    long Rejected503AfterDrain,
    bool LedgerBalanced,
    LoadReport Load);

/// <summary>One sample of the replay's time series.</summary>
internal sealed record ReplaySample(double Seconds, long Queued, long Completed, long Rejected503, int Workers, int BusyWorkers, double Goodput);
