using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The background loops: lease heartbeats, statistics, and cleanup of finished items.</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    private const string HeartbeatLoop = "renewing leases";
    private const string MaintenanceLoop = "statistics and cleanup";
    private const int CleanupBatch = 5000;

    private void RunHeartbeats(CancellationToken cancellationToken)
    {
        var interval = _options.LeaseDuration / 3;
        var delay = interval;
        while (!cancellationToken.WaitHandle.WaitOne(delay))
        {
            try
            {
                if (!_leases.IsEmpty)
                {
                    RenewLeases();
                }

                if (_health.Succeeded(HeartbeatLoop))
                {
                    _logger.StorageRecovered(Name, HeartbeatLoop);
                }

                delay = interval;
            }
            catch (Exception ex)
            {
                // Try again soon: the lease is shorter than three missed beats.
                delay = TimeSpan.FromTicks(Math.Min(interval.Ticks, TimeSpan.FromSeconds(1).Ticks));
                if (_health.Failed(HeartbeatLoop, ex))
                {
                    _logger.StorageUnavailable(Name, HeartbeatLoop, delay, ex);
                }
            }
        }
    }

    /// <summary>
    /// Renews the leases of the deliveries this node holds (by id and delivery token: a row leased to this node that it
    /// does not hold, left by a claim or an outcome whose answer was lost, is left to expire and be reaped); the items
    /// among them that someone asked to cancel (a notification this node's listener missed while it reconnected) get
    /// their cancellation now.
    /// </summary>
    private void RenewLeases()
    {
        var held = _leases.Snapshot();
        List<long>? cancelled = null;
        using (var connection = _dataSource.OpenConnection())
        using (var command = new NpgsqlCommand(_sql.Heartbeat, connection))
        {
            command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = Name });
            command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = NodeId });
            command.Parameters.Add(new NpgsqlParameter<TimeSpan> { TypedValue = _options.LeaseDuration });
            command.Parameters.Add(new NpgsqlParameter<long[]> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Array | NpgsqlTypes.NpgsqlDbType.Bigint, TypedValue = [.. held.Select(lease => lease.Key)] });
            command.Parameters.Add(new NpgsqlParameter<long[]> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Array | NpgsqlTypes.NpgsqlDbType.Bigint, TypedValue = [.. held.Select(lease => lease.Value)] });
            using var reader = command.ExecuteReader();
            while (reader.Read())
            {
                (cancelled ??= []).Add(reader.GetInt64(0));
            }
        }

        foreach (var id in cancelled ?? [])
        {
            OnCancellationRequested(id);
        }
    }

    /// <summary>Reads the statistics every <c>StatisticsInterval</c> and cleans up every <c>CleanupInterval</c>, each on its own schedule.</summary>
    private void RunMaintenance(CancellationToken cancellationToken)
    {
        var statistics = new LoopSchedule(_options.TimeProvider, _options.StatisticsInterval, dueNow: true);
        var cleanup = new LoopSchedule(_options.TimeProvider, _options.CleanupInterval, dueNow: false);
        var failureDelay = TimeSpan.FromMilliseconds(100);
        while (!cancellationToken.IsCancellationRequested)
        {
            try
            {
                if (statistics.IsDue)
                {
                    Volatile.Write(ref _statistics, ReadStatistics());
                    statistics.Restart();
                }

                if (cleanup.IsDue)
                {
                    Cleanup(StorageSql.Completed, _options.CompletedRetention, cancellationToken);
                    Cleanup(StorageSql.Cancelled, _options.CompletedRetention, cancellationToken);
                    if (_options.DeadLetterRetention != Timeout.InfiniteTimeSpan)
                    {
                        Cleanup(StorageSql.Dead, _options.DeadLetterRetention, cancellationToken);
                    }

                    DeleteExpiredNodes();

                    cleanup.Restart();
                }

                if (_health.Succeeded(MaintenanceLoop))
                {
                    _logger.StorageRecovered(Name, MaintenanceLoop);
                }

                failureDelay = TimeSpan.FromMilliseconds(100);
                var (untilStatistics, untilCleanup) = (statistics.Remaining, cleanup.Remaining);
                var wait = untilStatistics < untilCleanup ? untilStatistics : untilCleanup;
                if (wait > TimeSpan.Zero)
                {
                    cancellationToken.WaitHandle.WaitOne(wait);
                }
            }
            catch (Exception ex)
            {
                Volatile.Write(ref _statistics, Volatile.Read(ref _statistics) with { LastError = ex.GetBaseException().Message });
                failureDelay = ReportFailure(MaintenanceLoop, ex, failureDelay, cancellationToken);
            }
        }
    }

    private void Cleanup(short state, TimeSpan retention, CancellationToken cancellationToken)
    {
        int deleted;
        do
        {
            deleted = Execute(_sql.Cleanup, Name, state, retention, CleanupBatch);
        }
        while (deleted == CleanupBatch && !cancellationToken.IsCancellationRequested);
    }

    private int Execute(string text, params object[] parameters)
    {
        using var connection = _dataSource.OpenConnection();
        using var command = new NpgsqlCommand(text, connection);
        foreach (var parameter in parameters)
        {
            command.Parameters.Add(new NpgsqlParameter { Value = parameter });
        }

        return command.ExecuteNonQuery();
    }
}
