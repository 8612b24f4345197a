namespace BoundedWork.PostgreSql.Internal;

/// <summary>Whether the per-key reserve of the hand-off may be used (see the key reserve part of <c>PostgreSqlWorkQueue</c>).</summary>
internal sealed partial class ClusterPermits
{
    /// <summary>
    /// Gets a value indicating whether the queue's per-key limit (above one) is its only cluster limit as of the last
    /// renewal: no running limit and no start rate. Only then does the hand-off take per-key reserves.
    /// </summary>
    public bool PerKeyOnly
    {
        get
        {
            lock (SyncObj)
            {
                return _perKey > 1 && _allowed is null && !_rated && _version >= 0 && !_stale;
            }
        }
    }
}
