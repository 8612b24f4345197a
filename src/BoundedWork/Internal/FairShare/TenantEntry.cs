namespace BoundedWork.Internal;

/// <summary>
/// A tenant's item while fair share holds it. The executor's queue holds its placeholder (<see cref="Placeholder"/>):
/// one slot per tenant item, so the queue's capacity, policies, statistics and shutdown count tenant items as any
/// other; the item itself waits in its tenant's lane of the <see cref="TenantBook"/>, and a worker that claims a
/// placeholder runs whichever item the scheduler picks, not necessarily this one.
/// </summary>
internal sealed class TenantEntry(string tenant, QueuedItem item)
{
    /// <summary>The invoker that marks a placeholder; it never runs (a worker takes the scheduler's pick instead).</summary>
    public static readonly Action<object, object?> Marker = static (_, _) => throw new InvalidOperationException("A fair-share placeholder never runs.");

    /// <summary>Gets the tenant.</summary>
    public string Tenant { get; } = tenant;

    /// <summary>Gets the item as it was submitted.</summary>
    public QueuedItem Item { get; } = item;

    /// <summary>
    /// Gets the tenant's name on the per-tenant series (the tenant, or <see cref="TenantStatistics.OtherTenants"/> past
    /// the series limit), set by the book when the item starts; <see langword="null"/> before.
    /// </summary>
    public string? Series { get; set; }

    /// <summary>Gets the slot's content: the entry behind the marker, with the item's timestamps.</summary>
    public QueuedItem Placeholder => new(this, null, Marker, null, Item.EnqueuedTimestamp, Item.PreciseEnqueuedTimestamp);

    /// <summary>Whether a queued item is a placeholder, and its entry.</summary>
    public static bool IsPlaceholder(in QueuedItem item, out TenantEntry entry)
    {
        if (ReferenceEquals(item.Invoker, Marker))
        {
            entry = (TenantEntry)item.Callback;
            return true;
        }

        entry = null!;
        return false;
    }
}
