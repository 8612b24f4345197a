namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Which queues' dead-letter deliveries the current asynchronous flow is inside (an <see cref="AsyncLocal{T}"/>
/// chain, innermost first), so that a dead letter arising inside its own queue's delivery is recognised.
/// </summary>
internal static class DeadLetterFlow
{
    private static readonly AsyncLocal<Delivery?> s_current = new();

    /// <summary>Whether the current flow is inside a delivery of <paramref name="owner"/>.</summary>
    public static bool IsDelivering(object owner)
    {
        for (var delivery = s_current.Value; delivery is not null; delivery = delivery.Outer)
        {
            if (ReferenceEquals(delivery.Owner, owner))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Marks the current flow as inside a delivery of <paramref name="owner"/>. Call from an async method: the mark
    /// then ends with it.
    /// </summary>
    public static void Enter(object owner) => s_current.Value = new Delivery(owner, s_current.Value);

    /// <summary>
    /// Starts a flow outside every delivery: an item's own processing, even when the item was submitted from inside a
    /// dead-letter handler (its execution context flowed from there). Call from an async method.
    /// </summary>
    public static void Leave()
    {
        if (s_current.Value is not null)
        {
            s_current.Value = null;
        }
    }

    private sealed record Delivery(object Owner, Delivery? Outer);
}
