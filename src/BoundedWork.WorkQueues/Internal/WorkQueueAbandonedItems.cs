namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Turns the work-queue items an executor still held at the host's shutdown deadline into dead letters, through the
/// hosting package's own abandoned-work hand-over; items of plain executors are left to the other handlers.
/// </summary>
internal sealed class WorkQueueAbandonedItems : IAbandonedWorkHandler
{
    public Task HandleAsync(string executorName, IReadOnlyList<WorkItem> items)
    {
        ArgumentNullException.ThrowIfNull(items);
        List<Task>? deliveries = null;
        foreach (var item in items)
        {
            if (item.State is IWorkQueueDelivery entry)
            {
                (deliveries ??= []).Add(entry.OnNotRun(RejectionReason.Abandoned));
            }
        }

        return deliveries is null ? Task.CompletedTask : Task.WhenAll(deliveries);
    }
}
