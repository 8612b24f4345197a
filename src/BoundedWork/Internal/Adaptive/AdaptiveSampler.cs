namespace BoundedWork.Internal.Adaptive;

/// <summary>
/// Turns the watchdog's looks at the executor (<see cref="AdaptiveReading"/>) into one <see cref="AdaptiveSample"/>
/// per measurement interval, for <see cref="AdaptiveController"/>.
/// </summary>
/// <remarks>
/// <para>
/// Per look it keeps four numbers: the least oldest-item age (the interval's shortest queue wait, CoDel's standing
/// queue signal: a momentary burst does not keep it up for a whole interval), the most busy workers, and the busy
/// workers integrated over time (trapezoids between looks). The counters are differences between the interval's
/// first and last look. Nothing is read per item and nothing is allocated.
/// </para>
/// <para>
/// An interval ends at the first look at least <see cref="AdaptiveParameters.Interval"/> after it began, once
/// <see cref="AdaptiveParameters.MinItemsPerInterval"/> items have finished in it, or at the first look after
/// <see cref="AdaptiveParameters.MaxInterval"/> whatever finished. That look also begins the next interval, so
/// intervals tile time. A counter that goes backwards (which the executor's counters never do) restarts the interval
/// without a sample rather than report a negative count.
/// </para>
/// <para>Not thread-safe: one thread (the watchdog) calls <see cref="Observe"/>.</para>
/// </remarks>
internal sealed class AdaptiveSampler
{
    private readonly AdaptiveParameters _parameters;
    private readonly TimeProvider _time;
    private bool _started;
    private AdaptiveReading _first;
    private AdaptiveReading _previous;
    private TimeSpan _minQueueWait;
    private int _maxBusy;
    private double _busySeconds;

    /// <summary>Initializes a new instance of the <see cref="AdaptiveSampler"/> class.</summary>
    /// <param name="parameters">The interval lengths and the items an interval needs.</param>
    /// <param name="time">The clock the readings' timestamps come from.</param>
    public AdaptiveSampler(AdaptiveParameters parameters, TimeProvider time)
    {
        ArgumentNullException.ThrowIfNull(parameters);
        ArgumentNullException.ThrowIfNull(time);
        _parameters = parameters;
        _time = time;
    }

    /// <summary>Takes one look; when it ends an interval, returns the interval's sample.</summary>
    /// <param name="reading">What the watchdog read, with a timestamp no earlier than the previous one's.</param>
    /// <param name="sample">The finished interval's sample, when this look ended one.</param>
    /// <returns><see langword="true"/> when an interval ended and <paramref name="sample"/> describes it.</returns>
    public bool Observe(in AdaptiveReading reading, out AdaptiveSample sample)
    {
        sample = default;
        if (!_started || GoesBackwards(reading))
        {
            Begin(reading);
            return false;
        }

        var step = _time.GetElapsedTime(_previous.Timestamp, reading.Timestamp);
        if (step > TimeSpan.Zero)
        {
            _busySeconds += (_previous.BusyWorkers + reading.BusyWorkers) / 2.0 * step.TotalSeconds;
        }

        _minQueueWait = Min(_minQueueWait, reading.OldestQueuedAge);
        _maxBusy = Math.Max(_maxBusy, reading.BusyWorkers);
        _previous = reading;

        var elapsed = _time.GetElapsedTime(_first.Timestamp, reading.Timestamp);
        var completed = reading.Completed - _first.Completed;
        var failed = reading.Failed - _first.Failed;
        if (elapsed < _parameters.Interval || (completed + failed < _parameters.MinItemsPerInterval && elapsed < _parameters.MaxInterval))
        {
            return false;
        }

        sample = new AdaptiveSample
        {
            Interval = elapsed,
            WorkerCount = reading.WorkerCount,
            MinWorkerCount = reading.MinWorkerCount,
            MaxWorkerCount = reading.MaxWorkerCount,
            Completed = completed,
            Failed = failed,
            SlowItems = reading.SlowItems - _first.SlowItems,
            Arrivals = reading.Submitted - _first.Submitted,
            MinQueueWait = _minQueueWait,
            QueueLength = reading.QueueLength,
            MeanBusyWorkers = _busySeconds / elapsed.TotalSeconds,
            MaxBusyWorkers = _maxBusy,
            RunTime = completed > 0 ? TimeSpan.FromSeconds(_busySeconds / completed) : null,
        };
        Begin(reading);
        return true;
    }

    private static TimeSpan Min(TimeSpan a, TimeSpan b) => a < b ? a : b;

    private bool GoesBackwards(in AdaptiveReading reading) =>
        reading.Timestamp < _previous.Timestamp
        || reading.Completed < _previous.Completed
        || reading.Failed < _previous.Failed
        || reading.Submitted < _previous.Submitted
        || reading.SlowItems < _previous.SlowItems;

    private void Begin(in AdaptiveReading reading)
    {
        _started = true;
        _first = reading;
        _previous = reading;
        _minQueueWait = reading.OldestQueuedAge;
        _maxBusy = reading.BusyWorkers;
        _busySeconds = 0;
    }
}
