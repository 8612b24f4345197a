namespace PaymentCallbacks.Server;

/// <summary>Requests received and side effects completed by one endpoint.</summary>
internal sealed class EndpointCounter
{
    private long _received;
    private long _completed;
    private long _rejected;

    /// <summary>Gets the requests received.</summary>
    public long Received => Volatile.Read(ref _received);

    /// <summary>Gets the side effects completed.</summary>
    public long Completed => Volatile.Read(ref _completed);

    /// <summary>Gets the requests refused with 503 (the bounded endpoint only).</summary>
    public long Rejected => Volatile.Read(ref _rejected);

    /// <summary>Counts a request.</summary>
    public void OnReceived() => Interlocked.Increment(ref _received);

    /// <summary>Counts a completed side effect.</summary>
    public void OnCompleted() => Interlocked.Increment(ref _completed);

    /// <summary>Counts a 503.</summary>
    public void OnRejected() => Interlocked.Increment(ref _rejected);
}

/// <summary>The counters of the three callback endpoints.</summary>
internal sealed class CallbackCounters
{
    /// <summary>Gets <c>/callbacks/naive</c>'s counters.</summary>
    public EndpointCounter Naive { get; } = new();

    /// <summary>Gets <c>/callbacks/naive-sync</c>'s counters.</summary>
    public EndpointCounter NaiveSync { get; } = new();

    /// <summary>Gets <c>/callbacks/bounded</c>'s counters.</summary>
    public EndpointCounter Bounded { get; } = new();
}
