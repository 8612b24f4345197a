namespace BoundedWork.Hosting;

/// <summary>
/// Receives the items still queued when the host's shutdown deadline passed, so they can be persisted (for example
/// to an outbox) instead of lost. Register any number with <c>services.AddSingleton&lt;IAbandonedWorkHandler, MyOutbox&gt;()</c>;
/// each is called once per executor that had items left.
/// </summary>
/// <remarks>
/// The host's shutdown deadline has already passed when this runs, and the host waits for it: persist the items,
/// do not run them. An exception it throws is logged and does not stop the other handlers. The count is always
/// logged; when no handler is registered, each item is also logged at Error with its delegate's method and state
/// (the first 100 per executor, then the total), so no item disappears without a record. Submit the data to persist
/// as the item's state (<c>ExecuteAsync(legacy.Process, callback)</c>), not in a closure, so that
/// <see cref="WorkItem.State"/> carries it.
/// </remarks>
public interface IAbandonedWorkHandler
{
    /// <summary>Handles the items an executor never ran.</summary>
    /// <param name="executorName">The name of the executor the items were queued on.</param>
    /// <param name="items">
    /// The items, oldest first. Awaited items (<see cref="WorkItem.IsAwaited"/>) are included for information; their
    /// tasks have already been cancelled. Fire-and-forget items can be run elsewhere with <see cref="WorkItem.Invoke"/>.
    /// </param>
    /// <returns>A task that completes when the items are handled.</returns>
    Task HandleAsync(string executorName, IReadOnlyList<WorkItem> items);
}
