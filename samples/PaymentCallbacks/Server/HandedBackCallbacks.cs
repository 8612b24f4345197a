using BoundedWork.Hosting;

namespace PaymentCallbacks.Server;

/// <summary>
/// Receives the callbacks still queued when the host's shutdown deadline passed. A real service writes them to an
/// outbox to run after the restart; the sample counts them, so the ledger shows that none was dropped.
/// </summary>
internal sealed class HandedBackCallbacks : IAbandonedWorkHandler
{
    private long _count;

    /// <summary>Gets how many callbacks were handed back.</summary>
    public long Count => Volatile.Read(ref _count);

    /// <inheritdoc />
    public Task HandleAsync(string executorName, IReadOnlyList<BoundedWork.WorkItem> items)
    {
        ArgumentNullException.ThrowIfNull(items);
        Interlocked.Add(ref _count, items.Count(i => i.State is SideEffectCall));
        return Task.CompletedTask;
    }
}
