using System.Diagnostics.CodeAnalysis;

namespace BoundedWork.Hosting;

/// <summary>
/// The contract a durable storage implements to hold a typed work queue (BoundedWork.PostgreSql is one): the producer
/// side (<see cref="IDurableWorkQueue{T}"/>, delayed enqueues included), the monitoring view (<see cref="IWorkQueueStorage"/>)
/// and the host's lifecycle. Plug one in with <see cref="WorkQueueBuilder{T}.UseStorage"/>; the factory gets a
/// <see cref="WorkQueueStorageContext{T}"/>, which runs each delivery through the queue's handler and decides its
/// outcome, so a storage only stores, claims, leases and records.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>
/// <para>
/// What a storage promises (docs/storage.md has them in full): an accepted enqueue is durable; each stored item is
/// delivered at least once and ends in exactly one recorded outcome (completed, cancelled or dead letter); a claimed
/// item is leased, and returns to ready when its lease expires without an outcome; items with the same ordering key
/// run one at a time, in enqueue order; among ready items a higher priority runs first, then the earliest due.
/// </para>
/// <para>
/// How a storage consumes: it claims ready items, at most as many as the queue's executor has room for, and hands each
/// to the executor (<see cref="BoundedExecutor.TryExecute{TState}(Action{TState}, TState)"/>) with a state object
/// that implements <see cref="IWorkQueueDelivery"/>, so that a delivery the executor never runs is handed back. On the
/// worker, it calls <see cref="WorkQueueStorageContext{T}.Run"/> and records the <see cref="StoredOutcome"/> it
/// returns. No step may need a ThreadPool thread: claim and record on threads of the storage's own.
/// </para>
/// </remarks>
[SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "Named for the storage it is, beside IWorkQueueStorage.")]
public interface IWorkQueueStorage<T> : IDurableWorkQueue<T>, IWorkQueueStorage
{
    /// <summary>
    /// Called when the host starts, after the executors have started: connect, create or upgrade the schema, and start
    /// claiming. A failure fails the host's start.
    /// </summary>
    /// <param name="cancellationToken">The host's start token.</param>
    /// <returns>A task that completes when the storage is ready.</returns>
    Task StartAsync(CancellationToken cancellationToken);

    /// <summary>
    /// Called when the host begins to stop, before the executors drain: claim nothing more. What is claimed already runs,
    /// or is handed back through <see cref="IWorkQueueDelivery.OnNotRun"/>.
    /// </summary>
    /// <param name="cancellationToken">Fires when the host's shutdown deadline passes.</param>
    /// <returns>A task that completes when no more claims will be made.</returns>
    Task StoppingAsync(CancellationToken cancellationToken);

    /// <summary>
    /// Called after every executor has stopped: record every outcome still in flight (releases of the deliveries handed
    /// back included), then stop the storage's own threads.
    /// </summary>
    /// <param name="cancellationToken">Fires when the host's shutdown deadline passes.</param>
    /// <returns>A task that completes when the storage has stopped.</returns>
    Task StoppedAsync(CancellationToken cancellationToken);
}
