namespace BoundedWork.Hosting;

/// <summary>
/// Handles the items of a typed work queue (<c>services.AddWorkQueue&lt;T, THandler&gt;(...)</c>). A new instance is
/// resolved from a new dependency-injection scope for every attempt, on one of the queue's worker threads.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>
/// The worker waits for the returned task, so the queue's worker count bounds how many items are handled at once,
/// asynchronous or not. A handler that blocks anyway is better written as <see cref="IBlockingWorkHandler{T}"/>.
/// An exception it throws fails the attempt: the queue's resilience pipeline decides whether to retry.
/// <para>
/// A handler that awaits <see cref="IWorkQueue{T}.EnqueueAsync"/> into its own queue under the Wait policy never
/// waits for room there (its worker, waiting for the handler, could be the one that would make room): the item is
/// submitted on that worker, as a blocking handler's is, so a full queue runs it inline on the worker before the
/// call completes.
/// </para>
/// </remarks>
public interface IWorkHandler<in T>
{
    /// <summary>Handles one item.</summary>
    /// <param name="item">The item.</param>
    /// <param name="cancellationToken">
    /// Cancelled when the attempt times out (the default pipeline's per-attempt timeout), or when the host's shutdown
    /// deadline passes while the handler still runs; not when the host begins to drain.
    /// </param>
    /// <returns>A task that completes when the item is handled.</returns>
    ValueTask HandleAsync(T item, CancellationToken cancellationToken);
}

/// <summary>
/// Handles the items of a typed work queue synchronously: the shape for blocking, legacy handlers (synchronous SDKs,
/// drivers, repositories). It runs on one of the queue's dedicated worker threads, never on the ThreadPool; a new
/// instance is resolved from a new dependency-injection scope for every attempt.
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>An exception it throws fails the attempt: the queue's resilience pipeline decides whether to retry.</remarks>
public interface IBlockingWorkHandler<in T>
{
    /// <summary>Handles one item, blocking the worker thread until done.</summary>
    /// <param name="item">The item.</param>
    /// <param name="cancellationToken">
    /// Cancelled when the attempt times out, or when the host's shutdown deadline passes while the handler still runs
    /// (not when the host begins to drain); it only helps a handler that observes it.
    /// </param>
    void Handle(T item, CancellationToken cancellationToken);
}
