using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>The background loops: lease heartbeats, statistics, and cleanup of finished items.</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    private const string HeartbeatLoop = "renewing leases";
    private const string MaintenanceLoop = "statistics and cleanup";
    private const int CleanupBatch = 5000;

    private async Task HeartbeatLoopAsync(CancellationToken cancellationToken)
    {
        var interval = _options.LeaseDuration / 3;
        var delay = interval;
        while (!cancellationToken.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(delay, cancellationToken).ConfigureAwait(false);
                if (Volatile.Read(ref _inFlight) > 0 || _outcomes.Pending > 0)
                {
                    await ExecuteAsync(_sql.Heartbeat, cancellationToken, Name, NodeId, _options.LeaseDuration).ConfigureAwait(false);
                }

                if (_health.Succeeded(HeartbeatLoop))
                {
                    _logger.StorageRecovered(Name, HeartbeatLoop);
                }

                delay = interval;
            }
            catch (Exception ex) when (!cancellationToken.IsCancellationRequested)
            {
                // Try again soon: the lease is shorter than three missed beats.
                delay = TimeSpan.FromTicks(Math.Min(interval.Ticks, TimeSpan.FromSeconds(1).Ticks));
                if (_health.Failed(HeartbeatLoop, ex))
                {
                    _logger.StorageUnavailable(Name, HeartbeatLoop, delay, ex);
                }
            }
            catch (OperationCanceledException)
            {
                break;
            }
        }
    }

    private async Task MaintenanceLoopAsync(CancellationToken cancellationToken)
    {
        var nextCleanup = DateTime.UtcNow + _options.CleanupInterval;
        var failureDelay = TimeSpan.FromMilliseconds(100);
        while (!cancellationToken.IsCancellationRequested)
        {
            try
            {
                var statistics = await ReadStatisticsAsync(cancellationToken).ConfigureAwait(false);
                Volatile.Write(ref _statistics, statistics);
                if (DateTime.UtcNow >= nextCleanup)
                {
                    await CleanupAsync(StorageSql.Completed, _options.CompletedRetention, cancellationToken).ConfigureAwait(false);
                    if (_options.DeadLetterRetention != Timeout.InfiniteTimeSpan)
                    {
                        await CleanupAsync(StorageSql.Dead, _options.DeadLetterRetention, cancellationToken).ConfigureAwait(false);
                    }

                    nextCleanup = DateTime.UtcNow + _options.CleanupInterval;
                }

                if (_health.Succeeded(MaintenanceLoop))
                {
                    _logger.StorageRecovered(Name, MaintenanceLoop);
                }

                failureDelay = TimeSpan.FromMilliseconds(100);
                await Task.Delay(_options.StatisticsInterval, cancellationToken).ConfigureAwait(false);
            }
            catch (Exception ex) when (!cancellationToken.IsCancellationRequested)
            {
                Volatile.Write(ref _statistics, Volatile.Read(ref _statistics) with { LastError = ex.GetBaseException().Message });
                failureDelay = await ReportFailureAsync(MaintenanceLoop, ex, failureDelay, cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                break;
            }
        }
    }

    private async Task CleanupAsync(short state, TimeSpan retention, CancellationToken cancellationToken)
    {
        int deleted;
        do
        {
            deleted = await ExecuteAsync(_sql.Cleanup, cancellationToken, Name, state, retention, CleanupBatch).ConfigureAwait(false);
        }
        while (deleted == CleanupBatch && !cancellationToken.IsCancellationRequested);
    }

    private async Task<int> ExecuteAsync(string text, CancellationToken cancellationToken, params object[] parameters)
    {
        var connection = await _dataSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = new NpgsqlCommand(text, connection);
            await using (command.ConfigureAwait(false))
            {
                foreach (var parameter in parameters)
                {
                    command.Parameters.Add(new NpgsqlParameter { Value = parameter });
                }

                return await command.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
            }
        }
    }
}
