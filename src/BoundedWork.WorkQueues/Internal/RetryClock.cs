using System.Diagnostics;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// The <see cref="TimeProvider"/> of the work queues' resilience pipelines: its timers (retry delays, per-attempt
/// timeouts) fire on one dedicated background thread, so waiting for a retry holds no worker and needs no ThreadPool
/// thread. Callbacks run one at a time on that thread and must be short: the queues' only do a handoff to an
/// executor.
/// </summary>
/// <remarks>
/// Pending timers sit in a sorted set ordered by due time (then creation order), so changing or disposing a timer
/// removes it at once instead of leaving it behind until it would have fired. The thread sleeps on the lock's
/// monitor until the earliest timer is due, and is pulsed only when a new timer is due before that wake-up
/// (<c>_wakeAt</c>, read and written under the lock, so no pulse is lost between the check and the wait).
/// </remarks>
internal sealed class RetryClock : TimeProvider, IDisposable
{
    /// <summary>The longest the thread sleeps at once (a monitor wait's limit is about 24.8 days).</summary>
    private static readonly TimeSpan s_maxSleep = TimeSpan.FromDays(1);

    private readonly object _sync = new();
    private readonly SortedSet<Node> _due = new(NodeComparer.Instance);
    private readonly double _timestampsPerTick = Stopwatch.Frequency / (double)TimeSpan.TicksPerSecond;
    private long _sequence;
    private long _wakeAt = long.MaxValue;
    private Thread? _thread;
    private bool _disposed;

    /// <summary>Gets the number of timers waiting to fire (for diagnostics).</summary>
    public int PendingCount
    {
        get
        {
            lock (_sync)
            {
                return _due.Count;
            }
        }
    }

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        ArgumentNullException.ThrowIfNull(callback);
        var timer = new ClockTimer(this, callback, state);
        timer.Change(dueTime, period);
        return timer;
    }

    public void Dispose()
    {
        lock (_sync)
        {
            _disposed = true;
            _due.Clear();
            Monitor.PulseAll(_sync);
        }
    }

    private bool Schedule(ClockTimer timer, TimeSpan dueTime, TimeSpan period)
    {
        lock (_sync)
        {
            if (timer.Node is { } old)
            {
                _due.Remove(old);
                timer.Node = null;
            }

            if (timer.Disposed)
            {
                return false;
            }

            timer.Period = period;
            if (dueTime == Timeout.InfiniteTimeSpan || _disposed)
            {
                return true;
            }

            var dueTicks = Math.Max(0, dueTime.Ticks);
            var node = new Node(GetTimestamp() + (long)(dueTicks * _timestampsPerTick), ++_sequence, timer);
            _due.Add(node);
            timer.Node = node;
            if (node.DueTimestamp < _wakeAt)
            {
                // Due before the thread's next wake-up: wake it to sleep less. A timer due later (the usual case for
                // per-attempt timeouts, which are mostly disposed before they fire) costs no wake-up at all.
                _wakeAt = node.DueTimestamp;
                Monitor.Pulse(_sync);
            }

            if (_thread is null)
            {
                _thread = new Thread(Run) { IsBackground = true, Name = "boundedwork-retry-clock" };
                _thread.Start();
            }

            return true;
        }
    }

    private void Unschedule(ClockTimer timer)
    {
        lock (_sync)
        {
            timer.Disposed = true;
            if (timer.Node is { } node)
            {
                _due.Remove(node);
                timer.Node = null;
            }
        }
    }

    private void Run()
    {
        while (true)
        {
            ClockTimer due;
            lock (_sync)
            {
                while (true)
                {
                    if (_disposed)
                    {
                        return;
                    }

                    if (_due.Count == 0)
                    {
                        _wakeAt = long.MaxValue;
                        Monitor.Wait(_sync);
                        continue;
                    }

                    var first = _due.Min!;
                    var wait = first.DueTimestamp - GetTimestamp();
                    if (wait <= 0)
                    {
                        _due.Remove(first);
                        first.Timer.Node = null;
                        due = first.Timer;
                        break;
                    }

                    // A monitor waits at most int.MaxValue ms (about 24.8 days) at once, and a delayed item may be due
                    // in 365 days: sleep at most s_maxSleep, then look again.
                    _wakeAt = first.DueTimestamp;
                    Monitor.Wait(_sync, TimeSpan.FromTicks(Math.Clamp((long)Math.Ceiling(wait / _timestampsPerTick), 1, s_maxSleep.Ticks)));
                }
            }

            try
            {
                due.Callback(due.State);
            }
            catch (Exception)
            {
                // A timer callback must not kill the clock: the BCL's own callbacks here (Task.Delay,
                // CancellationTokenSource) do not throw, and user callbacks registered on a token run through them.
            }

            var period = due.Period;
            if (period != Timeout.InfiniteTimeSpan && period > TimeSpan.Zero)
            {
                Schedule(due, period, period);
            }
        }
    }

    private sealed class ClockTimer(RetryClock clock, TimerCallback callback, object? state) : ITimer
    {
        public TimerCallback Callback { get; } = callback;

        public object? State { get; } = state;

        public Node? Node { get; set; }

        public TimeSpan Period { get; set; } = Timeout.InfiniteTimeSpan;

        public bool Disposed { get; set; }

        public bool Change(TimeSpan dueTime, TimeSpan period) => clock.Schedule(this, dueTime, period);

        public void Dispose() => clock.Unschedule(this);

        public ValueTask DisposeAsync()
        {
            Dispose();
            return ValueTask.CompletedTask;
        }
    }

    private sealed record Node(long DueTimestamp, long Sequence, ClockTimer Timer);

    private sealed class NodeComparer : IComparer<Node>
    {
        public static readonly NodeComparer Instance = new();

        public int Compare(Node? x, Node? y)
        {
            if (ReferenceEquals(x, y))
            {
                return 0;
            }

            var byDue = x!.DueTimestamp.CompareTo(y!.DueTimestamp);
            return byDue != 0 ? byDue : x.Sequence.CompareTo(y.Sequence);
        }
    }
}
