namespace BoundedWork.Hosting;

/// <summary>
/// Enqueues items that run later, on any typed work queue. Obsolete: say the delay with
/// <see cref="EnqueueOptions"/> (<see cref="WorkQueueEnqueueExtensions.EnqueueAsync{T}(IWorkQueue{T}, T, EnqueueOptions, CancellationToken)"/>).
/// </summary>
public static class WorkQueueDelayExtensions
{
    /// <summary>The longest delay.</summary>
    [Obsolete("Use EnqueueOptions.MaxDelay.")]
    public static readonly TimeSpan MaxDelay = TimeSpan.FromDays(365);

    /// <summary>
    /// Enqueues an item that may run once <paramref name="delay"/> has passed. A durable queue (BoundedWork.PostgreSql)
    /// stores it at once, scheduled: it survives restarts and runs on any node. An in-memory queue does what it can:
    /// it accepts the item now and holds it on the queues' timer thread (no worker, no room of the executor's queue),
    /// then submits it under the executor's policy (under Wait it waits for room; under the others a full queue makes
    /// it a dead letter), and takes its place behind its ordering key only then. An in-memory delayed item is lost
    /// with the process; at shutdown, one still waiting becomes a dead letter (<see cref="DeadLetterReason.ShutDown"/>).
    /// </summary>
    /// <typeparam name="T">The item type.</typeparam>
    /// <param name="queue">The queue.</param>
    /// <param name="item">The item.</param>
    /// <param name="delay">How long the item waits; zero enqueues it as <see cref="IWorkQueue{T}.EnqueueAsync"/> does.</param>
    /// <param name="cancellationToken">Cancels the durable insert (an in-memory queue never waits here).</param>
    /// <returns>A task that completes when the item is accepted (stored, or held).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="queue"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="delay"/> is negative or longer than 365 days.</exception>
    /// <exception cref="NotSupportedException">The queue is not one of BoundedWork's (a test double, say).</exception>
    /// <exception cref="RejectedExecutionException">An in-memory queue has shut down (the item has been handed to the dead-letter handlers).</exception>
    [Obsolete("Say the delay with EnqueueOptions: queue.EnqueueAsync(item, new EnqueueOptions { Delay = delay }).")]
    public static ValueTask EnqueueAsync<T>(this IWorkQueue<T> queue, T item, TimeSpan delay, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(queue);
        if (delay < TimeSpan.Zero || delay > EnqueueOptions.MaxDelay)
        {
            throw new ArgumentOutOfRangeException(nameof(delay), delay, "The delay must be between zero and 365 days.");
        }

        return WorkQueueEnqueueExtensions.EnqueueDelayedAsync(queue, item, delay, null, cancellationToken);
    }

    /// <summary>
    /// Enqueues an item that may run at <paramref name="runAt"/> (a time already past runs now), as
    /// <see cref="EnqueueAsync{T}(IWorkQueue{T}, T, TimeSpan, CancellationToken)"/> does with a delay. A durable queue
    /// compares the time with the database server's clock; an in-memory queue waits until its own clock reaches it.
    /// </summary>
    /// <typeparam name="T">The item type.</typeparam>
    /// <param name="queue">The queue.</param>
    /// <param name="item">The item.</param>
    /// <param name="runAt">When the item may run; at most 365 days ahead.</param>
    /// <param name="cancellationToken">Cancels the durable insert (an in-memory queue never waits here).</param>
    /// <returns>A task that completes when the item is accepted (stored, or held).</returns>
    /// <exception cref="ArgumentNullException"><paramref name="queue"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="runAt"/> is more than 365 days ahead.</exception>
    /// <exception cref="NotSupportedException">The queue is not one of BoundedWork's.</exception>
    /// <exception cref="RejectedExecutionException">An in-memory queue has shut down (the item has been handed to the dead-letter handlers).</exception>
    [Obsolete("Say the time with EnqueueOptions: queue.EnqueueAsync(item, new EnqueueOptions { RunAt = runAt }).")]
    public static ValueTask EnqueueAsync<T>(this IWorkQueue<T> queue, T item, DateTimeOffset runAt, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(queue);
        if (runAt - DateTimeOffset.UtcNow > EnqueueOptions.MaxDelay)
        {
            throw new ArgumentOutOfRangeException(nameof(runAt), runAt, "The time to run at must be at most 365 days ahead.");
        }

        return WorkQueueEnqueueExtensions.EnqueueDelayedAsync(queue, item, null, runAt, cancellationToken);
    }
}
