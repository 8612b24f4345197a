using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The claims and grants of a queue with cluster limits (see <see cref="ClusterPermits"/>), and what they make visible.</summary>
internal sealed partial class PostgreSqlWorkQueue<T> : IClusterPermitSource
{
    private int _permitWaitReported;

    /// <summary>The cluster rate limiters created on this queue and not yet disposed: disposed with it (they use its data source).</summary>
    private readonly List<ClusterRateLimiter> _rateLimiters = [];
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

            _permits.NoGrant(settings.MaxRunningPerKey, settings.Version, settings.FairShare is not null, settings.FairShare?.StartsPerSecondPerTenant is not null);
            Apply(_permits.Rebalance()); // no running limit: the reserve goes back to ready
            ReleasePrefetchedNoLongerAllowed(); // a lowered per-key limit binds the prefetched items held
            ReportLimits(wasLimited);
            _claimLoop.Wake();
            return;
        }

        var statements = _grantSql ??= new PermitGrantSql(_sql);
        using var transaction = connection.BeginTransaction();
        GrantLimits limits;
        int perKey;
        long version;
        bool fairShare;
        bool tenantRated;
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
            fairShare = reader.GetBoolean(5);
            tenantRated = !reader.IsDBNull(6);
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
        if (_permits.Granted(grant, limits, perKey, version, startedAt, lifetime, fairShare, tenantRated))
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
        _claimLoop.Wake();
    }

    public System.Threading.RateLimiting.RateLimiter CreateClusterRateLimiter(PostgreSqlClusterRateLimiterOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        var context = new ClusterRateLimiterContext(Name, _dataSource, ClusterStatements, new PermitGrantSql(_sql), _options.NodeHeartbeatInterval, _options.TimeProvider, _logger);
        lock (_rateLimiters)
        {
            ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
            var limiter = new ClusterRateLimiter(context, new PostgreSqlClusterRateLimiterOptions { PermitLimit = options.PermitLimit, QueueLimit = options.QueueLimit, Name = options.Name },
                disposed => { lock (_rateLimiters) { _rateLimiters.Remove(disposed); } });
            _rateLimiters.Add(limiter);
            return limiter;
        }
    }

    private void DisposeClusterRateLimiters()
    {
        ClusterRateLimiter[] limiters;
        lock (_rateLimiters)
        {
            limiters = [.. _rateLimiters];
        }

        foreach (var limiter in limiters)
        {
            limiter.Dispose();
        }
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
