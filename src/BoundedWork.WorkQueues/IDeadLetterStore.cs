namespace BoundedWork.Hosting;

/// <summary>
/// The dead letters a durable work queue keeps in its storage, to browse, requeue and purge. Storage packages register
/// one per queue (BoundedWork.PostgreSql does); the admin console's dead-letter endpoints use them. Resolve all of
/// them with <c>IEnumerable&lt;IDeadLetterStore&gt;</c>.
/// </summary>
public interface IDeadLetterStore
{
    /// <summary>Gets the name of the queue whose dead letters these are.</summary>
    string QueueName { get; }

    /// <summary>Lists the queue's dead letters, the most recent first, a page at a time (without their payloads).</summary>
    /// <param name="query">The page's size, its time window and where it starts.</param>
    /// <param name="cancellationToken">Cancels the query.</param>
    /// <returns>The page, and the cursor of the next one if there is more.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="query"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The query's limit is out of range, or its cursor is not one this store returned.</exception>
    Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default);

    /// <summary>Reads one dead letter with its payload (the stored JSON, cut after <paramref name="maxPayloadLength"/> characters).</summary>
    /// <param name="itemId">The item's id.</param>
    /// <param name="maxPayloadLength">The most characters of the payload to read; at least 1.</param>
    /// <param name="cancellationToken">Cancels the query.</param>
    /// <returns>The dead letter, or <see langword="null"/> when the queue has no dead letter with that id.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxPayloadLength"/> is below 1.</exception>
    Task<StoredDeadLetter?> GetDeadLetterAsync(long itemId, int maxPayloadLength, CancellationToken cancellationToken = default);

    /// <summary>
    /// Requeues the selected dead letters as new deliveries: each becomes ready now, keeps its id, payload, priority,
    /// ordering key and trace context, and gets the queue's retries again (its attempt numbers go on, so a handler
    /// still knows it may have run before). The consumers are woken.
    /// </summary>
    /// <param name="selection">Which dead letters.</param>
    /// <param name="cancellationToken">Cancels the update.</param>
    /// <returns>How many dead letters were requeued (ids that are not dead letters of the queue are skipped).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="selection"/> is <see langword="null"/>.</exception>
    Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default);

    /// <summary>Deletes the selected dead letters from the storage (their idempotency keys are free again).</summary>
    /// <param name="selection">Which dead letters.</param>
    /// <param name="cancellationToken">Cancels the delete.</param>
    /// <returns>How many dead letters were deleted (ids that are not dead letters of the queue are skipped).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="selection"/> is <see langword="null"/>.</exception>
    Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default);
}
