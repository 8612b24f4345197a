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
/// node's free room (<see cref="NodeRoom.Book"/>: what <see cref="RunClaims"/> may take, plus the items the batch
/// settles: room for one successor per final keyed outcome first, then the keys' reserves, then the rest) and its
/// cluster permits and tokens (taken as <see cref="ClaimUnderPermits"/> takes them; with none free, no hand-off).
/// After the commit the claimed items are held and started as a claim's are. A write that fails claimed nothing (the
/// transaction rolled back): the room and permits go back, and the batch is written again as before. While the node
/// stops, no hand-off starts; items handed off after the stop began are not started but released by the writer.
/// </para>
/// <para>
/// <b>Why at most M run per key.</b> The database judges, as for <see cref="KeyedClaimSql.ClaimPerKey"/>, with the
/// same statement text for a key's eligible items. Under READ COMMITTED the claim statement's snapshot includes the
/// outcome statement's own changes, so the items whose outcome it wrote are finished for it; for every other
/// transaction they are running until the commit, and finished after it, together with the claim. To the others the
/// outcome and the claim are one change, as an outcome followed at once by a claim would be: the set of unfinished
/// older items the claim counted is the one that holds from its commit on (it only shrinks after), so the argument of
/// <see cref="KeyedClaimSql"/> holds unchanged. Rows are locked with <c>SKIP LOCKED</c> and the version check, so the
/// hand-off never waits for another claim and never takes a row another claim took; a key's newer item is not taken
/// while an older chosen one was skipped, so a key's items start in id order. A per-key limit of one (the plain
/// claim, <see cref="StorageSql.Claim"/>) has no hand-off: its claim also checks the settings version, which the
/// hand-off would have to repeat; the next item of such a key is claimed by the claim loop after the commit.
/// </para>
/// </remarks>
internal sealed partial class PostgreSqlWorkQueue<T> : IOutcomeHandOff
{
    /// <summary>The column of the hand-off's ordering key (its last).</summary>
    private const int HandOffKeyColumn = 8;

    private long _handedOff;
    private long _claimedByLoop;

    /// <summary>Gets how many items this node started through the hand-off (claimed in an outcome's transaction).</summary>
    internal long HandedOffCount => Interlocked.Read(ref _handedOff);

    /// <summary>Gets how many items this node's claim loop claimed and started.</summary>
    internal long ClaimedByLoopCount => Interlocked.Read(ref _claimedByLoop);

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
            _wake.Set(); // the claim loop releases the lapsed grant's reserve
        }

        return plan;
    }

    NpgsqlCommand IOutcomeHandOff.Command(HandOffPlan plan, NpgsqlConnection connection, NpgsqlTransaction transaction)
    {
        var command = new NpgsqlCommand(KeyedStatements.HandOff, connection, transaction);
        AddClaimParameters(command.Parameters, plan.Count);
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = plan.Bound });
        command.Parameters.Add(new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Array | NpgsqlTypes.NpgsqlDbType.Text, TypedValue = plan.Keys });
        command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = plan.PerKey });
        command.Parameters.Add(new NpgsqlParameter<string[]> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Array | NpgsqlTypes.NpgsqlDbType.Text, TypedValue = plan.ReserveKeys ?? [] });
        return command;
    }

    StoredItem IOutcomeHandOff.Read(NpgsqlDataReader reader)
    {
        var item = ReadClaimed(reader, HandOffKeyColumn);
        item.KeyReserved = reader.GetBoolean(HandOffKeyColumn + 1);
        return item;
    }

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
            item.KeyReserveBound = item.KeyReserved ? plan.PerKey : 0;
            Hold(item);
        }

        // A reserve (count M) starts at once only paired with a final end of its key that came meanwhile; it is kept
        // for the next such end if a partner of its key still runs here, and released otherwise.
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

        ReleaseKeyReserves(release ?? [], "no other handler of its key runs on this node, or the node is stopping");
        return [];
    }

    void IOutcomeHandOff.Failed(HandOffPlan plan) => _handOff.Failed(plan);
}
