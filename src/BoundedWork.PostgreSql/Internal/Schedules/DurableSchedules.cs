using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Every queue that runs durable schedules in this process (<see cref="IDurableSchedules"/>), and the hosted service
/// that starts their schedulers after the queues (registered after them, it starts after them and stops before them).
/// </summary>
internal sealed class DurableSchedules : IDurableSchedules, IAsyncDisposable
{
    private readonly IServiceProvider _services;
    private readonly DurableScheduleRegistration[] _registrations;
    private readonly TimeProvider _clock;
    private readonly ILogger _logger;
    private readonly List<DurableScheduler> _schedulers = [];

    public DurableSchedules(IServiceProvider services, IEnumerable<DurableScheduleRegistration> registrations)
    {
        _services = services;
        _registrations = [.. registrations];
        _clock = services.GetService<TimeProvider>() ?? TimeProvider.System;
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger(DurableScheduleLog.Category);
        Queues = [.. _registrations.Select(r => r.Queue).Distinct(StringComparer.Ordinal)];
    }

    public IReadOnlyList<string> Queues { get; }

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        foreach (var queue in Queues)
        {
            var storage = _services.GetKeyedService<IPostgreSqlWorkQueue<ScheduledTick>>(queue) as PostgreSqlWorkQueue<ScheduledTick>
                ?? throw new InvalidOperationException(
                    $"Durable schedules enqueue on queue '{queue}', but it is not a PostgreSQL work queue of ScheduledTick: register it with AddWorkQueue<ScheduledTick, THandler>(\"{queue}\").UsePostgreSql(...).");
            var scheduler = new DurableScheduler(queue, storage, [.. _registrations.Where(r => r.Queue == queue)], _clock, _logger);
            await scheduler.StartAsync(cancellationToken).ConfigureAwait(false);
            _schedulers.Add(scheduler);
        }
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        foreach (var scheduler in _schedulers)
        {
            await scheduler.DisposeAsync().ConfigureAwait(false);
        }

        _schedulers.Clear();
    }

    public async ValueTask DisposeAsync() => await StopAsync(CancellationToken.None).ConfigureAwait(false);

    public async Task<IReadOnlyList<DurableScheduleStatus>> ListAsync(CancellationToken cancellationToken = default)
    {
        var all = new List<DurableScheduleStatus>();
        foreach (var scheduler in Started())
        {
            all.AddRange(await scheduler.ListAsync(cancellationToken).ConfigureAwait(false));
        }

        return all;
    }

    public async Task<DurableScheduleStatus?> GetAsync(string name, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(name);
        foreach (var scheduler in Started())
        {
            if (await scheduler.GetAsync(name, cancellationToken).ConfigureAwait(false) is { } found)
            {
                return found;
            }
        }

        return null;
    }

    public async Task<DurableScheduleStatus> AddAsync(string name, string queue, RecurringSchedule schedule, Action<DurableScheduleOptions>? configure = null, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        DurableScheduleRegistration.ValidateName(name);
        ArgumentNullException.ThrowIfNull(queue);
        ArgumentNullException.ThrowIfNull(schedule);
        var options = new DurableScheduleOptions();
        configure?.Invoke(options);
        options.Validate();
        var scheduler = Started().FirstOrDefault(s => s.Queue == queue)
            ?? throw new ArgumentException($"Queue '{queue}' does not run durable schedules in this process (AddDurableSchedules(\"{queue}\")).", nameof(queue));
        if (await GetAsync(name, cancellationToken).ConfigureAwait(false) is not null
            || !await scheduler.AddAsync(name, schedule, options, Who(changedBy), cancellationToken).ConfigureAwait(false))
        {
            throw new ArgumentException($"A durable schedule named '{name}' is already stored; names are unique within a schema.", nameof(name));
        }

        Audit(name, queue, () => $"added: {schedule}, missed ticks {options.MissedTicks}{(options.StartPaused ? ", paused" : "")}", changedBy);
        return (await scheduler.GetAsync(name, cancellationToken).ConfigureAwait(false))!;
    }

    public async Task<DurableScheduleStatus> ChangeAsync(string name, RecurringSchedule schedule, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(schedule);
        var (scheduler, before) = await FindAsync(name, cancellationToken).ConfigureAwait(false);
        await scheduler.ChangeAsync(name, schedule, Who(changedBy), cancellationToken).ConfigureAwait(false);
        Audit(name, scheduler.Queue, () => $"changed from {before.Definition} to {schedule}", changedBy);
        return (await scheduler.GetAsync(name, cancellationToken).ConfigureAwait(false))!;
    }

    public async Task<DurableScheduleStatus> SetPausedAsync(string name, bool paused, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        var (scheduler, before) = await FindAsync(name, cancellationToken).ConfigureAwait(false);
        await scheduler.SetPausedAsync(name, paused, Who(changedBy), cancellationToken).ConfigureAwait(false);
        Audit(name, scheduler.Queue, () => (paused, before.IsPaused) switch
        {
            (true, false) => "paused",
            (true, true) => "paused (already paused)",
            (false, true) => "resumed",
            (false, false) => "resumed (already running)",
        }, changedBy);
        return (await scheduler.GetAsync(name, cancellationToken).ConfigureAwait(false))!;
    }

    public async Task<DurableScheduleStatus> SetMissedTicksAsync(string name, MissedTickPolicy missedTicks, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        if (!Enum.IsDefined(missedTicks))
        {
            throw new ArgumentOutOfRangeException(nameof(missedTicks), missedTicks, "MissedTicks must be LatestOnce, Skip or Each.");
        }

        var (scheduler, before) = await FindAsync(name, cancellationToken).ConfigureAwait(false);
        await scheduler.SetMissedTicksAsync(name, missedTicks, Who(changedBy), cancellationToken).ConfigureAwait(false);
        Audit(name, scheduler.Queue, () => $"missed ticks {before.MissedTicks} -> {missedTicks}", changedBy);
        return (await scheduler.GetAsync(name, cancellationToken).ConfigureAwait(false))!;
    }

    public async Task<long> TriggerNowAsync(string name, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        var (scheduler, _) = await FindAsync(name, cancellationToken).ConfigureAwait(false);
        var id = await scheduler.TriggerAsync(name, cancellationToken).ConfigureAwait(false)
            ?? throw new KeyNotFoundException($"No durable schedule is named '{name}'.");
        Audit(name, scheduler.Queue, () => $"triggered now (item {id})", changedBy);
        return id;
    }

    public async Task<bool> RemoveAsync(string name, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(name);
        foreach (var scheduler in Started())
        {
            if (await scheduler.RemoveAsync(name, cancellationToken).ConfigureAwait(false))
            {
                Audit(name, scheduler.Queue, static () => "removed", changedBy);
                return true;
            }
        }

        return false;
    }

    /// <summary>Logs a change with who made it (the audit log of schedules).</summary>
    private void Audit(string name, string queue, Func<string> change, string? changedBy)
    {
        if (_logger.IsEnabled(LogLevel.Information))
        {
            _logger.Changed(name, queue, change(), Who(changedBy));
        }
    }

    private static string Who(string? changedBy) => string.IsNullOrWhiteSpace(changedBy) ? "(unnamed)" : changedBy;

    private List<DurableScheduler> Started() =>
        _schedulers.Count > 0 || Queues.Count == 0
            ? _schedulers
            : throw new InvalidOperationException("Durable schedules are not started yet: they start with the host.");

    private async Task<(DurableScheduler Scheduler, DurableScheduleStatus Status)> FindAsync(string name, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(name);
        foreach (var scheduler in Started())
        {
            if (await scheduler.GetAsync(name, cancellationToken).ConfigureAwait(false) is { } found)
            {
                return (scheduler, found);
            }
        }

        throw new KeyNotFoundException($"No durable schedule is named '{name}'.");
    }
}
