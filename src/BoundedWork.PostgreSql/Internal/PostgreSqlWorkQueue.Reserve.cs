using System.Diagnostics;
using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The node's reserve under a binding running limit (see <see cref="ClusterPermits.ReserveSlots"/>): items claimed ahead, started when a permit frees.</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    /// <summary>Gets the items this node holds in its reserve (claimed, waiting for a permit of its own).</summary>
    internal int ClusterReservedCount => _permits.ReservedCount;

    /// <summary>Counts a claimed item as held by this node (its outcome, or its release, is yet to be written).</summary>
    private void Hold(StoredItem item)
    {
        _room.Hold();
        _leases.Hold(item);
        _keys.CountRunning(item);
    }

    /// <summary>Hands a held delivery to the executor, its span current while it is submitted. Refused: the OnRejected hook releases it.</summary>
    private void Execute(StoredItem item)
    {
        var previous = Activity.Current;
        item.Process = DurableTracing.StartProcess(Name, item);
        try
        {
            Executor.TryExecute(s_run, item);
        }
        finally
        {
            if (item.Process is not null)
            {
                Activity.Current = previous;
            }
        }
    }

    /// <summary>Starts the reserved items that got a permit, and releases those the reserve gave up (back to ready now).</summary>
    private void Apply((List<StoredItem> Start, List<StoredItem> Release) reserve)
    {
        foreach (var item in reserve.Start)
        {
            Execute(item);
        }

        ReleaseReserved(reserve.Release);
    }

    private static void ReleaseReserved(List<StoredItem> items)
    {
        foreach (var item in items)
        {
            _ = item.OnNotRun(RejectionReason.ShutDown); // posts Released: the row is ready again once written
        }
    }

    /// <summary>A cancellation for an item held unstarted (in the reserve, or prefetched for its key): it leaves it and ends cancelled without running.</summary>
    private void CancelIfNotStarted(StoredItem item)
    {
        if ((_permits.TryUnreserve(item) || _keys.TryRemovePrefetched(item)) && item.TryStart())
        {
            Cancelled(item, "cancelled before it ran");
        }
    }
}
