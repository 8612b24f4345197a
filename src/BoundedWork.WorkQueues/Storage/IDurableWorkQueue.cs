using System.Diagnostics.CodeAnalysis;

namespace BoundedWork.Hosting;

/// <summary>
/// A typed work queue kept in durable storage (for example <c>.UsePostgreSql(...)</c>, or any
/// <see cref="IWorkQueueStorage{T}"/>): the <see cref="IWorkQueue{T}"/> producers already use, plus item ids,
/// idempotent, delayed, prioritised and bulk enqueues, cancellation by id, statistics read on demand, and the dead
/// letters kept in the storage (<see cref="IDeadLetterStore"/>). Inject it, or
/// <c>[FromKeyedServices("name")] IDurableWorkQueue&lt;T&gt;</c>; storage packages may offer a richer interface (for
/// example enqueueing inside the caller's own transaction).
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>
/// The storage is the queue: an enqueue is one write, never refused for room (the executor's capacity bounds what a
/// node claims, not what is stored). Delivery is at least once; an item runs again when the node that held it stops
/// without writing its outcome. See the durable storage guide (docs/storage.md) for the guarantees in full.
/// </remarks>
[SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "A work queue is what it is; the name is the feature's.")]
public interface IDurableWorkQueue<T> : IWorkQueue<T>, IDeadLetterStore
{
    /// <summary>Enqueues an item in one write of its own and returns its id.</summary>
    /// <param name="item">The item.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The item's id.</returns>
    Task<long> EnqueueWithIdAsync(T item, CancellationToken cancellationToken = default);

    /// <summary>
    /// Enqueues an item in one write of its own unless an item with the same idempotency key is stored in the queue.
    /// Obsolete: say the key with <see cref="EnqueueOptions.IdempotencyKey"/>, which has the rules.
    /// </summary>
    /// <param name="item">The item; discarded when the key is already taken.</param>
    /// <param name="idempotencyKey">A key of the caller's choosing, as <see cref="EnqueueOptions.IdempotencyKey"/> describes.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The id of the item that holds the key, and whether it was already stored.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="idempotencyKey"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="idempotencyKey"/> is empty, longer than 256 characters, contains a NUL character, or is not valid UTF-16 (a lone surrogate).</exception>
    /// <remarks>A storage need not implement it: by default it calls <see cref="EnqueueAsync(T, EnqueueOptions, CancellationToken)"/> with the key.</remarks>
    [Obsolete("Say the key with EnqueueOptions: EnqueueAsync(item, new EnqueueOptions { IdempotencyKey = key }).")]
    Task<EnqueueResult> EnqueueIdempotentAsync(T item, string idempotencyKey, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(idempotencyKey);
        return EnqueueAsync(item, new EnqueueOptions { IdempotencyKey = idempotencyKey }, cancellationToken);
    }

    /// <summary>
    /// Enqueues an item in one write of its own as <paramref name="options"/> say: delayed or at a time
    /// (<see cref="EnqueueOptions.Delay"/>, <see cref="EnqueueOptions.RunAt"/>), with a priority
    /// (<see cref="EnqueueOptions.Priority"/>), and with an idempotency key (<see cref="EnqueueOptions.IdempotencyKey"/>):
    /// the one way to say each of them.
    /// </summary>
    /// <param name="item">The item; discarded when its idempotency key is already taken.</param>
    /// <param name="options">When the item may run, its priority and its idempotency key.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The item's id, and whether its key was already taken.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">An option is invalid (the message names it).</exception>
    Task<EnqueueResult> EnqueueAsync(T item, EnqueueOptions options, CancellationToken cancellationToken = default);

    /// <summary>
    /// Enqueues many items in one statement, all or none (their payloads and ordering keys sent as arrays, one round
    /// trip), and wakes the consumers once.
    /// </summary>
    /// <param name="items">The items, in the order their ids are assigned (within a priority, the order they run in).</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The items' ids, in the order of <paramref name="items"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="items"/> is <see langword="null"/>.</exception>
    Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, CancellationToken cancellationToken = default);

    /// <summary>Enqueues many items in one statement, all or none, every item as <paramref name="options"/> say.</summary>
    /// <param name="items">The items, in the order their ids are assigned.</param>
    /// <param name="options">When the items may run and their priority; an idempotency key is refused.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The items' ids, in the order of <paramref name="items"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="items"/> or <paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">An option is invalid, or an idempotency key is given (the message names it).</exception>
    Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, EnqueueOptions options, CancellationToken cancellationToken = default);

    /// <summary>
    /// Cancels a stored item of this queue by its id. A ready or scheduled item becomes cancelled (it will not run,
    /// and the next item of its ordering key may); for a running item, the cancellation token its handler got fires
    /// on whichever node runs it (for PostgreSQL, told through <c>LISTEN/NOTIFY</c> at once, or by its next lease
    /// renewal if that node was not listening). Finished items are left as they are, and the result says so.
    /// </summary>
    /// <param name="itemId">The item's id, as the enqueue returned it.</param>
    /// <param name="cancellationToken">Cancels the call (the cancellation may still have been stored).</param>
    /// <returns>What the item's state was, and so what the call did.</returns>
    Task<CancelResult> CancelAsync(long itemId, CancellationToken cancellationToken = default);

    /// <summary>Reads the queue's statistics from the storage now (the <see cref="IWorkQueueStorage"/> view is refreshed periodically).</summary>
    /// <param name="cancellationToken">Cancels the query.</param>
    /// <returns>The statistics.</returns>
    Task<WorkQueueStorageStatistics> ReadStatisticsAsync(CancellationToken cancellationToken = default);
}
