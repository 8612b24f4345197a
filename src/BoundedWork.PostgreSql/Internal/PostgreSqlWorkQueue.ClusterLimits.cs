using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The claims and grants of a queue with cluster limits (see <see cref="ClusterPermits"/>), and what they make visible.</summary>
internal sealed partial class PostgreSqlWorkQueue<T> : IClusterPermitSource
{
    private int _permitWaitReported;
    private PermitGrantSql? _grantSql;

    /// <summary>Gets the ready items this node had idle workers for that its last claim left waiting for a cluster permit.</summary>
    internal long ClusterPermitWaiting => _permits.Waiting;

    /// <summary>Gets how long the oldest of <see cref="ClusterPermitWaiting"/> has waited since it became due; zero when none waits.</summary>
    internal TimeSpan OldestClusterPermitWait => _permits.OldestWait;

    /// <summary>Gets the items this node claimed during the last second.</summary>
    internal double StartsLastSecond => _permits.StartsLastSecond;

    /// <summary>Gets the queue's per-key limit as this node last applied it.</summary>
    internal int ClusterPerKey => _permits.PerKey;

    /// <summary>Gets a value indicating whether the queue had cluster limits at this node's last claim.</summary>
    internal bool IsClusterLimited => _permits.IsLimited;

    /// <summary>Gets the running permits granted to this node (null: no running limit; zero while its grant has lapsed).</summary>
    internal int? ClusterPermitsAllowed => _permits.Allowed;

    /// <summary>Gets the permits this node has in use (items claimed whose handler has not ended).</summary>
    internal int ClusterPermitsInUse => _permits.InUse;

    /// <summary>Gets a value indicating whether this node's cluster permits lapsed (it could not renew them in time).</summary>
    internal bool IsClusterPermitGrantLapsed => _permits.IsLapsed;

    long IClusterPermitSource.ClusterPermitWaiting => ClusterPermitWaiting;

    TimeSpan IClusterPermitSource.OldestClusterPermitWait => OldestClusterPermitWait;

    /// <summary>The problem the health check reports while items wait for a cluster permit longer than the threshold; <see langword="null"/> otherwise.</summary>
    private string? ClusterPermitProblem()
    {
        var threshold = _options.ClusterPermitWaitThreshold;
        var oldest = OldestClusterPermitWait;
        if (threshold == Timeout.InfiniteTimeSpan || oldest <= threshold)
        {
            Volatile.Write(ref _permitWaitReported, 0);
            return null;
        }

        if (Interlocked.Exchange(ref _permitWaitReported, 1) == 0)
        {
            _logger.ClusterPermitWaitLong(Name, ClusterPermitWaiting, oldest, threshold);
        }

        return string.Create(CultureInfo.InvariantCulture,
            $"{ClusterPermitWaiting} items have waited for a cluster permit for up to {oldest}, longer than the ClusterPermitWaitThreshold of {threshold}.");
    }

    /// <summary>
    /// Claims up to <paramref name="wanted"/> items (what the node may hold now) under its cluster permits: takes the
    /// free local permits and whole tokens, then runs the plain claim (or, for a queue with <c>max_running_per_key</c>
    /// above one, the keyed claim) for that many, with no lock. With nothing to take, the plain claim runs for none, to
    /// count what waits and to see the settings version. Finds a version other than its grant's: claims nothing, and
    /// the cluster loop renews the grant now.
    /// </summary>
    private ClaimResult ClaimUnderPermits(int wanted)
    {
        // Under a start rate, no more than the idle workers: every item claimed starts at once, and spends its token then.
        var take = _permits.Take(_permits.StartRoom(wanted, Executor.Settings.WorkerCount));
        if (take.LapsedNow)
        {
            _logger.PermitGrantLapsed(Name, _options.NodeHeartbeatInterval * 3);
            Apply(_permits.Rebalance()); // the lapsed grant's reserve goes back to ready
        }

        // The running limit binds: up to one more item per permit held, kept unstarted until a permit frees (the
        // plain claim only: the keyed claim's per-key count is the statement's own).
        var room = _permits.PerKey <= 1 ? _permits.ReserveSlots(wanted, take.Count) : 0;

        var claimed = new List<StoredItem>(Math.Min(take.Count, 64));
        int promoted = 0;
        TimeSpan? nextDue = null;
        long? version = null;
        long waiting = 0;
        double oldestWait = 0;
        long heldByKey = 0;
        double oldestHeldByKey = 0;
        var perKey = _permits.PerKey;
        var keyed = take.Count > 0 && perKey > 1;
        var read = false;
        try
        {
            using var connection = _dataSource.OpenConnection();

            using var command = new NpgsqlCommand(keyed ? KeyedStatements.ClaimPerKey : _sql.Claim, connection);
            AddClaimParameters(command.Parameters, take.Count + room);
            if (keyed)
            {
                command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = perKey });
            }
            else
            {
                command.Parameters.Add(new NpgsqlParameter<long> { TypedValue = take.Version });
                command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = take.Bound ? wanted : 0 });
            }

            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                if (ClaimRows.IsSummary(reader))
                {
                    // The last row: promotions, the next wake-up and, from the plain claim, the version and what waits.
                    var summary = keyed ? KeyedClaimRow.ReadSummary(reader) : PlainClaimRow.ReadSummary(reader);
                    promoted = summary.Promoted;
                    nextDue = summary.NextDue;
                    version = summary.Version;
                    waiting = summary.Waiting;
                    oldestWait = summary.OldestWaitSeconds;
                    heldByKey = summary.HeldByKey;
                    oldestHeldByKey = summary.OldestHeldByKeySeconds;
                    continue;
                }

                // The plain claim's rows carry their place in the claim order (the reserve starts them in it).
                claimed.Add(keyed ? KeyedClaimRow.ReadItem(this, reader) : PlainClaimRow.ReadItem(this, reader));
            }

            read = true;
        }
        finally
        {
            // A claim that failed after reading some rows hands none of them to the executor: every permit (and the
            // claim tokens taken with them) goes back. (If it committed, those rows are leased to this node but not held:
            // not renewed, they are reaped.)
            _permits.Return(take.Count - (read ? Math.Min(claimed.Count, take.Count) : 0), take.Rated);
            _permits.ReserveSlotsDone(room);
        }

        if (claimed.Count > take.Count)
        {
            // The first items in the claim order (highest priority, then earliest due, then oldest) hold the permits; the
            // rest go to the reserve, held by the node but not started, and kept in that order.
            claimed.Sort(StoredItem.CompareClaimOrder);
            var reserved = claimed.GetRange(take.Count, claimed.Count - take.Count);
            claimed.RemoveRange(take.Count, reserved.Count);
            StorageMetrics.Claimed.Add(reserved.Count, StorageMetrics.QueueTag(Name));
            foreach (var item in reserved)
            {
                Hold(item);
            }

            Apply(_permits.Reserve(reserved));
        }

        if (version is long seen && _permits.Stale(seen))
        {
            // The settings changed (or were never read): no claim starts under the old grant; renew it now.
            _settingsChanged.Set();
            Submit(claimed);
            return new ClaimResult(claimed.Count, promoted, nextDue);
        }

        if (keyed && take.Bound && claimed.Count == take.Count)
        {
            // The keyed claim does not count the ready items; it found all its permits let it take: the node had room
            // for the items its permits held back (how long they waited is not known here).
            waiting = wanted - take.Count;
        }

        waiting = take.Bound ? Math.Min(waiting, wanted - take.Count) : 0;
        oldestWait = take.Bound ? oldestWait : 0;
        var limit = _permits.Allowed is int allowed && _permits.InUse >= allowed ? "max_running" : "starts_per_second";
        if (heldByKey > 0)
        {
            // Ready items the node had permits for that the per-key rule held back (their keys run M items): they wait
            // for a permit of their key.
            limit = waiting > 0 ? limit : "max_running_per_key";
            waiting += heldByKey;
            oldestWait = Math.Max(oldestWait, oldestHeldByKey);
        }

        _permits.Claimed(claimed.Count, waiting, oldestWait);
        if (waiting > 0)
        {
            StorageMetrics.ClusterLimitedClaims.Add(1, StorageMetrics.QueueTag(Name), new("boundedwork.storage.cluster.limit", limit));
            if (_permits.ShouldRenewEarly(_options.NodeHeartbeatInterval / 10))
            {
                _settingsChanged.Set(); // short of permits: ask for more now, not at the next heartbeat
            }

            // Under a start rate, wake when the next token is due (rounded up to the wait's millisecond, so as not to wake
            // just before it), not at the next poll; a token that came while the statement ran is claimed at once.
            if (take.RateBound && _permits.TimeToNextToken() is { } token && (nextDue is null || token < nextDue))
            {
                nextDue = TimeSpan.FromMilliseconds(Math.Ceiling(token.TotalMilliseconds));
            }
        }

        Submit(claimed);
        return new ClaimResult(claimed.Count, promoted, nextDue) { Requested = take.Count };
    }

    /// <summary>
    /// The cluster loop's renewal of this node's permit grant, on the heartbeat's connection right after its beat
    /// (<paramref name="startedAt"/>: the node's clock before the beat was sent). A queue without a running or rate
    /// limit needs no grant (and no lock); otherwise one short transaction locks the settings row, reads the other live
    /// nodes' grants and the running rows of nodes without one, and writes this node's grant.
    /// </summary>
    private void RenewPermits(NpgsqlConnection connection, WorkQueueClusterSettings settings, long startedAt)
    {
        var wasLimited = _permits.IsLimited;
        var hadGrant = _permits.Allowed is not null || _permits.TimeToNextToken() is not null;
        if (settings.MaxRunning is null && settings.StartsPerSecond is null)
        {
            if (hadGrant)
            {
                WriteGrant(connection, null, new PermitGrant(null, _permits.InUse, 0, 0, 0));
            }

            _permits.NoGrant(settings.MaxRunningPerKey, settings.Version);
            Apply(_permits.Rebalance()); // no running limit: the reserve goes back to ready
            ReleasePrefetchedNoLongerAllowed(); // a lowered per-key limit binds the prefetched items held
            ReportLimits(wasLimited);
            _wake.Set();
            return;
        }

        var statements = _grantSql ??= new PermitGrantSql(_sql);
        using var transaction = connection.BeginTransaction();
        GrantLimits limits;
        int perKey;
        long version;
        using (var lockSettings = new NpgsqlCommand(statements.LockSettings, connection, transaction) { Parameters = { new NpgsqlParameter<string> { TypedValue = Name } } })
        using (var reader = lockSettings.ExecuteReader())
        {
            if (!reader.Read())
            {
                return; // no row: the settings read by the beat were the defaults; nothing to grant
            }

            limits = new GrantLimits(reader.IsDBNull(0) ? null : reader.GetInt32(0), reader.IsDBNull(1) ? null : reader.GetDouble(1), reader.IsDBNull(2) ? 0 : reader.GetInt32(2));
            perKey = reader.GetInt32(3);
            version = reader.GetInt64(4);
        }

        var others = new List<NodeGrant>();
        long dead = 0;
        var node = _clusterNode!;
        using (var read = new NpgsqlCommand(statements.ReadGrants, connection, transaction)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = Name },
                new NpgsqlParameter<string> { TypedValue = node.Name },
                new NpgsqlParameter<string> { TypedValue = NodeId },
            },
        })
        using (var reader = read.ExecuteReader())
        {
            while (reader.Read())
            {
                if (reader.IsDBNull(0))
                {
                    dead = reader.GetInt64(6);
                    continue;
                }

                others.Add(new NodeGrant(reader.GetString(0), reader.GetInt32(1), reader.GetInt32(2), reader.GetInt32(3), reader.GetDouble(4), reader.GetInt32(5)));
            }
        }

        var self = new NodeGrant(node.Name, Executor.Settings.WorkerCount, ClaimLimit(), 0, 0, 0);
        var grant = PermitAllocation.Allocate(limits, self, 0, others, dead);
        var inUse = _permits.ShrinkTo(grant);
        grant = grant with { Stored = Math.Max(grant.Allowed ?? inUse, inUse) };
        if (!WriteGrant(connection, transaction, grant))
        {
            return; // the row expired meanwhile: the next beat writes it again, then the grant
        }

        transaction.Commit();
        var lifetime = _options.NodeHeartbeatInterval * 3;
        if (_permits.Granted(grant, limits, perKey, version, startedAt, lifetime))
        {
            _logger.PermitGrantRestored(Name);
        }

        Apply(_permits.Rebalance()); // a grown grant starts reserved items now; a shrunk one releases what it no longer covers
        ReleasePrefetchedNoLongerAllowed(); // a running or rate limit set: no prefetched item starts

        if (_options.TimeProvider.GetElapsedTime(startedAt) >= lifetime)
        {
            _settingsChanged.Set(); // the renewal took longer than the grant lives (it waited for the lock): renew again now
        }

        if (_logger.IsEnabled(LogLevel.Debug))
        {
            _logger.PermitGrantRenewed(Name, grant.Allowed ?? -1, inUse, grant.Rate, grant.Burst);
        }

        ReportLimits(wasLimited);
        _wake.Set();
    }

    /// <summary>Writes this node's grant into its row; returns whether the row was live.</summary>
    private bool WriteGrant(NpgsqlConnection connection, NpgsqlTransaction? transaction, PermitGrant grant)
    {
        var statements = _grantSql ??= new PermitGrantSql(_sql);
        using var write = new NpgsqlCommand(statements.WriteGrant, connection, transaction)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = Name },
                new NpgsqlParameter<string> { TypedValue = _clusterNode!.Name },
                new NpgsqlParameter<string> { TypedValue = NodeId },
                new NpgsqlParameter<int> { TypedValue = ClaimLimit() },
                new NpgsqlParameter<int> { TypedValue = grant.Stored },
                new NpgsqlParameter<int> { TypedValue = _permits.InUse },
                new NpgsqlParameter<double> { TypedValue = grant.Rate },
                new NpgsqlParameter<int> { TypedValue = grant.Burst },
            },
        };
        return write.ExecuteNonQuery() == 1;
    }

    /// <summary>Logs that the queue's cluster limits were set or lifted, when that changed.</summary>
    private void ReportLimits(bool wasLimited)
    {
        var limited = _permits.IsLimited;
        if (limited == wasLimited)
        {
            return;
        }

        if (limited)
        {
            _logger.ClusterLimitsApplied(Name);
        }
        else
        {
            _logger.ClusterLimitsLifted(Name);
        }
    }
}

/// <summary>A queue whose cluster-limit waits the metrics observe.</summary>
internal interface IClusterPermitSource
{
    string QueueName { get; }

    long ClusterPermitWaiting { get; }

    TimeSpan OldestClusterPermitWait { get; }
}
