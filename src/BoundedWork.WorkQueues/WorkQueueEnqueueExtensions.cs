using BoundedWork.Hosting.Internal;

namespace BoundedWork.Hosting;

/// <summary>Enqueues an item on any typed work queue as <see cref="EnqueueOptions"/> say: the one way to delay an item.</summary>
public static class WorkQueueEnqueueExtensions
{
    /// <summary>
    /// Enqueues an item as <paramref name="options"/> say. A durable queue (<see cref="IDurableWorkQueue{T}"/>, for
    /// example BoundedWork.PostgreSql) takes every option, as its own
    /// <see cref="IDurableWorkQueue{T}.EnqueueAsync(T, EnqueueOptions, CancellationToken)"/> does: it stores the item
    /// at once, scheduled, so it survives restarts and runs on any node. An in-memory queue takes
    /// <see cref="EnqueueOptions.Delay"/> and <see cref="EnqueueOptions.RunAt"/> only: it accepts the item now and holds
    /// it on the queues' timer thread (no worker, no room of the executor's queue), then submits it under the
    /// executor's policy (under Wait it waits for room; under the others a full queue makes it a dead letter), and takes
    /// its place behind its ordering key only then. An in-memory delayed item is lost with the process; at shutdown, one
    /// still waiting becomes a dead letter (<see cref="DeadLetterReason.ShutDown"/>). Without a delay or a time (or with
    /// a time already past), the item is enqueued as <see cref="IWorkQueue{T}.EnqueueAsync"/> does.
    /// </summary>
    /// <typeparam name="T">The item type.</typeparam>
    /// <param name="queue">The queue.</param>
    /// <param name="item">The item.</param>
    /// <param name="options">When the item may run; for a durable queue also its priority and its idempotency key.</param>
    /// <param name="cancellationToken">Cancels the durable insert, or a Wait-policy wait for room of an item enqueued now.</param>
    /// <returns>A task that completes when the item is accepted (stored, or held).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="queue"/> or <paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">The delay is negative or longer than 365 days, or the time to run at is more than 365 days ahead (the message names the option).</exception>
    /// <exception cref="ArgumentException">Both a delay and a time are given; or an in-memory queue is given a priority or an idempotency key (the message names the option).</exception>
    /// <exception cref="NotSupportedException">The item is delayed and the queue is not one of BoundedWork's (a test double, say).</exception>
    /// <exception cref="RejectedExecutionException">An in-memory queue has shut down (the item has been handed to the dead-letter handlers).</exception>
    public static ValueTask EnqueueAsync<T>(this IWorkQueue<T> queue, T item, EnqueueOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(queue);
        ArgumentNullException.ThrowIfNull(options);
        if (queue is IDurableWorkQueue<T> durable)
        {
            return new ValueTask(durable.EnqueueAsync(item, options, cancellationToken));
        }

        EnqueueOptions.Validate(options, TimeProvider.System);
        if (options.Priority != 0)
        {
            throw new ArgumentException($"EnqueueOptions.Priority is for durable queues: work queue '{queue.Name}' keeps its items in memory, where they run in the order they are accepted.", nameof(options));
        }

        if (options.IdempotencyKey is not null)
        {
            throw new ArgumentException($"EnqueueOptions.IdempotencyKey is for durable queues: work queue '{queue.Name}' keeps its items in memory and remembers no keys.", nameof(options));
        }

        if (options.Delay is null && options.RunAt is null)
        {
            return queue.EnqueueAsync(item, cancellationToken);
        }

        return EnqueueDelayedAsync(queue, item, options.Delay, options.RunAt, cancellationToken);
    }

    /// <summary>Hands a delayed item to a queue of BoundedWork's; the caller has validated the delay or the time.</summary>
    internal static ValueTask EnqueueDelayedAsync<T>(IWorkQueue<T> queue, T item, TimeSpan? delay, DateTimeOffset? runAt, CancellationToken cancellationToken) => queue switch
    {
        IDelayedEnqueue<T> memory => memory.EnqueueDelayedAsync(item, delay, runAt, cancellationToken),
        IDurableWorkQueue<T> durable => new ValueTask(durable.EnqueueAsync(item, new EnqueueOptions { Delay = delay, RunAt = runAt }, cancellationToken)),
        _ => throw new NotSupportedException($"Work queue '{queue.Name}' ({queue.GetType().Name}) does not take delayed items: only BoundedWork's queues do."),
    };
}
