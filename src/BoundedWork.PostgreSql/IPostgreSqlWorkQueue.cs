using System.Diagnostics.CodeAnalysis;
using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql;

/// <summary>
/// A typed work queue stored in PostgreSQL (<c>services.AddWorkQueue&lt;T, THandler&gt;(name).UsePostgreSql(...)</c>):
/// the <see cref="IWorkQueue{T}"/> producers already use, plus enqueueing inside the caller's own transaction,
/// delayed and prioritised items, bulk enqueue, cancellation by id, and the dead letters kept in the table
/// (<see cref="IDeadLetterStore"/>: list, read, requeue, purge), and the search over every stored item with its bulk
/// actions (<see cref="IStoredItemSearch"/>). Inject it
/// (or <c>[FromKeyedServices("name")] IPostgreSqlWorkQueue&lt;T&gt;</c>).
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>
/// <para>
/// The database is the queue: an enqueue is one insert, never refused for room (the executor's capacity bounds what a
/// node claims, not what is stored). <see cref="IWorkQueue{T}.EnqueueAsync"/> throws the database's exception when the
/// insert fails, and the caller still holds the item; <see cref="IWorkQueue{T}.TryEnqueue"/> inserts synchronously and,
/// on failure, returns <see langword="false"/> and hands the item to the dead-letter handlers.
/// </para>
/// <para>
/// An exception thrown while the insert (or the caller's transaction) commits, a lost connection or a server restart,
/// leaves the outcome unknown: the item may be stored. Retry with the same <see cref="EnqueueOptions.IdempotencyKey"/>,
/// and the item is stored once.
/// </para>
/// <para>
/// The enqueues in the caller's transaction or on its connection are one small grid: one item
/// (<c>EnqueueAsync</c>) or many (<c>EnqueueManyAsync</c>); in the caller's <see cref="NpgsqlTransaction"/> or on its
/// <see cref="NpgsqlConnection"/>; with <see cref="EnqueueOptions"/> (a delay or a time, a priority, an idempotency
/// key: every option is said there and only there) or without. The enqueues in a write of the queue's own are those
/// of <see cref="IDurableWorkQueue{T}"/>.
/// </para>
/// <para>Delivery is at least once: see docs/durable-queues.md for what a crash, a restart or a lost connection does.</para>
/// </remarks>
[SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "A work queue is what it is; the name is the feature's.")]
public interface IPostgreSqlWorkQueue<T> : IDurableWorkQueue<T>, IStoredItemSearch
{
    /// <summary>
    /// Enqueues an item inside the caller's transaction (the outbox pattern): the item exists, and wakes the consumers,
    /// only if the transaction commits; rolled back, nothing was enqueued.
    /// </summary>
    /// <param name="item">The item.</param>
    /// <param name="transaction">The caller's open transaction; the queue's schema must be reachable on its connection's database.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The item's id (its <see cref="WorkItemContext.ItemId"/> once handled).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="transaction"/> is <see langword="null"/>.</exception>
    /// <exception cref="InvalidOperationException">The transaction is already committed or rolled back.</exception>
    Task<long> EnqueueAsync(T item, NpgsqlTransaction transaction, CancellationToken cancellationToken = default);

    /// <summary>
    /// Enqueues an item on the caller's open connection: inside the transaction in progress on it, if any (the item
    /// commits or rolls back with it), else committed at once.
    /// </summary>
    /// <param name="item">The item.</param>
    /// <param name="connection">The caller's open connection.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The item's id.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="connection"/> is <see langword="null"/>.</exception>
    Task<long> EnqueueAsync(T item, NpgsqlConnection connection, CancellationToken cancellationToken = default);

    /// <summary>
    /// Obsolete: say the key with <see cref="EnqueueOptions.IdempotencyKey"/>,
    /// <c>EnqueueAsync(item, new EnqueueOptions { IdempotencyKey = key }, transaction)</c>, which behaves the same.
    /// Enqueues an item inside the caller's transaction unless an item with the same idempotency key is stored in the
    /// queue (committed, or inserted earlier in this transaction). A transaction that enqueues the same key and has not
    /// committed yet makes this call wait for it: if it commits, this is a duplicate; if it rolls back, this call
    /// stores the item. Under <c>REPEATABLE READ</c> or <c>SERIALIZABLE</c>, a key committed by a concurrent transaction
    /// that this transaction's snapshot cannot see fails with a serialization error (SQLSTATE 40001): retry the
    /// transaction.
    /// </summary>
    /// <param name="item">The item; discarded when the key is already taken.</param>
    /// <param name="idempotencyKey">The caller's key, as <see cref="EnqueueOptions.IdempotencyKey"/> describes.</param>
    /// <param name="transaction">The caller's open transaction; the queue's schema must be reachable on its connection's database.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The id of the item that holds the key, and whether it was already stored.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="idempotencyKey"/> or <paramref name="transaction"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="idempotencyKey"/> is empty, longer than 256 characters, contains a NUL character, or is not valid UTF-16 (a lone surrogate).</exception>
    /// <exception cref="InvalidOperationException">The transaction is already committed or rolled back.</exception>
    [Obsolete("Say the key with EnqueueOptions: EnqueueAsync(item, new EnqueueOptions { IdempotencyKey = key }, transaction).")]
    Task<EnqueueResult> EnqueueIdempotentAsync(T item, string idempotencyKey, NpgsqlTransaction transaction, CancellationToken cancellationToken = default);

    /// <summary>
    /// Obsolete: say the key with <see cref="EnqueueOptions.IdempotencyKey"/>,
    /// <c>EnqueueAsync(item, new EnqueueOptions { IdempotencyKey = key }, connection)</c>, which behaves the same.
    /// Enqueues an item on the caller's open connection (inside the transaction in progress on it, if any) unless an
    /// item with the same idempotency key is stored in the queue.
    /// </summary>
    /// <param name="item">The item; discarded when the key is already taken.</param>
    /// <param name="idempotencyKey">The caller's key, as <see cref="EnqueueOptions.IdempotencyKey"/> describes.</param>
    /// <param name="connection">The caller's open connection.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The id of the item that holds the key, and whether it was already stored.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="idempotencyKey"/> or <paramref name="connection"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="idempotencyKey"/> is empty, longer than 256 characters, contains a NUL character, or is not valid UTF-16 (a lone surrogate).</exception>
    [Obsolete("Say the key with EnqueueOptions: EnqueueAsync(item, new EnqueueOptions { IdempotencyKey = key }, connection).")]
    Task<EnqueueResult> EnqueueIdempotentAsync(T item, string idempotencyKey, NpgsqlConnection connection, CancellationToken cancellationToken = default);

    /// <summary>Enqueues an item inside the caller's transaction as <paramref name="options"/> say.</summary>
    /// <param name="item">The item; discarded when its idempotency key is already taken.</param>
    /// <param name="options">When the item may run, its priority and its idempotency key.</param>
    /// <param name="transaction">The caller's open transaction; the queue's schema must be reachable on its connection's database.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The item's id, and whether its key was already taken.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="transaction"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">An option is invalid (the message names it).</exception>
    /// <exception cref="InvalidOperationException">The transaction is already committed or rolled back.</exception>
    Task<EnqueueResult> EnqueueAsync(T item, EnqueueOptions options, NpgsqlTransaction transaction, CancellationToken cancellationToken = default);

    /// <summary>Enqueues an item on the caller's open connection (inside the transaction in progress on it, if any) as <paramref name="options"/> say.</summary>
    /// <param name="item">The item; discarded when its idempotency key is already taken.</param>
    /// <param name="options">When the item may run, its priority and its idempotency key.</param>
    /// <param name="connection">The caller's open connection.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The item's id, and whether its key was already taken.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="connection"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">An option is invalid (the message names it).</exception>
    Task<EnqueueResult> EnqueueAsync(T item, EnqueueOptions options, NpgsqlConnection connection, CancellationToken cancellationToken = default);

    /// <summary>Enqueues many items inside the caller's transaction: they exist, and wake the consumers once, only if it commits.</summary>
    /// <param name="items">The items, in the order their ids are assigned.</param>
    /// <param name="transaction">The caller's open transaction.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The items' ids, in the order of <paramref name="items"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="items"/> or <paramref name="transaction"/> is <see langword="null"/>.</exception>
    /// <exception cref="InvalidOperationException">The transaction is already committed or rolled back.</exception>
    Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, NpgsqlTransaction transaction, CancellationToken cancellationToken = default);

    /// <summary>Enqueues many items inside the caller's transaction, every item as <paramref name="options"/> say.</summary>
    /// <param name="items">The items, in the order their ids are assigned.</param>
    /// <param name="options">When the items may run and their priority; an idempotency key is refused.</param>
    /// <param name="transaction">The caller's open transaction.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The items' ids, in the order of <paramref name="items"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="items"/>, <paramref name="options"/> or <paramref name="transaction"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">An option is invalid, or an idempotency key is given (the message names it).</exception>
    /// <exception cref="InvalidOperationException">The transaction is already committed or rolled back.</exception>
    Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, EnqueueOptions options, NpgsqlTransaction transaction, CancellationToken cancellationToken = default);

    /// <summary>Enqueues many items in one statement on the caller's open connection: inside the transaction in progress on it, if any, else committed at once.</summary>
    /// <param name="items">The items, in the order their ids are assigned.</param>
    /// <param name="connection">The caller's open connection.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The items' ids, in the order of <paramref name="items"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="items"/> or <paramref name="connection"/> is <see langword="null"/>.</exception>
    Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, NpgsqlConnection connection, CancellationToken cancellationToken = default);

    /// <summary>Enqueues many items on the caller's open connection, every item as <paramref name="options"/> say.</summary>
    /// <param name="items">The items, in the order their ids are assigned.</param>
    /// <param name="options">When the items may run and their priority; an idempotency key is refused.</param>
    /// <param name="connection">The caller's open connection.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The items' ids, in the order of <paramref name="items"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="items"/>, <paramref name="options"/> or <paramref name="connection"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">An option is invalid, or an idempotency key is given (the message names it).</exception>
    Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, EnqueueOptions options, NpgsqlConnection connection, CancellationToken cancellationToken = default);

    /// <summary>
    /// Creates a <see cref="System.Threading.RateLimiting.RateLimiter"/> that shares the queue's cluster limits
    /// (<c>MaxRunning</c>, <c>StartsPerSecond</c> with <c>StartBurst</c>) with its durable handlers on every node: a
    /// lease of N permits counts as N handlers, holding N running permits until it is disposed and spending N start
    /// tokens when it is granted. Give it to ASP.NET Core's rate-limiting middleware, a Polly pipeline or an
    /// <c>HttpClient</c> handler, so code outside the queue calls the same downstream within the same fleet-wide budget.
    /// </summary>
    /// <param name="options">Its permit limit in this process, its queue limit and its name.</param>
    /// <returns>
    /// A new limiter, which joins the queue's permit allocation as a member of its own (its row in the cluster view) and
    /// renews its share every <c>NodeHeartbeatInterval</c> on a thread of its own. The caller owns it: disposing it
    /// leaves the allocation and fails the requests still waiting. See docs/cluster-limits.md for what it guarantees.
    /// </returns>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">An option is out of its range (the message and the parameter name say which).</exception>
    System.Threading.RateLimiting.RateLimiter CreateClusterRateLimiter(PostgreSqlClusterRateLimiterOptions options);
}
