using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The per-key prefetch, as the node uses its <see cref="KeyBook"/>: starting and releasing the items the book hands
/// back. The book holds the state and states its invariant; docs/durable-invariants.md (I3) holds the argument.
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    /// <summary>Gets the items this node holds prefetched for their keys (claimed, not started).</summary>
    internal int PrefetchedCount => _keys.PrefetchedCount;

    /// <summary>Gets the prefetched item of each key this node holds one for (claimed, not started): key and item id.</summary>
    internal IReadOnlyDictionary<string, long> PrefetchedByKey => _keys.PrefetchedByKey;

    /// <summary>Gets how many prefetched items this node started at a handler's end (or at once, paired with an end that came first).</summary>
    internal long PrefetchesStartedCount => _keys.StartedCount;

    /// <summary>Gets how many prefetched items this node released unstarted (stopping, or no partner left to start them).</summary>
    internal long PrefetchesReleasedCount => _keys.ReleasedCount;

    /// <summary>
    /// The node applied new cluster limits: releases the prefetched items claimed under a per-key limit that no longer holds
    /// (lowered, or another cluster limit set), back to ready now, rather than at the next end of their key.
    /// </summary>
    private void ReleasePrefetchedNoLongerAllowed() =>
        ReleasePrefetched(_keys.TakeNoLongerAllowed() ?? [], "the queue's cluster limits changed since it was claimed");

    /// <summary>Starts a prefetched item paired with a handler's end.</summary>
    private void StartPrefetched(StoredItem item)
    {
        _keys.CountStarted();
        Interlocked.Increment(ref _handedOff);
        Execute(item);
    }

    /// <summary>Releases prefetched items unstarted (back to ready once the release is written), counted and logged.</summary>
    private void ReleasePrefetched(List<StoredItem> items, string reason)
    {
        if (items.Count == 0)
        {
            return;
        }

        _keys.CountReleased(items.Count);
        _logger.PrefetchReleased(Name, items.Count, reason);
        foreach (var item in items)
        {
            _ = item.OnNotRun(RejectionReason.ShutDown); // posts Released
        }
    }

    /// <summary>The node stops claiming: no more prefetching; the unstarted prefetched items are released.</summary>
    private void ClosePrefetch() => ReleasePrefetched(_keys.Close(), "the node is stopping");
}
