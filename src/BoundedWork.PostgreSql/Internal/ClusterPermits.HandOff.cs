namespace BoundedWork.PostgreSql.Internal;

/// <summary>The starts of the hand-off (items claimed in an outcome's transaction) under cluster limits.</summary>
internal sealed partial class ClusterPermits
{
    /// <summary>A hand-off claimed <paramref name="claimed"/> items (with permits from <see cref="Take"/>): counted as starts, like a claim's; what waits is left as the last claim saw it.</summary>
    public void HandedOff(int claimed)
    {
        lock (SyncObj)
        {
            if (claimed > 0 && _limited)
            {
                _starts.Enqueue((time.GetTimestamp(), claimed));
                Prune();
            }
        }
    }
}
