namespace BoundedWork.PostgreSql.Internal;

/// <summary>The starts of the hand-off (items claimed in an outcome's transaction) under cluster limits.</summary>
internal sealed partial class ClusterPermits
{
    /// <summary>A hand-off claimed <paramref name="claimed"/> items (with permits from <see cref="Take"/>): they carry their promised tokens to their starts, which are counted there (<see cref="Starting"/>); what waits is left as the last claim saw it.</summary>
    public void HandedOff(List<StoredItem> claimed, bool pledged)
    {
        if (pledged)
        {
            Pledge(claimed);
        }
    }
}
