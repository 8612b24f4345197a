namespace PaymentCallbacks.Shared;

/// <summary>
/// The outcome of one open-loop run. Latencies are measured from each request's intended send time, so a server
/// that stalls is charged for the whole time the caller waited, queueing in the client included.
/// </summary>
internal sealed record LoadReport(
    string Url,
    double TargetRate,
    double DurationSeconds,
    long Sent,
    long Ok,
    long Status503,
    long OtherStatus,
    long Errors,
    long Unfinished,
    double P50Ms,
    double P90Ms,
    double P99Ms,
    double MaxMs)
{
    /// <summary>Gets the requests answered with 2xx per second of the run.</summary>
    public double OkPerSecond => DurationSeconds > 0 ? Ok / DurationSeconds : 0;
}
