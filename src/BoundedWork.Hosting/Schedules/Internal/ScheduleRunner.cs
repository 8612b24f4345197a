using System.Diagnostics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// One in-memory schedule: a timer on the host's <see cref="TimeProvider"/> armed for the next tick, and the runs it
/// hands to the executor.
/// </summary>
/// <remarks>
/// <para>
/// Invariant (under <see cref="SyncObj"/>): at most one run of the schedule is handed to the executor and not ended
/// (<c>_running</c>), and at most one tick waits for it (<c>_pending</c>, only under
/// <see cref="RecurringOverlapPolicy.Queue"/>). Every tick is counted once as run (succeeded, failed or rejected) or
/// skipped, so <c>Ticks + Triggered = Succeeded + Failed + Rejected + Skipped + (running ? 1 : 0) + (pending ? 1 : 0)</c>.
/// </para>
/// <para>
/// The timer is armed for the tick after the one that fired, computed from the scheduled instant, not from the
/// clock's now, so a timer that fires late loses no tick; a tick whose instant passed while the previous one was
/// being armed (the process was suspended) is skipped and counted. No user code and no executor call runs under the
/// lock.
/// </para>
/// </remarks>
internal sealed class ScheduleRunner : IDisposable
{
    private readonly Action<RecurringTickContext> _handler;
    private readonly IBoundedExecutorRegistry _executors;
    private readonly IServiceScopeFactory _scopes;
    private readonly TimeProvider _clock;
    private readonly ILogger _logger;
    private readonly CancellationToken _stopping;
    private readonly ITimer _timer;
    private RecurringSchedule _schedule;
    private DateTimeOffset? _nextTick;
    private bool _paused;
    private bool _stopped = true;
    private bool _running;
    private (DateTimeOffset At, bool Triggered)? _pending;
    private DateTimeOffset? _lastScheduledAt;
    private DateTimeOffset? _lastStartedAt;
    private DateTimeOffset? _lastEndedAt;
    private RecurringRunOutcome _lastOutcome;
    private string? _lastError;
    private long _ticks;
    private long _succeeded;
    private long _failed;
    private long _skipped;
    private long _rejected;
    private long _triggered;

    public ScheduleRunner(
        string name, RecurringSchedule schedule, string executor, Action<RecurringTickContext> handler, RecurringScheduleOptions options,
        IBoundedExecutorRegistry executors, IServiceScopeFactory scopes, TimeProvider clock, ILogger logger, CancellationToken stopping)
    {
        Name = name;
        Executor = executor;
        Overlap = options.Overlap;
        Jitter = options.Jitter;
        _paused = options.StartPaused;
        _schedule = schedule;
        _handler = handler;
        _executors = executors;
        _scopes = scopes;
        _clock = clock;
        _logger = logger;
        _stopping = stopping;
        _timer = clock.CreateTimer(static state => ((ScheduleRunner)state!).OnTimer(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
    }

    public string Name { get; }

    public string Executor { get; }

    public RecurringOverlapPolicy Overlap { get; }

    public TimeSpan Jitter { get; }

    private object SyncObj => _timer;

    public void Start()
    {
        lock (SyncObj)
        {
            _stopped = false;
            ArmUnsynchronized(_clock.GetUtcNow());
        }
    }

    public bool Pause()
    {
        lock (SyncObj)
        {
            if (_paused)
            {
                return false;
            }

            _paused = true;
            ArmUnsynchronized(_clock.GetUtcNow());
            return true;
        }
    }

    public bool Resume()
    {
        lock (SyncObj)
        {
            if (!_paused)
            {
                return false;
            }

            _paused = false;
            ArmUnsynchronized(_clock.GetUtcNow());
            return true;
        }
    }

    public void Change(RecurringSchedule schedule)
    {
        lock (SyncObj)
        {
            _schedule = schedule;
            ArmUnsynchronized(_clock.GetUtcNow());
        }
    }

    public RecurringTriggerResult TriggerNow()
    {
        bool start;
        RecurringTriggerResult result;
        var now = _clock.GetUtcNow();
        lock (SyncObj)
        {
            _triggered++;
            result = AdmitUnsynchronized(now, triggered: true, out start);
        }

        return start ? Submit(now, triggered: true) : result;
    }

    public RecurringScheduleStatus GetStatus()
    {
        lock (SyncObj)
        {
            return new RecurringScheduleStatus
            {
                Name = Name,
                Executor = Executor,
                Schedule = _schedule,
                Overlap = Overlap,
                IsPaused = _paused,
                IsRunning = _running,
                NextRunAt = _paused || _stopped ? null : _nextTick,
                LastScheduledAt = _lastScheduledAt,
                LastStartedAt = _lastStartedAt,
                LastEndedAt = _lastEndedAt,
                LastOutcome = _lastOutcome,
                LastError = _lastError,
                Ticks = _ticks,
                Succeeded = _succeeded,
                Failed = _failed,
                Skipped = _skipped,
                Rejected = _rejected,
                Triggered = _triggered,
            };
        }
    }

    /// <summary>Stops the timer for good; a run going goes on.</summary>
    public void Dispose()
    {
        lock (SyncObj)
        {
            _stopped = true;
            _nextTick = null;
        }

        _timer.Dispose();
    }

    private void OnTimer()
    {
        DateTimeOffset tick;
        bool start;
        lock (SyncObj)
        {
            var now = _clock.GetUtcNow();
            if (_stopped || _paused || _nextTick is not { } due || due > now)
            {
                // A timer of an earlier arming (a change, a pause) that fired before it was re-armed: re-arm.
                if (!_stopped && !_paused && _nextTick is { } later && later > now)
                {
                    _timer.Change(Delay(later, now), Timeout.InfiniteTimeSpan);
                }

                return;
            }

            tick = due;
            _ticks++;
            _lastScheduledAt = tick;
            _nextTick = _schedule.GetNextOccurrence(tick);
            while (_nextTick is { } next && next + Jitter < now)
            {
                // The process did not run while this tick was due (suspended, or the clock stepped): counted, not run.
                _ticks++;
                _skipped++;
                _logger.ScheduleTickMissed(Name, next);
                _nextTick = _schedule.GetNextOccurrence(next);
            }

            if (_nextTick is { } armed)
            {
                _timer.Change(Delay(armed, now), Timeout.InfiniteTimeSpan);
            }

            AdmitUnsynchronized(tick, triggered: false, out start);
        }

        if (start)
        {
            Submit(tick, triggered: false);
        }
    }

    /// <summary>Decides a tick's fate under the lock: start it (the caller submits it after the lock), queue it or skip it.</summary>
    private RecurringTriggerResult AdmitUnsynchronized(DateTimeOffset tick, bool triggered, out bool start)
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        start = false;
        if (!_running)
        {
            _running = true;
            start = true;
            return RecurringTriggerResult.Started;
        }

        if (Overlap == RecurringOverlapPolicy.Queue && _pending is null)
        {
            _pending = (tick, triggered);
            return RecurringTriggerResult.Queued;
        }

        _skipped++;
        _logger.ScheduleTickSkipped(Name, tick);
        return RecurringTriggerResult.Skipped;
    }

    private void ArmUnsynchronized(DateTimeOffset now)
    {
        Debug.Assert(Monitor.IsEntered(SyncObj));
        _nextTick = _stopped || _paused ? null : _schedule.GetNextOccurrence(now);
        _timer.Change(_nextTick is { } next ? Delay(next, now) : Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
    }

    private TimeSpan Delay(DateTimeOffset tick, DateTimeOffset now)
    {
        var delay = tick - now;
        if (Jitter > TimeSpan.Zero)
        {
            delay += TimeSpan.FromTicks(Random.Shared.NextInt64(Jitter.Ticks + 1));
        }

        // A timer takes at most about 49 days; a farther tick is re-armed when this one fires early (see OnTimer).
        var max = TimeSpan.FromMilliseconds(uint.MaxValue - 1);
        return delay < TimeSpan.Zero ? TimeSpan.Zero : delay > max ? max : delay;
    }

    /// <summary>Hands a run to the executor; when it refuses, counts it and goes on with the waiting tick, if any.</summary>
    private RecurringTriggerResult Submit(DateTimeOffset tick, bool triggered)
    {
        var result = RecurringTriggerResult.Started;
        var firstAttempt = true;
        var next = ((DateTimeOffset At, bool Triggered)?)(tick, triggered);
        while (next is { } run)
        {
            string? refusal = null;
            try
            {
                if (!_executors.TryGetExecutor(Executor, out var executor))
                {
                    refusal = $"Executor '{Executor}' is not registered.";
                }
                else if (!executor.TryExecute(static state => state.Runner.Run(state.At, state.Triggered), (Runner: this, run.At, run.Triggered)))
                {
                    refusal = $"Executor '{Executor}' refused the run (full or shut down).";
                }
            }
            catch (Exception ex)
            {
                refusal = $"Executor '{Executor}' refused the run: {ex.Message}";
            }

            if (refusal is null)
            {
                return result;
            }

            result = firstAttempt ? RecurringTriggerResult.Rejected : result;
            firstAttempt = false;
            _logger.ScheduleRunRejected(Name, Executor, refusal);
            lock (SyncObj)
            {
                _rejected++;
                _lastOutcome = RecurringRunOutcome.Rejected;
                _lastError = refusal;
                _lastEndedAt = _clock.GetUtcNow();
                next = _pending;
                _pending = null;
                _running = next is not null;
            }
        }

        return result;
    }

    private void Run(DateTimeOffset tick, bool triggered)
    {
        lock (SyncObj)
        {
            _lastStartedAt = _clock.GetUtcNow();
            _lastScheduledAt = tick;
        }

        Exception? failure = null;
        try
        {
            using var scope = _scopes.CreateScope();
            _handler(new RecurringTickContext(Name, tick, triggered, scope.ServiceProvider, _stopping));
        }
        catch (Exception ex)
        {
            failure = ex;
            _logger.ScheduleRunFailed(Name, tick, ex);
        }

        (DateTimeOffset At, bool Triggered)? pending;
        lock (SyncObj)
        {
            _lastEndedAt = _clock.GetUtcNow();
            if (failure is null)
            {
                _succeeded++;
                _lastOutcome = RecurringRunOutcome.Succeeded;
                _lastError = null;
            }
            else
            {
                _failed++;
                _lastOutcome = RecurringRunOutcome.Failed;
                _lastError = failure.GetType().Name + ": " + failure.Message;
            }

            pending = _pending;
            _pending = null;
            _running = pending is not null;
        }

        if (pending is { } waiting)
        {
            Submit(waiting.At, waiting.Triggered);
        }
    }
}
