using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// A queue's fleet-wide pauses: stores a pause or a resume of the queue or of one ordering key, reads them, and holds
/// the queue's pause as this node last read it (<see cref="InForce"/>).
/// </summary>
/// <remarks>
/// <para>
/// <b>Invariant (docs/durable-invariants.md, I9).</b> The database is the truth: a queue's pause is in its settings
/// row, a key's in <c>paused_keys</c>, and every claim statement (the plain claim, the per-key claim and the hand-off)
/// reads them, so no claim that starts after a pause committed takes a paused item, on any node, whether or not the
/// node has heard of it. A queue's pause also bumps the settings version (claims under the old version take nothing)
/// and is announced like a settings change; each node reads it at its next beat (at once, on the notification, else
/// within a heartbeat) and from then on hands back unstarted every item it claimed before (its prefetched and reserved
/// items) instead of starting it. Items already running finish.
/// </para>
/// <para>
/// <b>State and locks.</b> One volatile reference, the pause in force on this node, written only by the cluster loop
/// (<see cref="Apply"/>) and read by the claim loop and the workers. No lock. The arguments are checked by the queue
/// (its facade) before they reach this type.
/// </para>
/// </remarks>
internal sealed class FleetPauses
{
    /// <summary>The most ordering keys a queue may have paused at once.</summary>
    public const int MaxPausedKeys = 1000;

    private readonly string _queue;
    private readonly NpgsqlDataSource _source;
    private readonly Func<ClusterSql> _statements;
    private readonly string _settingsChannel;
    private readonly string _notifyChannel;
    private readonly TimeProvider _time;
    private readonly ILogger _logger;
    private readonly Action _queuePauseChanged;
    private readonly Action _queuePauseEnded;

    /// <summary>The queue's pause as this node last read it, and when it ends on this node's clock (a timestamp; null: no end).</summary>
    private volatile PauseState? _state;

    /// <param name="queue">The queue's name.</param>
    /// <param name="source">The pool of the asynchronous API.</param>
    /// <param name="statements">The queue's cluster statements (made on first use).</param>
    /// <param name="settingsChannel">The channel a settings change is announced on.</param>
    /// <param name="notifyChannel">The channel new ready items are announced on (a resumed key's items are).</param>
    /// <param name="time">The queue's clock.</param>
    /// <param name="logger">The queue's logger.</param>
    /// <param name="queuePauseChanged">Called after this node stored a pause or a resume of the whole queue: the node reads it at once.</param>
    /// <param name="queuePauseEnded">Called when this node stops honouring the queue's pause: claims may start again.</param>
    public FleetPauses(string queue, NpgsqlDataSource source, Func<ClusterSql> statements, string settingsChannel, string notifyChannel, TimeProvider time, ILogger logger, Action queuePauseChanged, Action queuePauseEnded)
    {
        _queue = queue;
        _source = source;
        _statements = statements;
        _settingsChannel = settingsChannel;
        _notifyChannel = notifyChannel;
        _time = time;
        _logger = logger;
        _queuePauseChanged = queuePauseChanged;
        _queuePauseEnded = queuePauseEnded;
    }

    /// <summary>Gets the queue's fleet-wide pause in force on this node, or <see langword="null"/>.</summary>
    public WorkQueuePause? InForce => _state is { } state && (state.EndsAt is not { } end || _time.GetTimestamp() < end) ? state.Pause : null;

    /// <summary>The problem the health check reports while the queue is paused fleet-wide; <see langword="null"/> otherwise.</summary>
    public string? Problem => InForce is { } pause
        ? string.Create(CultureInfo.InvariantCulture,
            $"paused fleet-wide by {pause.By ?? "unknown"} since {pause.Since:u}{(pause.Until is { } until ? $" until {until:u}" : string.Empty)}: {pause.Reason}")
        : null;

    /// <summary>The parameters of <see cref="ClusterSql.ReadPauses"/> for this queue.</summary>
    public NpgsqlParameter[] ReadParameters => [new NpgsqlParameter<string> { TypedValue = _queue }, new NpgsqlParameter<int> { TypedValue = MaxPausedKeys }];

    /// <summary>Reads the queue's pauses and its paused keys from the database.</summary>
    public async Task<WorkQueuePauses> ReadAsync(CancellationToken cancellationToken)
    {
        var connection = await _source.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var read = new NpgsqlCommand(_statements().ReadPauses, connection);
            read.Parameters.AddRange(ReadParameters);
            await using (read.ConfigureAwait(false))
            {
                var reader = await read.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    return await ReadAsync(reader, cancellationToken).ConfigureAwait(false);
                }
            }
        }
    }

    /// <summary>
    /// Stores a pause of the queue (<paramref name="key"/> null) or of one ordering key; <paramref name="milliseconds"/>
    /// null: until resumed. Returns the pause as stored.
    /// </summary>
    public async Task<WorkQueuePause> PauseAsync(string reason, double? milliseconds, string changedBy, string? key, CancellationToken cancellationToken)
    {
        var statements = _statements();
        WorkQueuePause stored;
        var connection = await _source.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            if (key is null)
            {
                var transaction = await connection.BeginTransactionAsync(cancellationToken).ConfigureAwait(false);
                await using (transaction.ConfigureAwait(false))
                {
                    var ensure = new NpgsqlCommand(statements.EnsureSettings, connection, transaction) { Parameters = { Text(_queue) } };
                    await using (ensure.ConfigureAwait(false))
                    {
                        await ensure.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
                    }

                    var write = new NpgsqlCommand(statements.PauseQueue, connection, transaction)
                    {
                        Parameters = { Text(_queue), Text(reason), Milliseconds(milliseconds), Text(changedBy), Text(_settingsChannel) },
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

                _queuePauseChanged(); // this node applies it without waiting for its own notification
            }
            else
            {
                var write = new NpgsqlCommand(statements.PauseKey, connection)
                {
                    Parameters = { Text(_queue), Text(key), Text(reason), Milliseconds(milliseconds), Text(changedBy), new NpgsqlParameter<int> { TypedValue = MaxPausedKeys } },
                };
                await using (write.ConfigureAwait(false))
                {
                    var reader = await write.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                    await using (reader.ConfigureAwait(false))
                    {
                        if (!await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                        {
                            throw new ArgumentException(
                                string.Create(CultureInfo.InvariantCulture, $"Work queue '{_queue}' already has {MaxPausedKeys} paused ordering keys, the most it may have: resume some, or pause the whole queue."),
                                nameof(key));
                        }

                        stored = new WorkQueuePause { Key = key, Reason = reason, Since = reader.GetFieldValue<DateTimeOffset>(0), Until = Time(reader, 1), By = changedBy };
                    }
                }
            }
        }

        if (_logger.IsEnabled(LogLevel.Information))
        {
            _logger.FleetPauseStored(_queue, changedBy, Target(key), stored.Until?.ToString("O", CultureInfo.InvariantCulture) ?? "resumed", reason);
        }

        return stored;
    }

    /// <summary>Ends the pause of the queue (<paramref name="key"/> null) or of one ordering key; returns the pause it ended, if any.</summary>
    public async Task<WorkQueuePause?> ResumeAsync(string changedBy, string? key, CancellationToken cancellationToken)
    {
        var statements = _statements();
        WorkQueuePause? ended = null;
        var connection = await _source.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = key is null
                ? new NpgsqlCommand(statements.ResumeQueue, connection) { Parameters = { Text(_queue), Text(changedBy), Text(_settingsChannel), Text(_notifyChannel) } }
                : new NpgsqlCommand(statements.ResumeKey, connection) { Parameters = { Text(_queue), Text(key), Text(_notifyChannel) } };
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
            _queuePauseChanged();
        }

        if (ended is not null && _logger.IsEnabled(LogLevel.Information))
        {
            _logger.FleetResumeStored(_queue, changedBy, Target(key), ended.By ?? "unknown", ended.Reason);
        }

        return ended;
    }

    /// <summary>
    /// On the cluster loop, after a beat read the settings: takes the queue's pause as read (the database's word), and
    /// logs when this node starts or stops honouring one. The caller calls it before the node reports the settings
    /// version it applied, so a node that reports a pause's version holds no item it would start under it.
    /// </summary>
    public void Apply(WorkQueuePause? pause, TimeSpan? left, string nodeName)
    {
        var was = InForce;
        _state = pause is null ? null : new PauseState(pause, left is { } l ? _time.GetTimestamp() + (long)(l.TotalSeconds * _time.TimestampFrequency) : null);
        if (pause is not null && was is null)
        {
            _logger.FleetPauseApplied(_queue, pause.By ?? "unknown", pause.Reason, nodeName);
        }
        else if (pause is null && was is not null)
        {
            _logger.FleetPauseEnded(_queue, nodeName);
            _queuePauseEnded();
        }
    }

    /// <summary>Reads the rows of <see cref="ClusterSql.ReadPauses"/> from the reader's current result.</summary>
    public static async Task<WorkQueuePauses> ReadAsync(NpgsqlDataReader reader, CancellationToken cancellationToken)
    {
        WorkQueuePause? queue = null;
        var keys = new List<WorkQueuePause>();
        var readAt = DateTimeOffset.UtcNow; // the database's clock when a row says it
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

        return new WorkQueuePauses { Queue = queue, Keys = keys, ReadAt = readAt };
    }

    private static string Target(string? key) => key is null ? "the queue" : "ordering key '" + key + "'";

    private static DateTimeOffset? Time(NpgsqlDataReader reader, int ordinal) => reader.IsDBNull(ordinal) ? null : reader.GetFieldValue<DateTimeOffset>(ordinal);

    private static NpgsqlParameter<string> Text(string value) => new() { TypedValue = value };

    private static NpgsqlParameter Milliseconds(double? value) =>
        value is { } v ? new NpgsqlParameter<double> { TypedValue = v } : new NpgsqlParameter { Value = DBNull.Value, NpgsqlDbType = NpgsqlDbType.Double };

    /// <summary>A pause as a node holds it: the pause, and when it ends on the node's clock (a <see cref="TimeProvider"/> timestamp).</summary>
    private sealed record PauseState(WorkQueuePause Pause, long? EndsAt);
}
