using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The background loops: statistics, and cleanup of finished items (the lease heartbeat: <see cref="LeaseKeeper"/>).</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    private const string MaintenanceLoop = "statistics and cleanup";
    private const int CleanupBatch = 5000;

    private FairClaimSql? _fairSql;

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
                    CleanupTenantState(cancellationToken);

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

    /// <summary>
    /// Removes the fair claims' rows of tenants that mean what no row means (virtual times at or below the queue's
    /// clock, the clock once no tenant row is left, full buckets; see <see cref="FairClaimSql"/>, "Cleanup"), under the
    /// fair claims' lock, in batches: a queue that never ran fair share finds no row.
    /// </summary>
    private void CleanupTenantState(CancellationToken cancellationToken)
    {
        var fair = _fairSql ??= new FairClaimSql(_sql);
        int deleted;
        do
        {
            using var connection = _dataSource.OpenConnection();
            using var transaction = connection.BeginTransaction();
            Execute(connection, transaction, fair.Lock, Name);
            deleted = Math.Max(
                Execute(connection, transaction, fair.CleanupVtime, Name, CleanupBatch),
                Execute(connection, transaction, fair.CleanupTokens, Name, CleanupBatch));
            Execute(connection, transaction, fair.ResetClock, Name);
            transaction.Commit();
        }
        while (deleted == CleanupBatch && !cancellationToken.IsCancellationRequested);
    }

    private int Execute(string text, params object[] parameters)
    {
        using var connection = _dataSource.OpenConnection();
        return Execute(connection, null, text, parameters);
    }

    private static int Execute(NpgsqlConnection connection, NpgsqlTransaction? transaction, string text, params object[] parameters)
    {
        using var command = new NpgsqlCommand(text, connection, transaction);
        foreach (var parameter in parameters)
        {
            command.Parameters.Add(new NpgsqlParameter { Value = parameter });
        }

        return command.ExecuteNonQuery();
    }
}
