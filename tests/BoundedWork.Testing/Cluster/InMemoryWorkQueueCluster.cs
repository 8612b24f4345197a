using BoundedWork.Hosting;

namespace BoundedWork.Testing.Cluster;

/// <summary>
/// A durable queue's cluster kept in memory, written only against BoundedWork.Hosting's public contract
/// (<see cref="IWorkQueueCluster"/>), for the console, dashboard and <c>bw</c> tests. It keeps the settings as a
/// storage does: a change is read, applied and written under one lock, validated as the contract says (the error names
/// the setting), its version grows by one and it records when and by whom; a refused change leaves everything as it
/// was. The nodes, the stored items and the limits' use are what the test sets.
/// </summary>
/// <remarks>
/// <see cref="Failure"/> makes every call fail as an unreachable storage would; <see cref="Hold"/> makes a change wait
/// (after it is validated and before it is written) until the test releases it or the caller cancels.
/// </remarks>
public sealed class InMemoryWorkQueueCluster(string queueName, TimeProvider? time = null) : IWorkQueueCluster, IWorkQueuePauseControl
{
    private readonly Lock _sync = new();
    private readonly TimeProvider _time = time ?? TimeProvider.System;
    private readonly List<(string ChangedBy, WorkQueueClusterSettings Settings)> _changes = [];
    private WorkQueueClusterSettings _settings = new();
    private IReadOnlyList<WorkQueueClusterNode> _nodes = [];
    private WorkQueueStorageStatistics _storage = new() { IsAvailable = true };
    private WorkQueueClusterLimitUse _limitUse = new();
    private WorkQueuePause? _queuePause;
    private readonly Dictionary<string, WorkQueuePause> _keyPauses = new(StringComparer.Ordinal);
    private int _reads;
    private volatile Exception? _failure;
    private volatile Task? _hold;

    /// <inheritdoc/>
    public string QueueName { get; } = queueName;

    /// <summary>Gets or sets an exception every call throws (an unreachable storage), or <see langword="null"/>.</summary>
    public Exception? Failure
    {
        get => _failure;
        set => _failure = value;
    }

    /// <summary>Gets or sets a task a change awaits before it is written, or <see langword="null"/>.</summary>
    public Task? Hold
    {
        get => _hold;
        set => _hold = value;
    }

    /// <summary>Gets the settings stored now.</summary>
    public WorkQueueClusterSettings Settings
    {
        get
        {
            lock (_sync)
            {
                return _settings;
            }
        }
    }

    /// <summary>Gets every change written, oldest first, with the <c>changedBy</c> it was given.</summary>
    public IReadOnlyList<(string ChangedBy, WorkQueueClusterSettings Settings)> Changes
    {
        get
        {
            lock (_sync)
            {
                return [.. _changes];
            }
        }
    }

    /// <summary>Gets how many times the cluster was read.</summary>
    public int Reads => Volatile.Read(ref _reads);

    /// <summary>Sets the live nodes the cluster reports (it orders them by name, as the contract says).</summary>
    public void SetNodes(params WorkQueueClusterNode[] nodes)
    {
        lock (_sync)
        {
            _nodes = [.. nodes.OrderBy(static n => n.Name, StringComparer.Ordinal)];
        }
    }

    /// <summary>Sets the stored items by state the cluster reports.</summary>
    public void SetStorage(WorkQueueStorageStatistics storage)
    {
        lock (_sync)
        {
            _storage = storage;
        }
    }

    /// <summary>Sets the limits' use the cluster reports.</summary>
    public void SetLimitUse(WorkQueueClusterLimitUse limitUse)
    {
        lock (_sync)
        {
            _limitUse = limitUse;
        }
    }

    /// <summary>
    /// The contract's rules for fleet-wide settings; throws an <see cref="ArgumentException"/> whose message starts
    /// with the setting's name.
    /// </summary>
    public static void Validate(WorkQueueClusterSettings settings)
    {
        ArgumentNullException.ThrowIfNull(settings);
        if (settings.WorkersPerNode is < 1)
        {
            throw new ArgumentException($"WorkersPerNode must be at least 1 (was {settings.WorkersPerNode}).", nameof(settings));
        }

        if (settings.MaxRunning is < 1)
        {
            throw new ArgumentException($"MaxRunning must be at least 1 (was {settings.MaxRunning}).", nameof(settings));
        }

        if (settings.MaxRunningPerKey < 1)
        {
            throw new ArgumentException($"MaxRunningPerKey must be at least 1 (was {settings.MaxRunningPerKey}).", nameof(settings));
        }

        if (settings.StartsPerSecond is { } rate && (!double.IsFinite(rate) || rate <= 0))
        {
            throw new ArgumentException($"StartsPerSecond must be a positive number (was {rate}).", nameof(settings));
        }

        if (settings.StartBurst is < 1)
        {
            throw new ArgumentException($"StartBurst must be at least 1 (was {settings.StartBurst}).", nameof(settings));
        }

        if (settings.FairShare is not null && settings.MaxRunningPerKey > 1)
        {
            // As the PostgreSQL storage: the fair claim keeps each ordering key's items one at a time.
            throw new ArgumentException($"FairShare cannot be set while MaxRunningPerKey is above 1 (it is {settings.MaxRunningPerKey}).", nameof(settings));
        }
    }

    /// <inheritdoc/>
    public Task<WorkQueueCluster> GetClusterAsync(CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        if (Failure is { } failure)
        {
            return Task.FromException<WorkQueueCluster>(failure);
        }

        Interlocked.Increment(ref _reads);
        lock (_sync)
        {
            return Task.FromResult(new WorkQueueCluster
            {
                QueueName = QueueName,
                Settings = _settings,
                Nodes = _nodes,
                Storage = _storage,
                LimitUse = _limitUse,
                Pauses = ReadPauses(),
                ReadAt = _time.GetUtcNow(),
            });
        }
    }

    /// <summary>
    /// Gets the pauses in force (a pause whose end has passed is gone), as a storage keeps them: the queue's, and each
    /// key's. Pausing again replaces the reason and the end; resuming answers the pause it ended.
    /// </summary>
    public Task<WorkQueuePauses> GetPausesAsync(CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        if (Failure is { } failure)
        {
            return Task.FromException<WorkQueuePauses>(failure);
        }

        lock (_sync)
        {
            return Task.FromResult(ReadPauses());
        }
    }

    /// <inheritdoc/>
    public Task<WorkQueuePause> PauseAsync(string reason, TimeSpan duration, string changedBy, string? key = null, CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        if (Failure is { } failure)
        {
            return Task.FromException<WorkQueuePause>(failure);
        }

        var now = _time.GetUtcNow();
        var pause = new WorkQueuePause { Key = key, Reason = reason, Since = now, Until = duration == Timeout.InfiniteTimeSpan ? null : now + duration, By = changedBy };
        lock (_sync)
        {
            if (key is null)
            {
                _queuePause = pause;
            }
            else
            {
                _keyPauses[key] = pause;
            }
        }

        return Task.FromResult(pause);
    }

    /// <inheritdoc/>
    public Task<WorkQueuePause?> ResumeAsync(string changedBy, string? key = null, CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        if (Failure is { } failure)
        {
            return Task.FromException<WorkQueuePause?>(failure);
        }

        lock (_sync)
        {
            var pauses = ReadPauses();
            WorkQueuePause? ended;
            if (key is null)
            {
                ended = pauses.Queue;
                _queuePause = null;
            }
            else
            {
                ended = pauses.Keys.FirstOrDefault(p => p.Key == key);
                _keyPauses.Remove(key);
            }

            return Task.FromResult(ended);
        }
    }

    private WorkQueuePauses ReadPauses()
    {
        var now = _time.GetUtcNow();
        bool InForce(WorkQueuePause p) => p.Until is not { } until || until > now;
        return new WorkQueuePauses
        {
            Queue = _queuePause is { } queue && InForce(queue) ? queue : null,
            Keys = [.. _keyPauses.Values.Where(InForce).OrderBy(p => p.Key, StringComparer.Ordinal)],
            ReadAt = now,
        };
    }

    /// <inheritdoc/>
    public async Task<WorkQueueClusterSettings> UpdateSettingsAsync(
        Func<WorkQueueClusterSettings, WorkQueueClusterSettings> change, string changedBy, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(change);
        ArgumentNullException.ThrowIfNull(changedBy);
        cancellationToken.ThrowIfCancellationRequested();
        if (Failure is { } failure)
        {
            throw failure;
        }

        if (Hold is { } hold)
        {
            await hold.WaitAsync(cancellationToken).ConfigureAwait(false);
        }

        lock (_sync)
        {
            var next = change(_settings);
            Validate(next);
            _settings = next with { Version = _settings.Version + 1, UpdatedAt = _time.GetUtcNow(), UpdatedBy = changedBy };
            _changes.Add((changedBy, _settings));
            return _settings;
        }
    }
}
