using System.Reflection;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// This node as a member of a queue's cluster: its row in <c>nodes</c> (written by <see cref="Beat"/>, every
/// heartbeat, and removed by <see cref="Leave"/> at a clean stop) and the fleet-wide worker count it follows
/// (<see cref="Apply"/>).
/// </summary>
/// <remarks>
/// <para>
/// <b>Following the fleet.</b> The settings row is the truth. The node reads it at start, before it claims; on each
/// notification of a change; after its listener reconnects (a notification sent meanwhile is lost); and with every
/// heartbeat, which reads it in the same round trip as it writes the node's row. A version it has not seen yet, read
/// by any of these, is applied: when <c>workers_per_node</c> is set and differs from the executor's count, the count is
/// changed with <see cref="BoundedExecutor.Reconfigure(Func{BoundedExecutorSettings, BoundedExecutorSettings})"/>
/// (a plain change, never a pin). A count an operator pinned on this node
/// (<see cref="BoundedExecutor.PinWorkerCount(int)"/>) wins: the node keeps it, logs so, and reports <c>pinned_locally</c>; when the pin ends, the
/// node takes the fleet-wide count. Only a new version (or the end of a pin) changes the count, so neither the
/// adaptive mode nor a local reconfiguration is fought at every heartbeat.
/// </para>
/// <para>
/// Owned by one thread at a time: <see cref="Apply"/> and <see cref="Beat"/> run at start (before the cluster loop
/// starts) and then only on the cluster loop's thread. The outcome counters are written by any worker.
/// </para>
/// </remarks>
internal sealed class ClusterNode(string queueName, string name, BoundedExecutor executor, ClusterSql sql, TimeSpan heartbeatInterval, DateTimeOffset startedAt, ILogger logger)
{
    private static readonly string s_version = ReadVersion();

    private long _completed;
    private long _failed;

    /// <summary>The settings version last applied; -1 before the first read.</summary>
    private long _appliedVersion = -1;
    private bool _pinned;

    /// <summary>Gets the library's version as each member's row records it.</summary>
    public static string LibraryVersion => s_version;

    /// <summary>Gets the node's name in the cluster (its row's key with the queue's).</summary>
    public string Name { get; } = name;

    /// <summary>Gets the version of the settings this node last applied (0 before it read them).</summary>
    public long AppliedVersion => Math.Max(_appliedVersion, 0);

    /// <summary>Gets a value indicating whether the node's worker count was pinned locally when it last looked.</summary>
    public bool PinnedLocally => _pinned;

    /// <summary>Counts a delivery's outcome for the node's row: completions, and deliveries that failed (a stored retry or a dead letter).</summary>
    public void Count(OutcomeKind kind)
    {
        switch (kind)
        {
            case OutcomeKind.Completed:
                Interlocked.Increment(ref _completed);
                break;
            case OutcomeKind.Retry or OutcomeKind.Dead:
                Interlocked.Increment(ref _failed);
                break;
        }
    }

    /// <summary>Writes the node's row (expiring after three heartbeats) and reads the queue's settings, in one round trip.</summary>
    public WorkQueueClusterSettings Beat(NpgsqlConnection connection, long inFlight, int handlersRunning, ClusterPermitUse permits)
    {
        using var command = new NpgsqlCommand(sql.Beat, connection)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = queueName },
                new NpgsqlParameter<string> { TypedValue = Name },
                new NpgsqlParameter<string> { TypedValue = Environment.MachineName },
                new NpgsqlParameter<int> { TypedValue = Environment.ProcessId },
                new NpgsqlParameter<string> { TypedValue = s_version },
                new NpgsqlParameter<DateTimeOffset> { TypedValue = startedAt },
                new NpgsqlParameter<TimeSpan> { TypedValue = heartbeatInterval * 3 },
                new NpgsqlParameter<int> { TypedValue = executor.Settings.WorkerCount },
                new NpgsqlParameter<long> { TypedValue = inFlight },
                new NpgsqlParameter<long> { TypedValue = Interlocked.Read(ref _completed) },
                new NpgsqlParameter<long> { TypedValue = Interlocked.Read(ref _failed) },
                new NpgsqlParameter<long> { TypedValue = permits.WaitingForPermit },
                new NpgsqlParameter<double> { TypedValue = permits.OldestPermitWait.TotalSeconds },
                new NpgsqlParameter<double> { TypedValue = permits.StartsLastSecond },
                new NpgsqlParameter<long> { TypedValue = AppliedVersion },
                new NpgsqlParameter<bool> { TypedValue = _pinned },
                new NpgsqlParameter<int> { TypedValue = handlersRunning },
            },
        };
        using var reader = command.ExecuteReader();
        reader.Read();
        (Pause, PauseLeft) = ClusterSql.ReadPause(reader);
        return ClusterSettingsRules.Read(reader);
    }

    /// <summary>Gets the queue's fleet-wide pause in force as the last <see cref="Beat"/> read it, or <see langword="null"/>.</summary>
    public WorkQueuePause? Pause { get; private set; }

    /// <summary>Gets the time left until <see cref="Pause"/> ends, on the database's clock at the last beat (<see langword="null"/>: no end).</summary>
    public TimeSpan? PauseLeft { get; private set; }

    /// <summary>Removes the node's row: it left cleanly.</summary>
    public void Leave(NpgsqlConnection connection)
    {
        using var command = new NpgsqlCommand(sql.Leave, connection)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = queueName },
                new NpgsqlParameter<string> { TypedValue = Name },
            },
        };
        command.ExecuteNonQuery();
    }

    /// <summary>
    /// Applies the settings read from the storage, if their version is new or the local pin ended since the last look
    /// (see the remarks of <see cref="ClusterNode"/>).
    /// </summary>
    /// <returns><see langword="true"/> if what the node reports changed (the version it applied, its worker count, its pin): worth a beat now.</returns>
    public bool Apply(WorkQueueClusterSettings settings)
    {
        var pinned = executor.IsWorkerCountPinned;
        var newVersion = settings.Version != _appliedVersion;
        var pinEnded = _pinned && !pinned;
        var pinChanged = _pinned != pinned;
        _pinned = pinned;
        var countChanged = false;
        if (settings.WorkersPerNode is int wanted && (newVersion || pinEnded))
        {
            var current = executor.Settings.WorkerCount;
            if (pinned)
            {
                if (wanted != current)
                {
                    logger.FleetWorkersPinnedLocally(queueName, current, settings.Version, wanted);
                }
            }
            else
            {
                countChanged = ApplyWorkerCount(settings, wanted);
            }
        }

        _appliedVersion = settings.Version;
        return newVersion || pinChanged || countChanged;
    }

    private bool ApplyWorkerCount(WorkQueueClusterSettings settings, int wanted)
    {
        var target = Math.Min(wanted, executor.MaxWorkerCount);
        if (target != wanted)
        {
            logger.FleetWorkersCapped(queueName, settings.Version, wanted, target);
        }

        try
        {
            var change = executor.Reconfigure(s => s.WorkerCount == target ? s : s with { WorkerCount = target });
            if (change.Previous.WorkerCount == change.Current.WorkerCount)
            {
                return false;
            }

            logger.FleetWorkersApplied(queueName, settings.Version, settings.UpdatedBy ?? "unknown", change.Previous.WorkerCount, change.Current.WorkerCount);
            return true;
        }
        catch (ArgumentException ex)
        {
            logger.FleetWorkersNotApplied(queueName, settings.Version, target, executor.Settings.WorkerCount, ex);
        }
        catch (InvalidOperationException)
        {
            // The executor is shut down: the node is stopping.
        }

        return false;
    }

    private static string ReadVersion()
    {
        var assembly = typeof(ClusterNode).Assembly;
        var version = assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion
            ?? assembly.GetName().Version?.ToString(3)
            ?? "unknown";
        var metadata = version.IndexOf('+', StringComparison.Ordinal);
        return metadata > 0 ? version[..metadata] : version;
    }
}

/// <summary>
/// What this node reports of the cluster limits at its heartbeat: ready items its last claim held back for a cluster
/// permit, how long the oldest of them has waited, and its item starts during the last second.
/// </summary>
internal readonly record struct ClusterPermitUse(long WaitingForPermit, TimeSpan OldestPermitWait, double StartsLastSecond);
