using System.Diagnostics.CodeAnalysis;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The queue as a cluster (<see cref="IWorkQueueCluster"/>): its fleet-wide settings, changed atomically from any node
/// and announced on the schema's <see cref="StorageSql.SettingsChannel"/>; and, on a consuming node, the cluster loop, which writes
/// the node's row every <c>NodeHeartbeatInterval</c> and follows the fleet-wide worker count (<see cref="ClusterNode"/>).
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T> : IWorkQueueCluster
{
    private const string ClusterLoop = "cluster heartbeat";

    /// <summary>Set when the settings may have changed (a notification, the listener reconnected, a change made here): the cluster loop beats at once.</summary>
    private readonly WakeSignal _settingsChanged = new();
    private ClusterSql? _clusterSql;
    private ClusterNode? _clusterNode;

    private ClusterSql ClusterStatements => _clusterSql ??= new ClusterSql(_sql);

    public async Task<WorkQueueCluster> GetClusterAsync(CancellationToken cancellationToken = default)
    {
        var statements = ClusterStatements;
        var settings = ClusterSettingsRules.Defaults;
        var nodes = new List<WorkQueueClusterNode>();
        var permits = new List<ClusterPermitUse>();
        long granted = 0, inUse = 0, handlersRunning = 0;
        WorkQueueStorageStatistics storage;
        WorkQueuePauses pauses;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            // One round trip: the settings, the live nodes, the stored items by state.
            var batch = new NpgsqlBatch(connection)
            {
                BatchCommands =
                {
                    new NpgsqlBatchCommand(statements.ReadSettings) { Parameters = { new NpgsqlParameter<string> { TypedValue = Name } } },
                    new NpgsqlBatchCommand(statements.LiveNodes) { Parameters = { new NpgsqlParameter<string> { TypedValue = Name } } },
                    new NpgsqlBatchCommand(_sql.Statistics) { Parameters = { new NpgsqlParameter<string> { TypedValue = Name } } },
                    new NpgsqlBatchCommand(statements.ReadPauses) { Parameters = { new NpgsqlParameter<string> { TypedValue = Name }, new NpgsqlParameter<int> { TypedValue = MaxPausedKeys } } },
                },
            };
            await using (batch.ConfigureAwait(false))
            {
                var reader = await batch.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    if (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        settings = ClusterSettingsRules.Read(reader);
                    }

                    await reader.NextResultAsync(cancellationToken).ConfigureAwait(false);
                    while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        nodes.Add(ReadNode(reader));
                        permits.Add(new ClusterPermitUse(reader.GetInt64(12), TimeSpan.FromSeconds(reader.GetDouble(13)), reader.GetDouble(14)));
                        granted += reader.GetInt32(15);
                        inUse += reader.GetInt32(16);
                        handlersRunning += reader.GetInt32(17);
                    }

                    await reader.NextResultAsync(cancellationToken).ConfigureAwait(false);
                    await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                    storage = StatisticsStatement.Read(reader, _options.TimeProvider.GetUtcNow());
                    await reader.NextResultAsync(cancellationToken).ConfigureAwait(false);
                    pauses = await FleetPauses.ReadAsync(reader, cancellationToken).ConfigureAwait(false);
                }
            }
        }

        return new WorkQueueCluster
        {
            QueueName = Name,
            Settings = settings,
            Nodes = nodes,
            Storage = storage,
            LimitUse = new WorkQueueClusterLimitUse
            {
                Running = storage.Running,
                HandlersRunning = handlersRunning,
                WaitingForPermit = permits.Sum(static node => node.WaitingForPermit),
                StartsLastSecond = permits.Sum(static node => node.StartsLastSecond),
                OldestPermitWait = permits.Count == 0 ? TimeSpan.Zero : permits.Max(static node => node.OldestPermitWait),
                PermitsGranted = settings.MaxRunning is null ? 0 : granted,
                PermitsInUse = settings.MaxRunning is null ? 0 : inUse,
            },
            Pauses = pauses,
            ReadAt = storage.ReadAt,
        };
    }

    public async Task<WorkQueueClusterSettings> UpdateSettingsAsync(
        Func<WorkQueueClusterSettings, WorkQueueClusterSettings> change, string changedBy, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(change);
        ArgumentNullException.ThrowIfNull(changedBy);
        if (ClusterSettingsRules.CheckChangedBy(changedBy) is { } invalid)
        {
            throw new ArgumentException(invalid, nameof(changedBy));
        }

        var statements = ClusterStatements;
        WorkQueueClusterSettings previous, stored;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            // Not committed (an invalid change, an exception): rolled back when disposed, the row it inserted with it.
            var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
            await using (transaction.ConfigureAwait(false))
            {
                await ExecuteAsync(new NpgsqlCommand(statements.EnsureSettings, connection, transaction) { Parameters = { Text(Name) } }, cancellationToken).ConfigureAwait(false);
                previous = await ReadSettingsAsync(new NpgsqlCommand(statements.LockSettings, connection, transaction) { Parameters = { Text(Name) } }, cancellationToken).ConfigureAwait(false);
                var next = change(previous) ?? throw new ArgumentNullException(nameof(change), "The change returned no settings.");
                if (ClusterSettingsRules.GetValidationErrors(next, Executor.MaxWorkerCount) is { Count: > 0 } errors)
                {
                    throw new ArgumentException($"Invalid fleet-wide settings for work queue '{Name}': {string.Join(" ", errors)}", nameof(change));
                }

                if (next with { Version = previous.Version, UpdatedAt = previous.UpdatedAt, UpdatedBy = previous.UpdatedBy } == previous)
                {
                    // Nothing changes: nothing is written (rolled back, the row it may have inserted with it), no version,
                    // no notification, no audit entry.
                    return previous;
                }

                var write = new NpgsqlCommand(statements.WriteSettings, connection, transaction)
                {
                    Parameters =
                    {
                        Text(Name),
                        Optional(next.WorkersPerNode),
                        Optional(next.MaxRunning),
                        new NpgsqlParameter<int> { TypedValue = next.MaxRunningPerKey },
                        Optional(next.StartsPerSecond),
                        Optional(next.StartBurst),
                        Text(changedBy),
                        Text(_sql.SettingsChannel),
                        new NpgsqlParameter<bool> { TypedValue = next.FairShare is not null },
                        new NpgsqlParameter<int> { TypedValue = next.FairShare?.DefaultWeight ?? 1 },
                        new NpgsqlParameter<string?> { NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Text, TypedValue = ClusterSettingsRules.WeightsJson(next.FairShare) },
                        Optional(next.FairShare?.MaxRunningPerTenant),
                        Optional(next.FairShare?.StartsPerSecondPerTenant),
                        Optional(next.FairShare?.StartsBurstPerTenant),
                    },
                };
                await using (write.ConfigureAwait(false))
                {
                    var reader = await write.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                    await using (reader.ConfigureAwait(false))
                    {
                        await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                        stored = next with { Version = reader.GetInt64(0), UpdatedAt = reader.GetFieldValue<DateTimeOffset>(1), UpdatedBy = changedBy };
                    }
                }

                await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
            }
        }

        if (_logger.IsEnabled(LogLevel.Information))
        {
            _logger.ClusterSettingsChanged(Name, changedBy, stored.Version, ClusterSettingsRules.Describe(previous, stored));
        }

        _settingsChanged.Set(); // this node applies it without waiting for its own notification
        return stored;

        static NpgsqlParameter<string> Text(string value) => new() { TypedValue = value };
        static NpgsqlParameter Optional<TValue>(TValue? value)
            where TValue : struct => value is { } v ? new NpgsqlParameter<TValue> { TypedValue = v } : new NpgsqlParameter { Value = DBNull.Value, NpgsqlDbType = DbType<TValue>() };
    }

    /// <summary>
    /// What the limits' claim reports for this node's heartbeat row: items held back for a cluster permit, the oldest
    /// one's wait, and starts during the last second.
    /// </summary>
    internal ClusterPermitUse ClusterPermitSnapshot() => new(ClusterPermitWaiting, OldestClusterPermitWait, StartsLastSecond);

    /// <summary>
    /// On a consuming node, at start and before the first claim: reads the fleet-wide settings and applies them, writes
    /// the node's row, and starts the cluster loop. A database that does not answer now is left to the loop.
    /// </summary>
    private void StartCluster()
    {
        var node = _clusterNode = new ClusterNode(Name, NodeName, Executor, ClusterStatements, _options.NodeHeartbeatInterval, _options.TimeProvider.GetUtcNow(), _logger);
        try
        {
            BeatAndApply(node);
            _logger.NodeJoined(Name, node.Name, _options.NodeHeartbeatInterval);
        }
        catch (Exception ex) when (ex is NpgsqlException or InvalidOperationException or TimeoutException)
        {
            if (_health.Failed(ClusterLoop, ex))
            {
                _logger.StorageUnavailable(Name, ClusterLoop, _options.NodeHeartbeatInterval, ex);
            }
        }

        _backgroundThreads.Add(StartThread("cluster", () => RunCluster(node, _background.Token)));
    }

    /// <summary>Writes the node's row every heartbeat interval, and at once when the settings may have changed; applies new settings.</summary>
    private void RunCluster(ClusterNode node, CancellationToken cancellationToken)
    {
        var failureDelay = TimeSpan.FromMilliseconds(100);
        while (!cancellationToken.IsCancellationRequested)
        {
            _settingsChanged.Wait(_options.NodeHeartbeatInterval, cancellationToken);
            if (cancellationToken.IsCancellationRequested)
            {
                return;
            }

            try
            {
                BeatAndApply(node);
                if (_health.Succeeded(ClusterLoop))
                {
                    _logger.StorageRecovered(Name, ClusterLoop);
                }

                failureDelay = TimeSpan.FromMilliseconds(100);
            }
            catch (Exception ex)
            {
                failureDelay = ReportFailure(ClusterLoop, ex, failureDelay, cancellationToken);
                _settingsChanged.Set(); // try again at once after the failure's delay
            }
        }
    }

    /// <summary>
    /// One heartbeat: writes the node's row and reads the settings; if they are new, applies them and writes the row
    /// again, so the cluster view shows what the node runs now; then renews the node's cluster permits.
    /// </summary>
    private void BeatAndApply(ClusterNode node)
    {
        var startedAt = _options.TimeProvider.GetTimestamp(); // a grant renewed below holds from here, on this node's clock
        using var connection = _dataSource.OpenConnection();
        var settings = node.Beat(connection, _room.Held, Volatile.Read(ref _handlersRunning), ClusterPermitSnapshot());
        _pauses.Apply(node.Pause, node.PauseLeft, NodeName); // before the beat that reports the version applied
        if (node.Apply(settings))
        {
            node.Beat(connection, _room.Held, Volatile.Read(ref _handlersRunning), ClusterPermitSnapshot());
        }

        RenewPermits(connection, settings, startedAt);
    }

    /// <summary>
    /// At a clean stop, once the cluster loop has ended: the node's row goes at once. Not tried while a loop of this
    /// node is failing to reach the database (the stop would wait for the connection's timeout): the row expires.
    /// </summary>
    private void LeaveCluster()
    {
        if (_clusterNode is not { } node)
        {
            return;
        }

        _clusterNode = null;
        if (!_health.IsAvailable)
        {
            return;
        }

        try
        {
            using var connection = _dataSource.OpenConnection();
            node.Leave(connection);
            _logger.NodeLeft(Name, node.Name);
        }
        catch (Exception ex) when (ex is NpgsqlException or InvalidOperationException or TimeoutException)
        {
            _logger.NodeLeaveFailed(Name, node.Name, ex);
        }
    }

    /// <summary>Cleanup: deletes the rows of this queue's nodes whose heartbeat expired.</summary>
    private void DeleteExpiredNodes() => Execute(ClusterStatements.DeleteExpiredNodes, Name);

    /// <summary>Counts a posted outcome in this node's row.</summary>
    private void CountForCluster(OutcomeKind kind) => _clusterNode?.Count(kind);

    /// <summary>Handles a notification on the settings channel: a change of this queue's settings wakes the cluster loop.</summary>
    private void OnSettingsNotification(string payload)
    {
        if (string.Equals(payload, Name, StringComparison.Ordinal))
        {
            _settingsChanged.Set();
        }
    }

    private static WorkQueueClusterNode ReadNode(NpgsqlDataReader reader) => new()
    {
        Name = reader.GetString(0),
        Host = reader.GetString(1),
        ProcessId = reader.GetInt32(2),
        Version = reader.GetString(3),
        StartedAt = reader.GetFieldValue<DateTimeOffset>(4),
        LastSeen = reader.GetFieldValue<DateTimeOffset>(5),
        WorkerCount = reader.GetInt32(6),
        InFlight = reader.GetInt64(7),
        Completed = reader.GetInt64(8),
        Failed = reader.GetInt64(9),
        SettingsVersion = reader.GetInt64(10),
        PinnedLocally = reader.GetBoolean(11),
        HandlersRunning = reader.GetInt32(17),
    };

    private static async Task ExecuteAsync(NpgsqlCommand command, CancellationToken cancellationToken)
    {
        await using (command.ConfigureAwait(false))
        {
            await command.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    private static async Task<WorkQueueClusterSettings> ReadSettingsAsync(NpgsqlCommand command, CancellationToken cancellationToken)
    {
        await using (command.ConfigureAwait(false))
        {
            var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
            await using (reader.ConfigureAwait(false))
            {
                await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                return ClusterSettingsRules.Read(reader);
            }
        }
    }

    private static NpgsqlTypes.NpgsqlDbType DbType<TValue>() =>
        typeof(TValue) == typeof(double) ? NpgsqlTypes.NpgsqlDbType.Double : NpgsqlTypes.NpgsqlDbType.Integer;
}
