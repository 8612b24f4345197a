using BoundedWork;
using BoundedWork.Hosting;

public sealed class PaymentOutbox(OutboxDb db) : IAbandonedWorkHandler
{
    public async Task HandleAsync(string executorName, IReadOnlyList<WorkItem> items)
    {
        foreach (var item in items)
        {
            if (item.State is PaymentCallback callback)
            {
                db.Add(OutboxMessage.For(callback));
            }
        }

        await db.SaveChangesAsync();
    }
}
