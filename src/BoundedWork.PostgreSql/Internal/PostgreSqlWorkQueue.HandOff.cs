using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The hand-off under a per-key limit (<c>max_running_per_key</c> M above one): the next item of a key is claimed in
/// the transaction that writes the final outcome of one of its items, not by a claim after that commit.
/// </summary>
/// <remarks>
/// <para>
/// <b>What it does.</b> When the outcome writer writes a batch holding final outcomes (completed, dead letter,
/// cancelled: not a stored retry, not a release) of keyed items, and the queue's per-key limit is above one, the same
/// transaction (the outcome statement, then <see cref="KeyedClaimSql.HandOff"/>, each sent on its own: Npgsql would
/// send a synchronous batch's second statement from the ThreadPool) claims the eligible items of those keys within the
/// node's free room (<see cref="NodeRoom.Book"/>: what the <see cref="ClaimLoop"/> may take, plus the items the batch
/// settles: room for one successor per final keyed outcome first, then one prefetched item per key, then the rest:
/// <see cref="HandOffPlanner"/>) and its cluster permits and tokens (taken as the claim loop takes them; with none free, no hand-off).
/// After the commit the claimed items are held and started as a claim's are. A write that fails claimed nothing (the
/// transaction rolled back): the room and permits go back, and the batch is written again as before. While the node
/// stops, no hand-off starts; items handed off after the stop began are not started but released by the writer.
/// </para>
/// <para>
/// <b>Why at most M run per key.</b> To every other transaction the outcome and the claim are one change, so the claim's
/// argument holds unchanged: docs/durable-invariants.md, I2 (and I3 for the prefetched items).
/// </para>
/// </remarks>
internal sealed partial class PostgreSqlWorkQueue<T> : IOutcomeHandOff
{
    private long _handedOff;

    /// <summary>Gets how many items this node started through the hand-off (claimed in an outcome's transaction).</summary>
    internal long HandedOffCount => Interlocked.Read(ref _handedOff);

    /// <summary>Gets how many items this node's claim loop claimed and started.</summary>
    internal long ClaimedByLoopCount => _claimLoop.ClaimedCount;

    /// <summary>Gets the node's claim loop (for tests: its hook and its wake-up).</summary>
    internal ClaimLoop ClaimLoop => _claimLoop;

    /// <summary>Gets the node's outcome writer (for tests: its fault hook).</summary>
    internal OutcomeWriter Outcomes => _outcomes;

    /// <summary>Gets a value indicating whether the node has begun to stop: it claims nothing more (nor hands off).</summary>
    internal bool IsClaimingStopped => _claiming.IsCancellationRequested;

    HandOffPlan? IOutcomeHandOff.Begin(string[] keys, int finished, int settling)
    {
        if (keys.Length == 0 || !_options.Consume || _claiming.IsCancellationRequested)
        {
            return null;
        }

        var plan = _handOff.Plan(keys, finished, settling, Executor.Settings.WorkerCount, out var lapsedNow);
        if (lapsedNow)
        {
            _logger.PermitGrantLapsed(Name, _options.NodeHeartbeatInterval * 3);
            _claimLoop.Wake(); // the claim loop releases the lapsed grant's reserve
        }

        return plan;
    }

    NpgsqlCommand IOutcomeHandOff.Command(HandOffPlan plan, NpgsqlConnection connection, NpgsqlTransaction transaction)
    {
        var command = _claims.HandOff.Command(connection, transaction, new HandOffParameters(
            Name, plan.Count, NodeId, _options.LeaseDuration, plan.Bound, plan.Keys, plan.PerKey, plan.PrefetchKeys ?? []));
        return command;
    }

    StoredItem IOutcomeHandOff.Read(NpgsqlDataReader reader) => HandOffRow.ReadItem(this, reader);

    List<StoredItem> IOutcomeHandOff.Committed(HandOffPlan plan, List<StoredItem> claimed)
    {
        if (!_handOff.Committed(plan, claimed.Count))
        {
            return [];
        }

        claimed.Sort(static (a, b) => a.Id.CompareTo(b.Id));
        StorageMetrics.Claimed.Add(claimed.Count, StorageMetrics.QueueTag(Name));
        if (_claiming.IsCancellationRequested)
        {
            // Stopping: nothing more starts. Held until the writer has written their releases (it does so next).
            _handOff.Stopping(plan, claimed.Count);
            foreach (var item in claimed)
            {
                _leases.Lease(item);
            }

            return claimed;
        }

        foreach (var item in claimed)
        {
            item.PrefetchBound = item.Prefetched ? plan.PerKey : 0;
            Hold(item);
        }

        // A prefetched item (count M) starts at once only paired with a final end of its key that came meanwhile; it is
        // kept for the next such end if a partner of its key still runs here, and released otherwise (I3).
        var start = new List<StoredItem>(claimed.Count);
        List<StoredItem>? release = null;
        _handOff.Start(plan, claimed, start, ref release);
        Interlocked.Add(ref _handedOff, start.Count);
        if (_logger.IsEnabled(LogLevel.Debug))
        {
            _logger.HandedOff(Name, claimed.Count, plan.Keys.Length);
        }

        foreach (var item in start)
        {
            Execute(item);
        }

        ReleasePrefetched(release ?? [], "no other handler of its key runs on this node, or the node is stopping");
        return [];
    }

    void IOutcomeHandOff.Failed(HandOffPlan plan) => _handOff.Failed(plan);
}
