using System.Globalization;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The claim of a queue with cluster limits (see <see cref="ClusterPermits"/>), and what it makes visible.</summary>
internal sealed partial class PostgreSqlWorkQueue<T> : IClusterPermitSource
{
    private int _permitWaitReported;

    /// <summary>Gets the ready items this node had idle workers for that its last claim left waiting for a cluster permit.</summary>
    internal long ClusterPermitWaiting => _permits.Waiting;

    /// <summary>Gets how long the oldest of <see cref="ClusterPermitWaiting"/> has waited since it became due; zero when none waits.</summary>
    internal TimeSpan OldestClusterPermitWait => _permits.OldestWait;

    /// <summary>Gets the items this node claimed (each started at once on an idle worker while the queue is limited) during the last second.</summary>
    internal double StartsLastSecond => _permits.StartsLastSecond;

    /// <summary>Gets a value indicating whether the queue had cluster limits at this node's last claim.</summary>
    internal bool IsClusterLimited => _permits.IsLimited;

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

    /// <summary>The queue's limits were found (or found gone) by a claim: switch claims, and say so.</summary>
    private void OnLimitsFound(bool limited)
    {
        if (_permits.SetLimited(limited))
        {
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

    /// <summary>
    /// Claims up to <paramref name="count"/> items (the node's idle workers) under the queue's cluster limits, in one
    /// round trip: a batch of two statements that PostgreSQL runs as one implicit transaction, committed when the batch
    /// ends. The first locks the settings row (claims of limited queues take turns across nodes) and says whether the
    /// queue still has limits; the second, which takes its snapshot only once the first holds the lock (each statement
    /// of a READ COMMITTED transaction takes its own), claims under them. The items go to the executor once the batch
    /// has committed. Finds the limits gone: says so, and the caller claims again at once with the plain claim (what the
    /// second statement claimed meanwhile, under the defaults, is committed and handed over like any claim).
    /// </summary>
    private ClaimResult ClaimLimited(int count)
    {
        var claimed = new List<StoredItem>(Math.Min(count, 64));
        int promoted = 0;
        TimeSpan? nextDue = null;
        long waiting = 0;
        double oldestWait = 0;
        string? bound = null;
        var limited = false;
        var rated = false;
        using (var connection = _dataSource.OpenConnection())
        using (var batch = new NpgsqlBatch(connection))
        {
            var lockSettings = new NpgsqlBatchCommand(_sql.LockSettings);
            lockSettings.Parameters.Add(new NpgsqlParameter<string> { TypedValue = Name });
            batch.BatchCommands.Add(lockSettings);
            var claim = new NpgsqlBatchCommand(_sql.ClaimLimited);
            AddClaimParameters(claim.Parameters, count);
            batch.BatchCommands.Add(claim);

            using var reader = batch.ExecuteReader();
            if (reader.Read())
            {
                limited = reader.GetBoolean(0);
                rated = reader.GetBoolean(1);
            }

            reader.NextResult();
            while (reader.Read())
            {
                if (reader.IsDBNull(0))
                {
                    // The last row: promotions, the next wake-up, and what the limits held back.
                    promoted = reader.GetInt32(2);
                    nextDue = reader.IsDBNull(8) ? null : TimeSpan.FromSeconds(Math.Max(0, reader.GetDouble(8)));
                    waiting = reader.GetInt64(9);
                    oldestWait = reader.GetDouble(10);
                    bound = reader.IsDBNull(11) ? null : reader.GetString(11);
                    continue;
                }

                claimed.Add(ReadClaimed(reader));
            }
        }

        if (!limited)
        {
            OnLimitsFound(false);
            _permits.Claimed(claimed.Count, 0, 0);
            Submit(claimed);
            return new ClaimResult(claimed.Count, promoted, nextDue, LimitsChanged: true);
        }

        // Only a limit's own hold counts as a wait for a permit; ready items the node had no worker for do not.
        _permits.Claimed(claimed.Count, bound is null ? 0 : waiting, bound is null ? 0 : oldestWait, mayClaimAhead: !rated && bound is null);
        if (bound is not null)
        {
            StorageMetrics.ClusterLimitedClaims.Add(1, StorageMetrics.QueueTag(Name), new("boundedwork.storage.cluster.limit", bound));
        }

        Submit(claimed);
        return new ClaimResult(claimed.Count, promoted, nextDue);
    }
}

/// <summary>A queue whose cluster-limit waits the metrics observe.</summary>
internal interface IClusterPermitSource
{
    string QueueName { get; }

    long ClusterPermitWaiting { get; }

    TimeSpan OldestClusterPermitWait { get; }
}
