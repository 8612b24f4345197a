using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// Durable schedules kept in memory, as a storage would keep them: the console reaches them through
/// <see cref="IDurableSchedules"/> alone. <see cref="Failing"/> makes every call throw, as a storage that is down.
/// </summary>
public sealed class FakeDurableSchedules(params string[] queues) : IDurableSchedules
{
    private readonly Lock _lock = new();
    private readonly List<DurableScheduleStatus> _stored = [];
    private long _nextItem = 100;

    public IReadOnlyList<string> Queues { get; } = queues;

    public bool Failing { get; set; }

    /// <summary>Gets every change made, as <c>name: what by who</c>.</summary>
    public List<string> Changes { get; } = [];

    public void Define(string name, string queue, RecurringSchedule schedule)
    {
        lock (_lock)
        {
            _stored.Add(Status(name, queue, schedule) with { IsDefinedInCode = true });
        }
    }

    public Task<IReadOnlyList<DurableScheduleStatus>> ListAsync(CancellationToken cancellationToken = default)
    {
        Check();
        lock (_lock)
        {
            return Task.FromResult<IReadOnlyList<DurableScheduleStatus>>([.. _stored]);
        }
    }

    public Task<DurableScheduleStatus?> GetAsync(string name, CancellationToken cancellationToken = default)
    {
        Check();
        lock (_lock)
        {
            return Task.FromResult(_stored.FirstOrDefault(s => s.Name == name));
        }
    }

    public Task<DurableScheduleStatus> AddAsync(string name, string queue, RecurringSchedule schedule, Action<DurableScheduleOptions>? configure = null, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        Check();
        var options = new DurableScheduleOptions();
        configure?.Invoke(options);
        lock (_lock)
        {
            if (!Queues.Contains(queue))
            {
                throw new ArgumentException($"Queue '{queue}' does not run durable schedules.", nameof(queue));
            }

            if (_stored.Any(s => s.Name == name))
            {
                throw new ArgumentException($"A durable schedule named '{name}' is already stored.", nameof(name));
            }

            var status = Status(name, queue, schedule) with { MissedTicks = options.MissedTicks, IsPaused = options.StartPaused, ChangedBy = changedBy };
            _stored.Add(status);
            Changes.Add($"{name}: added by {changedBy}");
            return Task.FromResult(status);
        }
    }

    public Task<DurableScheduleStatus> ChangeAsync(string name, RecurringSchedule schedule, string? changedBy = null, CancellationToken cancellationToken = default) =>
        Update(name, s => s with { Schedule = schedule, Definition = schedule.ToString(), NextRunAt = schedule.GetNextOccurrence(DateTimeOffset.UtcNow), ChangedBy = changedBy }, $"retimed by {changedBy}");

    public Task<DurableScheduleStatus> SetPausedAsync(string name, bool paused, string? changedBy = null, CancellationToken cancellationToken = default) =>
        Update(name, s => s with { IsPaused = paused, ChangedBy = changedBy }, $"paused {paused} by {changedBy}");

    public Task<DurableScheduleStatus> SetMissedTicksAsync(string name, MissedTickPolicy missedTicks, string? changedBy = null, CancellationToken cancellationToken = default) =>
        Update(name, s => s with { MissedTicks = missedTicks, ChangedBy = changedBy }, $"missed ticks {missedTicks} by {changedBy}");

    public async Task<long> TriggerNowAsync(string name, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        var id = Interlocked.Increment(ref _nextItem);
        await Update(name, s => s with { Enqueued = s.Enqueued + 1, LastItemId = id, LastOutcome = "ready" }, $"triggered by {changedBy}");
        return id;
    }

    public Task<bool> RemoveAsync(string name, string? changedBy = null, CancellationToken cancellationToken = default)
    {
        Check();
        lock (_lock)
        {
            var removed = _stored.RemoveAll(s => s.Name == name) > 0;
            if (removed)
            {
                Changes.Add($"{name}: removed by {changedBy}");
            }

            return Task.FromResult(removed);
        }
    }

    private Task<DurableScheduleStatus> Update(string name, Func<DurableScheduleStatus, DurableScheduleStatus> change, string what)
    {
        Check();
        lock (_lock)
        {
            var index = _stored.FindIndex(s => s.Name == name);
            if (index < 0)
            {
                throw new KeyNotFoundException($"No durable schedule is named '{name}'.");
            }

            _stored[index] = change(_stored[index]);
            Changes.Add($"{name}: {what}");
            return Task.FromResult(_stored[index]);
        }
    }

    private void Check()
    {
        if (Failing)
        {
            throw new InvalidOperationException("The database is unreachable.");
        }
    }

    private static DurableScheduleStatus Status(string name, string queue, RecurringSchedule schedule) => new()
    {
        Name = name,
        Queue = queue,
        Schedule = schedule,
        Definition = schedule.ToString(),
        NextRunAt = schedule.GetNextOccurrence(DateTimeOffset.UtcNow),
        ChangedAt = DateTimeOffset.UtcNow,
    };
}
