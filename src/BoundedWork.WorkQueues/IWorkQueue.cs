using System.Diagnostics.CodeAnalysis;

namespace BoundedWork.Hosting;

/// <summary>
/// The producer side of a typed work queue registered with <c>services.AddWorkQueue&lt;T, THandler&gt;(name, ...)</c>.
/// Inject it (or, with several queues of one item type, <c>[FromKeyedServices("name")] IWorkQueue&lt;T&gt;</c>).
/// </summary>
/// <typeparam name="T">The item type.</typeparam>
/// <remarks>
/// Every item ends in exactly one of: handled, or handed to the <see cref="IDeadLetterHandler{T}"/> services
/// (retries exhausted, rejected by the queue's policy, or left over at shutdown). The only exception is an
/// <see cref="EnqueueAsync"/> cancelled by its caller while waiting for room: the caller still holds that item.
/// </remarks>
[SuppressMessage("Naming", "CA1711:Identifiers should not have incorrect suffix", Justification = "A work queue is what it is; the name is the feature's.")]
public interface IWorkQueue<T>
{
    /// <summary>Gets the queue's name, which is also the name of its executor.</summary>
    string Name { get; }

    /// <summary>Queues an item if there is room now; never blocks and never waits.</summary>
    /// <param name="item">The item.</param>
    /// <returns>
    /// <see langword="true"/> if the item was accepted (queued, or held back behind an earlier item with the same
    /// ordering key); <see langword="false"/> if it was rejected (whatever the policy, this call never waits and never
    /// runs the item on the caller), in which case it has been handed to the dead-letter handlers.
    /// </returns>
    bool TryEnqueue(T item);

    /// <summary>
    /// Queues an item, applying the executor's rejection policy; under the Wait policy the wait for room is asynchronous.
    /// </summary>
    /// <param name="item">The item.</param>
    /// <param name="cancellationToken">Stops a Wait-policy wait for room.</param>
    /// <returns>A task that completes when the item is accepted.</returns>
    /// <exception cref="RejectedExecutionException">The item was rejected (it has been handed to the dead-letter handlers).</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while waiting for room; the item was not queued and not dead-lettered.</exception>
    ValueTask EnqueueAsync(T item, CancellationToken cancellationToken = default);
}
