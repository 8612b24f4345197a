using System.Diagnostics.CodeAnalysis;
using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql;

/// <summary>
/// A typed work queue stored in PostgreSQL (<c>services.AddWorkQueue&lt;T, THandler&gt;(name).UsePostgreSql(...)</c>):
/// the <see cref="IWorkQueue{T}"/> producers already use, plus enqueueing inside the caller's own transaction. Inject it
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
/// <para>Delivery is at least once: see the package README for what a crash, a restart or a lost connection does.</para>
/// </remarks>
[SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "A work queue is what it is; the name is the feature's.")]
public interface IPostgreSqlWorkQueue<T> : IWorkQueue<T>
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

    /// <summary>Enqueues an item in its own transaction and returns its id.</summary>
    /// <param name="item">The item.</param>
    /// <param name="cancellationToken">Cancels the insert.</param>
    /// <returns>The item's id.</returns>
    Task<long> EnqueueWithIdAsync(T item, CancellationToken cancellationToken = default);

    /// <summary>Reads the queue's statistics from the database now (the <see cref="IWorkQueueStorage"/> view is refreshed periodically).</summary>
    /// <param name="cancellationToken">Cancels the query.</param>
    /// <returns>The statistics.</returns>
    Task<WorkQueueStorageStatistics> ReadStatisticsAsync(CancellationToken cancellationToken = default);
}
