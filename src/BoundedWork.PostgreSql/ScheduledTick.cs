namespace BoundedWork.PostgreSql;

/// <summary>
/// The item a durable schedule enqueues for each tick: a queue that runs durable schedules is a queue of
/// <see cref="ScheduledTick"/> (<c>AddWorkQueue&lt;ScheduledTick, MyHandler&gt;("name").UsePostgreSql(...)</c>), and
/// its handler gets one item per tick across the fleet, with the queue's retries, limits and dead letters.
/// </summary>
/// <param name="Schedule">The schedule's name.</param>
/// <param name="ScheduledAt">The tick's scheduled instant (UTC): the same on every node, whatever its clock; for a triggered run, when it was triggered.</param>
/// <param name="Triggered"><see langword="true"/> when an operator triggered the run rather than the schedule.</param>
public sealed record ScheduledTick(string Schedule, DateTimeOffset ScheduledAt, bool Triggered = false);
