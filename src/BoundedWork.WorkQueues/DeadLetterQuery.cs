namespace BoundedWork.Hosting;

/// <summary>One page of <see cref="IDeadLetterStore.ListDeadLettersAsync"/>: its size, its time window and where it starts.</summary>
public sealed record DeadLetterQuery
{
    /// <summary>The largest <see cref="Limit"/>.</summary>
    public const int MaxLimit = 500;

    /// <summary>Gets the most dead letters on the page.</summary>
    /// <value>Defaults to 50. Between 1 and <see cref="MaxLimit"/> (500).</value>
    public int Limit { get; init; } = 50;

    /// <summary>Gets the earliest time an item became a dead letter to list (inclusive).</summary>
    /// <value>Defaults to <see langword="null"/>: no lower bound.</value>
    public DateTimeOffset? Since { get; init; }

    /// <summary>Gets the time before which an item became a dead letter to list (exclusive).</summary>
    /// <value>Defaults to <see langword="null"/>: no upper bound.</value>
    public DateTimeOffset? Until { get; init; }

    /// <summary>Gets where the page starts: the <see cref="DeadLetterPage.NextCursor"/> of the page before, with the same window.</summary>
    /// <value>Defaults to <see langword="null"/>: the first page (the most recent dead letters).</value>
    public string? Cursor { get; init; }
}

/// <summary>A page of dead letters, the most recent first.</summary>
/// <param name="Items">The dead letters on the page, without their payloads.</param>
/// <param name="NextCursor">The cursor of the next page (<see cref="DeadLetterQuery.Cursor"/>); <see langword="null"/> on the last page.</param>
public sealed record DeadLetterPage(IReadOnlyList<StoredDeadLetter> Items, string? NextCursor);

/// <summary>A dead letter as the storage keeps it.</summary>
public sealed record StoredDeadLetter
{
    /// <summary>Gets the item's id.</summary>
    public required long ItemId { get; init; }

    /// <summary>Gets how many times the item was delivered, requeues included.</summary>
    public required int Attempts { get; init; }

    /// <summary>Gets why the item became a dead letter: its last error (reason, exception type and message).</summary>
    public string? LastError { get; init; }

    /// <summary>Gets when the item was enqueued.</summary>
    public required DateTimeOffset EnqueuedAt { get; init; }

    /// <summary>Gets when the item became a dead letter.</summary>
    public required DateTimeOffset DeadAt { get; init; }

    /// <summary>Gets the item's priority.</summary>
    public int Priority { get; init; }

    /// <summary>Gets the item's ordering key, if it has one.</summary>
    public string? OrderingKey { get; init; }

    /// <summary>Gets the producer's W3C traceparent stored with the item, if any.</summary>
    public string? TraceParent { get; init; }

    /// <summary>Gets the producer's W3C tracestate stored with the item, if any.</summary>
    public string? TraceState { get; init; }

    /// <summary>Gets the stored payload (JSON), possibly cut (<see cref="IsPayloadTruncated"/>); <see langword="null"/> in a list.</summary>
    public string? Payload { get; init; }

    /// <summary>Gets the length of the whole payload in characters; zero in a list.</summary>
    public int PayloadLength { get; init; }

    /// <summary>Gets a value indicating whether <see cref="Payload"/> was cut short.</summary>
    public bool IsPayloadTruncated { get; init; }
}
