using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The per-key prefetch, as the node uses its <see cref="KeyBook"/>: starting and releasing the items the book hands
/// back. The book holds the state and states its invariant; docs/durable-invariants.md (I3) holds the argument.
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    /// <summary>Gets the items this node holds as its keys' reserves (claimed, not started).</summary>
    internal int KeyReservedCount => _keys.PrefetchedCount;

    /// <summary>Gets the reserved item of each key this node holds one for (claimed, not started): key and item id.</summary>
    internal IReadOnlyDictionary<string, long> KeyReserved => _keys.Prefetched;

    /// <summary>Gets how many reserved items this node started at a handler's end (or at once, paired with an end that came first).</summary>
    internal long KeyReservesStartedCount => _keys.StartedCount;

    /// <summary>Gets how many reserved items this node released unstarted (stopping, or no partner left to start them).</summary>
    internal long KeyReservesReleasedCount => _keys.ReleasedCount;

    /// <summary>
    /// The node applied new cluster limits: releases the reserves claimed under a per-key limit that no longer holds
    /// (lowered, or another cluster limit set), back to ready now, rather than at the next end of their key.
    /// </summary>
    private void ReleaseKeyReservesNoLongerAllowed() =>
        ReleaseKeyReserves(_keys.TakeNoLongerAllowed() ?? [], "the queue's cluster limits changed since it was claimed");

    /// <summary>Starts a reserved item paired with a handler's end.</summary>
    private void StartKeyReserve(StoredItem item)
    {
        _keys.CountStarted();
        Interlocked.Increment(ref _handedOff);
        Execute(item);
    }

    /// <summary>Releases reserved items unstarted (back to ready once the release is written), counted and logged.</summary>
    private void ReleaseKeyReserves(List<StoredItem> items, string reason)
    {
        if (items.Count == 0)
        {
            return;
        }

        _keys.CountReleased(items.Count);
        _logger.KeyReserveReleased(Name, items.Count, reason);
        foreach (var item in items)
        {
            _ = item.OnNotRun(RejectionReason.ShutDown); // posts Released
        }
    }

    /// <summary>The node stops claiming: no more reserves; the unstarted ones are released.</summary>
    private void CloseKeyReserve() => ReleaseKeyReserves(_keys.Close(), "the node is stopping");
}
