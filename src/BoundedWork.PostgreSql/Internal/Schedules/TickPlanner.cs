using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// Decides which due ticks of a durable schedule one pass enqueues. Plain C#, no server: the pass calls it with the
/// stored next tick and the node's now, under the row's lock.
/// </summary>
/// <remarks>
/// A due tick (at or before now) is on time when it is no older than the misfire threshold: every on-time tick is
/// enqueued. Older ones are missed and follow the policy: <see cref="MissedTickPolicy.Skip"/> enqueues none,
/// <see cref="MissedTickPolicy.LatestOnce"/> the latest one when no tick is on time, <see cref="MissedTickPolicy.Each"/>
/// the latest <c>maxCatchUp</c>. Every due tick is either enqueued or counted missed; the next tick is the first after
/// now. Walking a long outage of a frequent schedule is bounded: past <see cref="MaxWalk"/> missed ticks the walk jumps
/// to the threshold and counts what it skipped as one more (a lower bound).
/// </remarks>
internal static class TickPlanner
{
    public const int MaxWalk = 100_000;

    public static Plan PlanTicks(
        Hosting.RecurringSchedule schedule, DateTimeOffset nextTick, DateTimeOffset now, MissedTickPolicy policy, int maxCatchUp, TimeSpan misfireThreshold)
    {
        var cutoff = now - misfireThreshold;
        var keep = policy switch { MissedTickPolicy.Each => maxCatchUp, MissedTickPolicy.LatestOnce => 1, _ => 0 };
        var missedLatest = new Queue<DateTimeOffset>();
        var onTime = new List<DateTimeOffset>();
        long missed = 0;
        var walked = 0;
        DateTimeOffset? tick = nextTick;
        while (tick is { } t && t <= now)
        {
            if (t < cutoff)
            {
                missed++;
                if (keep > 0)
                {
                    missedLatest.Enqueue(t);
                    if (missedLatest.Count > keep)
                    {
                        missedLatest.Dequeue();
                    }
                }

                if (++walked >= MaxWalk)
                {
                    // Jump: the ticks between here and the cutoff count as one more missed (at least one lies there).
                    var resume = schedule.GetNextOccurrence(cutoff.AddTicks(-1));
                    if (resume is { } r && r > t && schedule.GetNextOccurrence(t) is { } following && following < r)
                    {
                        missed++;
                    }

                    tick = resume is { } rr && rr > t ? rr : schedule.GetNextOccurrence(t);
                    walked = int.MinValue;
                    continue;
                }
            }
            else
            {
                onTime.Add(t);
            }

            tick = schedule.GetNextOccurrence(t);
        }

        var enqueue = new List<DateTimeOffset>();
        if (policy == MissedTickPolicy.Each || (policy == MissedTickPolicy.LatestOnce && onTime.Count == 0))
        {
            enqueue.AddRange(missedLatest);
        }

        missed -= enqueue.Count;
        enqueue.AddRange(onTime);
        return new Plan(enqueue, missed, tick);
    }

    /// <summary>The ticks to enqueue (oldest first), how many missed ticks are not run, and the next tick after now (none: never again).</summary>
    public sealed record Plan(IReadOnlyList<DateTimeOffset> Enqueue, long Missed, DateTimeOffset? NextTick);
}
