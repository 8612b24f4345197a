using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Fleet-wide pauses (<see cref="IWorkQueuePauseControl"/>). The database is the truth: a queue's pause is in its
/// settings row, a key's in <c>paused_keys</c>, and every claim statement (the plain claim, the per-key claim and the
/// hand-off) reads them, so no claim that starts after a pause committed takes a paused item, on any node, whether or
/// not the node has heard of it. A queue's pause also bumps the settings version (claims under the old version take
/// nothing) and is announced like a settings change; each node reads it at its next beat (at once, on the
/// notification, else within a heartbeat) and from then on hands back unstarted every item it claimed before (its
/// prefetched and reserved items) instead of starting it. Items already running finish. The argument: docs/durable-invariants.md, I9.
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T> : IWorkQueuePauseControl
{
    /// <summary>The most ordering keys a queue may have paused at once.</summary>
    internal const int MaxPausedKeys = 1000;

    /// <summary>The queue's pause as this node last read it, and when it ends on this node's clock (a timestamp; null: no end).</summary>
    private volatile FleetPauseState? _fleetPause;

    /// <summary>Gets the queue's fleet-wide pause in force on this node, or <see langword="null"/>.</summary>
    internal WorkQueuePause? FleetPause => _fleetPause is { } state && IsInForce(state) ? state.Pause : null;

    public async Task<WorkQueuePauses> GetPausesAsync(CancellationToken cancellationToken = default)
    {
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var read = new NpgsqlCommand(ClusterStatements.ReadPauses, connection)
            {
                Parameters = { new NpgsqlParameter<string> { TypedValue = Name }, new NpgsqlParameter<int> { TypedValue = MaxPausedKeys } },
            };
            await using (read.ConfigureAwait(false))
            {
                return await ReadPausesAsync(read, cancellationToken).ConfigureAwait(false);
            }
        }
    }

    public async Task<WorkQueuePause> PauseAsync(string reason, TimeSpan duration, string changedBy, string? key = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(reason);
        ArgumentNullException.ThrowIfNull(changedBy);
        if (BoundedExecutor.GetPauseReasonError(reason) is { } invalidReason)
        {
            throw new ArgumentException(invalidReason, nameof(reason));
        }

        if (duration != Timeout.InfiniteTimeSpan && (duration <= TimeSpan.Zero || duration > BoundedExecutor.MaxPauseDuration))
        {
            throw new ArgumentOutOfRangeException(nameof(duration), duration, $"A pause's duration must be positive and at most {BoundedExecutor.MaxPauseDuration.TotalDays} days, or Timeout.InfiniteTimeSpan (until resumed).");
        }

        CheckChangedByAndKey(changedBy, key);
        var milliseconds = duration == Timeout.InfiniteTimeSpan ? (double?)null : duration.TotalMilliseconds;
        WorkQueuePause stored;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            if (key is null)
            {
                var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
                await using (transaction.ConfigureAwait(false))
                {
                    await ExecuteAsync(new NpgsqlCommand(ClusterStatements.EnsureSettings, connection, transaction) { Parameters = { Text(Name) } }, cancellationToken).ConfigureAwait(false);
                    var write = new NpgsqlCommand(ClusterStatements.PauseQueue, connection, transaction)
                    {
                        Parameters = { Text(Name), Text(reason), Milliseconds(milliseconds), Text(changedBy), Text(_sql.SettingsChannel) },
                    };
                    await using (write.ConfigureAwait(false))
                    {
                        var reader = await write.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                        await using (reader.ConfigureAwait(false))
                        {
                            await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                            stored = new WorkQueuePause { Reason = reason, Since = reader.GetFieldValue<DateTimeOffset>(0), Until = Time(reader, 1), By = changedBy };
                        }
                    }

                    await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
                }

                _settingsChanged.Set(); // this node applies it without waiting for its own notification
            }
            else
            {
                var write = new NpgsqlCommand(ClusterStatements.PauseKey, connection)
                {
                    Parameters = { Text(Name), Text(key), Text(reason), Milliseconds(milliseconds), Text(changedBy), new NpgsqlParameter<int> { TypedValue = MaxPausedKeys } },
                };
                await using (write.ConfigureAwait(false))
                {
                    var reader = await write.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                    await using (reader.ConfigureAwait(false))
                    {
                        if (!await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                        {
                            throw new ArgumentException(
                                string.Create(CultureInfo.InvariantCulture, $"Work queue '{Name}' already has {MaxPausedKeys} paused ordering keys, the most it may have: resume some, or pause the whole queue."),
                                nameof(key));
                        }

                        stored = new WorkQueuePause { Key = key, Reason = reason, Since = reader.GetFieldValue<DateTimeOffset>(0), Until = Time(reader, 1), By = changedBy };
                    }
                }
            }
        }

        if (_logger.IsEnabled(LogLevel.Information))
        {
            _logger.FleetPauseStored(Name, changedBy, Target(key), stored.Until?.ToString("O", CultureInfo.InvariantCulture) ?? "resumed", reason);
        }

        return stored;
    }

    public async Task<WorkQueuePause?> ResumeAsync(string changedBy, string? key = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(changedBy);
        CheckChangedByAndKey(changedBy, key);
        WorkQueuePause? ended = null;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = key is null
                ? new NpgsqlCommand(ClusterStatements.ResumeQueue, connection) { Parameters = { Text(Name), Text(changedBy), Text(_sql.SettingsChannel), Text(_sql.NotifyChannel) } }
                : new NpgsqlCommand(ClusterStatements.ResumeKey, connection) { Parameters = { Text(Name), Text(key), Text(_sql.NotifyChannel) } };
            await using (command.ConfigureAwait(false))
            {
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    if (await reader.ReadAsync(cancellationToken).ConfigureAwait(false) && reader.GetBoolean(4))
                    {
                        ended = new WorkQueuePause
                        {
                            Key = key,
                            Reason = reader.GetString(0),
                            Since = reader.GetFieldValue<DateTimeOffset>(1),
                            Until = Time(reader, 2),
                            By = reader.IsDBNull(3) ? null : reader.GetString(3),
                        };
                    }
                }
            }
        }

        if (key is null)
        {
            _settingsChanged.Set();
        }

        if (ended is not null && _logger.IsEnabled(LogLevel.Information))
        {
            _logger.FleetResumeStored(Name, changedBy, Target(key), ended.By ?? "unknown", ended.Reason);
        }

        return ended;
    }

    /// <summary>
    /// On the cluster loop, after a beat read the settings: takes the queue's pause as read (the database's word), and
    /// logs when this node starts or stops honouring one. Called before the node reports the settings version it
    /// applied, so a node that reports a pause's version holds no item it would start under it.
    /// </summary>
    private void ApplyFleetPause(WorkQueuePause? pause, TimeSpan? left)
    {
        var was = FleetPause;
        _fleetPause = pause is null ? null : new FleetPauseState(pause, left is { } l ? _options.TimeProvider.GetTimestamp() + (long)(l.TotalSeconds * _options.TimeProvider.TimestampFrequency) : null);
        if (pause is not null && was is null)
        {
            _logger.FleetPauseApplied(Name, pause.By ?? "unknown", pause.Reason, NodeName);
        }
        else if (pause is null && was is not null)
        {
            _logger.FleetPauseEnded(Name, NodeName);
            _claimLoop.Wake();
        }
    }

    /// <summary>The problem the health check reports while the queue is paused fleet-wide; <see langword="null"/> otherwise.</summary>
    private string? FleetPauseProblem() => FleetPause is { } pause
        ? string.Create(CultureInfo.InvariantCulture,
            $"paused fleet-wide by {pause.By ?? "unknown"} since {pause.Since:u}{(pause.Until is { } until ? $" until {until:u}" : string.Empty)}: {pause.Reason}")
        : null;

    private bool IsInForce(FleetPauseState state) => state.EndsAt is not { } end || _options.TimeProvider.GetTimestamp() < end;

    private static void CheckChangedByAndKey(string changedBy, string? key)
    {
        if (ClusterSettingsRules.CheckChangedBy(changedBy) is { } invalid)
        {
            throw new ArgumentException(invalid, nameof(changedBy));
        }

        if (key is not null)
        {
            if (key.Length == 0)
            {
                throw new ArgumentException("The ordering key to pause or resume must not be empty.", nameof(key));
            }

            ValidateKey(key, "ordering key", MaxOrderingKeyLength, nameof(key));
        }
    }

    private static async Task<WorkQueuePauses> ReadPausesAsync(NpgsqlCommand read, CancellationToken cancellationToken)
    {
        var reader = await read.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
        await using (reader.ConfigureAwait(false))
        {
            return await ReadPausesAsync(reader, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Reads the rows of <see cref="ClusterSql.ReadPauses"/> from the reader's current result.</summary>
    private static async Task<WorkQueuePauses> ReadPausesAsync(NpgsqlDataReader reader, CancellationToken cancellationToken)
    {
        WorkQueuePause? queue = null;
        var keys = new List<WorkQueuePause>();
        var readAt = DateTimeOffset.UtcNow; // the database's clock when a row says it
        {
            while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
            {
                var pause = new WorkQueuePause
                {
                    Key = reader.IsDBNull(0) ? null : reader.GetString(0),
                    Reason = reader.GetString(1),
                    Since = reader.GetFieldValue<DateTimeOffset>(2),
                    Until = Time(reader, 3),
                    By = reader.IsDBNull(4) ? null : reader.GetString(4),
                };
                readAt = reader.GetFieldValue<DateTimeOffset>(5);
                if (pause.Key is null)
                {
                    queue = pause;
                }
                else
                {
                    keys.Add(pause);
                }
            }
        }

        return new WorkQueuePauses { Queue = queue, Keys = keys, ReadAt = readAt };
    }

    private static string Target(string? key) => key is null ? "the queue" : "ordering key '" + key + "'";

    private static DateTimeOffset? Time(NpgsqlDataReader reader, int ordinal) => reader.IsDBNull(ordinal) ? null : reader.GetFieldValue<DateTimeOffset>(ordinal);

    private static NpgsqlParameter<string> Text(string value) => new() { TypedValue = value };

    private static NpgsqlParameter Milliseconds(double? value) =>
        value is { } v ? new NpgsqlParameter<double> { TypedValue = v } : new NpgsqlParameter { Value = DBNull.Value, NpgsqlDbType = NpgsqlDbType.Double };

    /// <summary>A pause as a node holds it: the pause, and when it ends on the node's clock (a <see cref="TimeProvider"/> timestamp).</summary>
    private sealed record FleetPauseState(WorkQueuePause Pause, long? EndsAt);
}
