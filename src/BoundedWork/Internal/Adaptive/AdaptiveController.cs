using System.Diagnostics;

namespace BoundedWork.Internal.Adaptive;

/// <summary>
/// Finds an executor's worker count between a minimum and a maximum: fed one <see cref="AdaptiveSample"/> per
/// interval, it returns an <see cref="AdaptiveDecision"/> (the count to run at, the rule that fired, the signals).
/// The executor applies it; the controller touches nothing else, reads no clock but its <see cref="TimeProvider"/>
/// and costs nothing per item.
/// </summary>
/// <remarks>
/// <para>
/// The problem it solves: more workers help only while the blocking dependency behind them has capacity. Past its
/// knee (a database with K connections) they add latency, not throughput. So the controller adds workers only while
/// there is more work than workers and the last step paid, and it removes them when the run time says the dependency
/// saturates or items fail. The rules, in the order they are tried each interval:
/// </para>
/// <list type="number">
/// <item><description><b>Pin.</b> An operator's pin holds the count (clamped to the bounds) until unpinned or until its
/// time runs out (<see cref="Pin"/>).</description></item>
/// <item><description><b>Bounds.</b> A count outside the minimum and maximum is brought inside.</description></item>
/// <item><description><b>Cooldown and budget.</b> No change within <see cref="AdaptiveParameters.Cooldown"/> of the last
/// one, and at most <see cref="AdaptiveParameters.MaxChangesPerMinute"/> in any minute.</description></item>
/// <item><description><b>Failures.</b> When the share of failed or slow-reported items rises
/// <see cref="AdaptiveParameters.FailureRiseThreshold"/> above its usual level, remove workers in proportion (at most
/// <see cref="AdaptiveParameters.MaxDecrease"/>). A persistent level becomes the usual one over
/// <see cref="AdaptiveParameters.FailureMemory"/>.</description></item>
/// <item><description><b>Judging the last step.</b> A growth step is judged on the throughput measured at the new
/// count, once enough items have finished for the expected gain to stand out of the noise: it paid if completions per
/// second rose by at least <see cref="AdaptiveParameters.PayoffFraction"/> of the proportional gain (or the queue
/// stopped standing: the demand is met); it paid partly if they rose by less, and then the count settles at the
/// estimated knee (the old count times the throughput ratio); otherwise it is reverted. Where growth stopped paying
/// becomes a ceiling that blocks growth for <see cref="AdaptiveParameters.ProbeHoldTime"/>; after it one probe step
/// (<see cref="AdaptiveParameters.ProbeStep"/>) may try again, and each probe that does not pay doubles the hold. A
/// back-off for saturation is judged too: if the run time did not come down, the dependency itself became slower,
/// and its new run time becomes the baseline.</description></item>
/// <item><description><b>Starving queue.</b> Whatever holds the count (a back-off, a ceiling, a run time above the
/// baseline), a queue that has stood for <see cref="AdaptiveParameters.StarvingQueueProbeAfter"/> and grown meanwhile
/// gets one worker more; the step is judged on the queue, not on the run time: it pays if the queue stops standing or
/// growing, or throughput rises by the usual payoff (then a run time above the baseline becomes the baseline: more
/// workers served more at it). One that does not pay is reverted and doubles the wait for the next.</description></item>
/// <item><description><b>Saturation.</b> When the smoothed run time climbs past
/// <see cref="AdaptiveParameters.BackoffTolerance"/> above the baseline, remove workers in proportion to the ratio of
/// the two (the gradient, bounded: never above 1, never below 1 - <see cref="AdaptiveParameters.MaxDecrease"/>), and
/// put a ceiling there; but while the workers had slack, never below the workers the arrivals need (arrivals per
/// second times the run time, the busy workers' mean, plus a tenth): a back-off there relieves nothing (the run time
/// may be up for reasons more workers do not worsen, such as a neighbour's CPU burst) and only builds a
/// queue.</description></item>
/// <item><description><b>Growth.</b> When the queue is standing (its shortest wait over the interval is at least
/// <see cref="AdaptiveParameters.QueueWaitTarget"/>: CoDel's signal, which a momentary burst does not raise), the run
/// time is within <see cref="AdaptiveParameters.GrowthTolerance"/> of the baseline, the count is below the maximum
/// and any ceiling, and the current count has been measured: grow towards the demand estimate (run time times
/// arrivals per second plus the backlog over <see cref="AdaptiveParameters.DrainTime"/>, Little's law), at most by
/// <see cref="AdaptiveParameters.MaxGrowthFactor"/>. At a ceiling or the maximum, and only if no interval was ever
/// measured at a lower count (the executor may have started above the knee), one probe step down is tried instead,
/// and kept if it costs no throughput.</description></item>
/// <item><description><b>Idle retirement.</b> When workers stayed idle with no standing queue for
/// <see cref="AdaptiveParameters.IdleRetireAfter"/>, retire <see cref="AdaptiveParameters.IdleRetireFraction"/> of
/// those idle throughout (at least one), then wait as long again.</description></item>
/// </list>
/// <para>
/// What it learned from other limiters: it never probes by collapsing concurrency (the baseline is measured
/// passively, and probes are single small steps); the gradient is bounded on both sides; failed items never read as
/// fast ones (throughput counts completed items only, and an interval whose failures rose neither feeds the baseline
/// nor the smoothed run time); and mild overload cannot make the count creep, because growth needs a step that
/// paid, not only a run time near the baseline, and the baseline cannot be raised by adding workers
/// (<see cref="RunTimeBaseline"/>).
/// </para>
/// <para>
/// In advisory mode (<see cref="Advisory"/>) every decision is made and recorded the same way but marked not
/// applied; the controller then keeps following the count the executor really runs at.
/// </para>
/// <para>
/// Thread safety: <see cref="Decide"/> runs on one thread (the watchdog); <see cref="Pin"/>, <see cref="Unpin"/> and
/// <see cref="Advisory"/> may be called from any thread (an admin request). One lock serializes them; it is held for
/// a few arithmetic steps, once per interval, and no user code runs under it.
/// </para>
/// </remarks>
internal sealed class AdaptiveController
{
    private const double BackoffFloorGradient = 0.9;
    private const double RunTimeFellRatio = 0.9;
    private const double FailuresFellRatio = 0.7;
    private const double NoiseStandardErrors = 2;
    private const double MaxRequiredItems = 1_000_000;

    // The arrivals' demand (arrivals per second times run time) binds a back-off only while the workers had this much
    // slack: busy all the time, the arrivals may be paced by the workers themselves (producers waiting for room).
    private const double DemandSlack = 0.95;

    // The headroom above the demand a back-off keeps: the count never goes below ceil(demand x this).
    private const double DemandHeadroom = 1.1;

    private readonly AdaptiveParameters _parameters;
    private readonly TimeProvider _time;
    private readonly Lock _lock = new();
    private readonly RunTimeBaseline _baseline;
    private readonly Queue<long> _recentChanges = new();
    private bool _advisory;
    private int _count = -1;
    private Dwell _dwell;
    private Step? _step;
    private Hold _ceiling;
    private int _confirmedCount;
    private long _lastChange = long.MinValue;
    private double? _smoothedRunTime;
    private double _usualFailureShare;
    private double _idleSeconds;
    private int _previousQueueLength;
    private int _lastQueueLength;
    private int _idleMin;
    private int? _pin;
    private long _pinUntil;
    private bool _unpinned;
    private double _standingSeconds;
    private int _standingFromLength;
    private TimeSpan _starvingProbeAfter;

    /// <summary>Initializes a new instance of the <see cref="AdaptiveController"/> class.</summary>
    /// <param name="parameters">The tuning; see <see cref="AdaptiveParameters"/> for each default.</param>
    /// <param name="time">The clock for cooldowns, holds, pins and decision times.</param>
    /// <exception cref="ArgumentException">A parameter is out of range (the message names every one).</exception>
    public AdaptiveController(AdaptiveParameters parameters, TimeProvider time)
    {
        ArgumentNullException.ThrowIfNull(parameters);
        ArgumentNullException.ThrowIfNull(time);
        var errors = parameters.Validate().ToList();
        if (errors.Count > 0)
        {
            throw new ArgumentException("Invalid adaptive parameters: " + string.Join(" ", errors), nameof(parameters));
        }

        _parameters = parameters;
        _time = time;
        _baseline = new RunTimeBaseline(parameters.BaselineRiseTime);
        _starvingProbeAfter = parameters.StarvingQueueProbeAfter;
    }

    private enum StepKind
    {
        Grow,
        StarvingProbe,
        ProbeDown,
        Backoff,
        FailureBackoff,
    }

    /// <summary>Gets the parameters the controller runs with.</summary>
    public AdaptiveParameters Parameters => _parameters;

    /// <summary>Gets or sets a value indicating whether decisions are only recorded, not applied.</summary>
    public bool Advisory
    {
        get
        {
            lock (_lock)
            {
                return _advisory;
            }
        }

        set
        {
            lock (_lock)
            {
                if (_advisory != value)
                {
                    _advisory = value;
                    ForgetCurrentCount();
                }
            }
        }
    }

    /// <summary>Gets the run-time baseline, or <see langword="null"/> before the first trusted interval.</summary>
    public TimeSpan? Baseline
    {
        get
        {
            lock (_lock)
            {
                return ToTimeSpan(_baseline.Seconds);
            }
        }
    }

    /// <summary>Pins the worker count: the controller holds it until <see cref="Unpin"/>, or for <paramref name="duration"/>.</summary>
    /// <param name="count">The count to hold (clamped to the bounds at each decision).</param>
    /// <param name="duration">How long the pin lasts; <see langword="null"/> or <see cref="Timeout.InfiniteTimeSpan"/> until unpinned.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="count"/> is below 1, or <paramref name="duration"/> is not positive.</exception>
    public void Pin(int count, TimeSpan? duration = null)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(count, 1);
        var forever = duration is null || duration == Timeout.InfiniteTimeSpan;
        if (!forever && duration <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(duration), duration, "A pin's duration must be positive, or infinite (until unpinned).");
        }

        lock (_lock)
        {
            var now = _time.GetTimestamp();
            _pin = count;
            _pinUntil = forever ? long.MaxValue : AddSaturating(now, duration!.Value);
            _unpinned = false;
            ForgetCurrentCount();
        }
    }

    /// <summary>Ends a pin: the next decision says so, and the controller resumes from the count in force.</summary>
    public void Unpin()
    {
        lock (_lock)
        {
            if (_pin is not null)
            {
                _pin = null;
                _unpinned = true;
                ForgetCurrentCount();
            }
        }
    }

    /// <summary>Reads the pin, if any.</summary>
    /// <param name="count">The pinned count.</param>
    /// <param name="until">When the pin ends, or <see langword="null"/> when it lasts until unpinned.</param>
    /// <returns><see langword="true"/> while pinned.</returns>
    public bool TryGetPin(out int count, out DateTimeOffset? until)
    {
        lock (_lock)
        {
            count = _pin ?? 0;
            until = null;

            // One read of the clock for the check and the end: a second read could find the pin over, and report a
            // pin in force that ends before it was read.
            var now = _time.GetTimestamp();
            if (_pin is null || now >= _pinUntil)
            {
                return false; // none, or its time ran out (the next decision says so)
            }

            if (_pinUntil != long.MaxValue)
            {
                until = _time.GetUtcNow() + _time.GetElapsedTime(now, _pinUntil);
            }

            return true;
        }
    }

    /// <summary>Decides the worker count after one interval.</summary>
    /// <param name="sample">What the executor did during the interval.</param>
    /// <returns>The decision; <see cref="AdaptiveDecision.NewCount"/> is always within the sample's bounds, except that a pin outside them is clamped.</returns>
    /// <exception cref="ArgumentException">The sample's bounds or interval are invalid (the message names the field).</exception>
    public AdaptiveDecision Decide(in AdaptiveSample sample)
    {
        ValidateSample(sample);
        lock (_lock)
        {
            var now = _time.GetTimestamp();
            var signals = Observe(sample);
            var plan = Choose(sample, signals, now);
            Debug.Assert(plan.Target >= sample.MinWorkerCount && plan.Target <= sample.MaxWorkerCount, "Every decision stays within the bounds.");
            return Commit(sample, signals, plan, now);
        }
    }

    private static void ValidateSample(in AdaptiveSample sample)
    {
        if (sample.MinWorkerCount < 1)
        {
            throw new ArgumentException($"{nameof(AdaptiveSample.MinWorkerCount)} ({sample.MinWorkerCount}) must be at least 1.", nameof(sample));
        }

        if (sample.MaxWorkerCount < sample.MinWorkerCount)
        {
            throw new ArgumentException($"{nameof(AdaptiveSample.MaxWorkerCount)} ({sample.MaxWorkerCount}) must be at least {nameof(AdaptiveSample.MinWorkerCount)} ({sample.MinWorkerCount}).", nameof(sample));
        }

        if (sample.Interval <= TimeSpan.Zero)
        {
            throw new ArgumentException($"{nameof(AdaptiveSample.Interval)} ({sample.Interval}) must be positive.", nameof(sample));
        }

        if (sample.Completed < 0 || sample.Failed < 0 || sample.SlowItems < 0 || sample.Arrivals < 0 || sample.WorkerCount < 0)
        {
            throw new ArgumentException("A sample's counts must not be negative.", nameof(sample));
        }
    }

    private static TimeSpan? ToTimeSpan(double? seconds) => seconds is { } s ? TimeSpan.FromSeconds(s) : null;

    private long AddSaturating(long timestamp, TimeSpan duration)
    {
        var ticks = duration.TotalSeconds * _time.TimestampFrequency;
        return ticks >= long.MaxValue - (double)timestamp ? long.MaxValue : timestamp + (long)ticks;
    }

    /// <summary>Takes the interval into the running estimates, before any rule looks at them.</summary>
    private AdaptiveSignals Observe(in AdaptiveSample sample)
    {
        var count = sample.WorkerCount;
        var seconds = sample.Interval.TotalSeconds;
        var standing = IsStanding(sample);
        var trusted = IsTrusted(sample);
        var failureShare = FailureShare(sample);
        if (count != _count)
        {
            // The first interval, or someone else changed the count (an operator, a configuration reload): this
            // interval is a mix of two counts, so it starts a new measurement rather than join one.
            _count = count;
            _dwell = new Dwell(count);
            _step = null;
            _idleSeconds = 0;
        }
        else
        {
            _dwell.Add(sample, standing);
        }

        // Little's law at less than one busy worker on average is mostly sampling noise: such an interval moves
        // neither the smoothed run time nor the baseline.
        if (trusted && sample.MeanBusyWorkers >= 1 && !FailuresRose(sample, failureShare))
        {
            var runTime = sample.RunTime!.Value.TotalSeconds;
            _smoothedRunTime = _smoothedRunTime is { } smoothed
                ? smoothed + ((runTime - smoothed) * _parameters.RunTimeSmoothing)
                : runTime;
            _baseline.Observe(runTime, count, sample.Interval, mayRise: count <= Math.Max(_confirmedCount, sample.MinWorkerCount));
        }

        _lastQueueLength = _previousQueueLength;
        _previousQueueLength = sample.QueueLength;
        if (standing)
        {
            if (_standingSeconds == 0)
            {
                _standingFromLength = sample.QueueLength;
            }

            _standingSeconds += seconds;
        }
        else
        {
            _standingSeconds = 0;
            _starvingProbeAfter = _parameters.StarvingQueueProbeAfter;
        }

        if (!standing && sample.IdleWorkers > 0)
        {
            _idleMin = _idleSeconds == 0 ? sample.IdleWorkers : Math.Min(_idleMin, sample.IdleWorkers);
            _idleSeconds += seconds;
        }
        else
        {
            _idleSeconds = 0;
        }

        return new AdaptiveSignals(
            sample.MinQueueWait,
            sample.QueueLength,
            sample.Completed / seconds,
            sample.Arrivals / seconds,
            failureShare,
            trusted ? sample.RunTime : null,
            ToTimeSpan(_smoothedRunTime),
            ToTimeSpan(_baseline.Seconds),
            sample.MeanBusyWorkers,
            sample.IdleWorkers);
    }

    private Plan Choose(in AdaptiveSample sample, in AdaptiveSignals signals, long now)
    {
        var count = sample.WorkerCount;
        var min = sample.MinWorkerCount;
        var max = sample.MaxWorkerCount;
        if (_unpinned)
        {
            _unpinned = false;
            return new Plan(AdaptiveRule.Unpinned, Math.Clamp(count, min, max));
        }

        if (_pin is { } pin)
        {
            if (now < _pinUntil)
            {
                return new Plan(AdaptiveRule.Pinned, Math.Clamp(pin, min, max));
            }

            _pin = null;
            ForgetCurrentCount();
            return new Plan(AdaptiveRule.Unpinned, Math.Clamp(count, min, max));
        }

        if (count < min || count > max)
        {
            return new Plan(AdaptiveRule.Bounds, Math.Clamp(count, min, max));
        }

        if (_lastChange != long.MinValue && _time.GetElapsedTime(_lastChange, now) < _parameters.Cooldown)
        {
            return new Plan(AdaptiveRule.Cooldown, count);
        }

        if (ChangesInLastMinute(now) >= _parameters.MaxChangesPerMinute)
        {
            return new Plan(AdaptiveRule.RateLimited, count);
        }

        // A failure back-off is judged before failures can ask for another one.
        if (_step is { Kind: StepKind.FailureBackoff } failureStep && Judge(failureStep, sample, now) is { } failureVerdict)
        {
            return failureVerdict;
        }

        if (FailuresRose(sample, signals.FailureShare))
        {
            return count > min
                ? Decrease(AdaptiveRule.Failures, count, min, 1 - signals.FailureShare, sample, now)
                : new Plan(AdaptiveRule.AtMinimum, count);
        }

        if (_step is { } step && Judge(step, sample, now) is { } verdict)
        {
            return verdict;
        }

        if (IsStarving(sample) && count < max)
        {
            // Whatever holds the count (a back-off, a ceiling, a run time above the baseline), a queue that keeps
            // growing is never left alone for long: one worker more, judged on whether it serves the queue.
            _standingSeconds = 0;
            return new Plan(AdaptiveRule.StarvingQueue, count + 1, new Step(StepKind.StarvingProbe, count, count + 1, _dwell.Throughput, 0, true));
        }

        var trusted = IsTrusted(sample);
        if (trusted && _baseline.Seconds is { } baseline && _smoothedRunTime > baseline * (1 + _parameters.BackoffTolerance))
        {
            if (count <= min)
            {
                return new Plan(AdaptiveRule.AtMinimum, count);
            }

            // Fewer workers lower the dependency's load only if the workers were busy: a count above the busiest
            // moment of the interval is cut by idle retirement, not by a back-off. And never below the workers the
            // arrivals need: a back-off there cannot relieve anything and only builds a queue.
            var backoff = Decrease(AdaptiveRule.Saturated, count, Math.Max(min, DemandFloor(sample, signals)), baseline * (1 + _parameters.GrowthTolerance) / _smoothedRunTime.Value, sample, now);
            if (backoff.Target < count && backoff.Target < sample.MaxBusyWorkers)
            {
                return backoff;
            }
        }

        if (IsStanding(sample))
        {
            return Grow(sample, signals, now);
        }

        if (_idleSeconds >= _parameters.IdleRetireAfter.TotalSeconds && count > min)
        {
            var retire = Math.Max(1, (int)(_idleMin * _parameters.IdleRetireFraction));
            _idleSeconds = 0;
            return new Plan(AdaptiveRule.RetireIdle, Math.Max(min, count - retire));
        }

        return new Plan(AdaptiveRule.Steady, count);
    }

    /// <summary>The growth rule, with its holds and the probe step down of an executor that may have started above the knee.</summary>
    private Plan Grow(in AdaptiveSample sample, in AdaptiveSignals signals, long now)
    {
        var count = sample.WorkerCount;
        if (!IsTrusted(sample) || _baseline.Seconds is not { } baseline || _smoothedRunTime is not { } runTime)
        {
            return new Plan(AdaptiveRule.NotEnoughData, count);
        }

        // Between the growth and the back-off thresholds the run time cannot tell a dependency near its knee from
        // one that became slower: only a probe step, which must pay, can; and a ceiling holds it back as usual.
        var elevated = runTime > baseline * (1 + _parameters.GrowthTolerance);
        var atMaximum = count >= sample.MaxWorkerCount;
        if (atMaximum || _ceiling.Blocks(count, now))
        {
            if (count > sample.MinWorkerCount && count <= _baseline.LowestCountSeen && HasMeasured())
            {
                var down = count - ProbeSize(count);
                return new Plan(AdaptiveRule.ProbeDown, Math.Max(sample.MinWorkerCount, down), new Step(StepKind.ProbeDown, count, Math.Max(sample.MinWorkerCount, down), _dwell.Throughput, 0, false));
            }

            return new Plan(atMaximum ? AdaptiveRule.AtMaximum : elevated ? AdaptiveRule.RunTimeHigh : AdaptiveRule.AtCeiling, count);
        }

        if (!HasMeasured())
        {
            return new Plan(AdaptiveRule.Measuring, count);
        }

        // Near a known limit (any ceiling, held or expired), growth goes in probe steps that must each pay; far from
        // one, it jumps towards the demand estimate.
        var probing = elevated || (_ceiling.Count > 0 && count >= _ceiling.Count);
        int target;
        if (elevated || _ceiling.Count > 0)
        {
            target = count + ProbeSize(count);
            if (_ceiling.IsActive(now))
            {
                target = Math.Min(target, _ceiling.Count - 1);
            }
        }
        else
        {
            var demand = runTime * (signals.ArrivalsPerSecond + (sample.QueueLength / _parameters.DrainTime.TotalSeconds));
            if (demand <= count && sample.QueueLength < _lastQueueLength)
            {
                return new Plan(AdaptiveRule.Draining, count);
            }

            var most = Math.Max(count + 1, (int)Math.Min(int.MaxValue, Math.Floor(count * _parameters.MaxGrowthFactor)));
            target = (int)Math.Clamp(Math.Ceiling(demand), count + 1, most);
        }

        target = Math.Min(target, sample.MaxWorkerCount);
        return new Plan(AdaptiveRule.Grow, target, new Step(StepKind.Grow, count, target, _dwell.Throughput, 0, probing));
    }

    /// <summary>A back-off: the gradient, bounded to [1 - MaxDecrease, 0.9], times the count, at least one worker less.</summary>
    private Plan Decrease(AdaptiveRule rule, int count, int min, double gradient, in AdaptiveSample sample, long now)
    {
        var bounded = Math.Clamp(double.IsFinite(gradient) ? gradient : 0, 1 - _parameters.MaxDecrease, BackoffFloorGradient);
        var target = Math.Max(min, Math.Min(count - 1, (int)Math.Floor(count * bounded)));
        if (rule != AdaptiveRule.Saturated)
        {
            // Failures: judged too. If fewer workers do not make them rarer, they do not depend on the load (a bug, a
            // dependency that is down), and the level becomes the usual one instead of shrinking the pool to nothing.
            return new Plan(rule, target, new Step(StepKind.FailureBackoff, count, target, _dwell.Throughput, FailureShare(sample), false));
        }

        // Saturation: the step is judged (did the run time come down?) so that a dependency that only became slower
        // moves the baseline instead; growth back to the saturated count goes in probe steps (see Commit).
        var runTime = sample.RunTime?.TotalSeconds ?? _smoothedRunTime ?? 0;
        return new Plan(rule, target, new Step(StepKind.Backoff, count, target, _dwell.Throughput, runTime, false));
    }

    /// <summary>
    /// Judges the step under evaluation, by its kind. Returns a plan when the verdict is to change the count or to keep
    /// measuring; <see langword="null"/> when the step is settled (or cannot be judged yet without holding the other rules).
    /// </summary>
    private Plan? Judge(Step step, in AdaptiveSample sample, long now) => step.Kind switch
    {
        StepKind.Grow => JudgeGrow(step, sample, now),
        StepKind.StarvingProbe => JudgeStarvingProbe(step, sample.WorkerCount),
        StepKind.ProbeDown => JudgeProbeDown(step, sample.WorkerCount, now),
        StepKind.Backoff => JudgeBackoff(step, sample.WorkerCount),
        StepKind.FailureBackoff => JudgeFailureBackoff(step, sample.WorkerCount),
        _ => JudgeUnknown(step, sample.WorkerCount),
    };

    /// <summary>
    /// A growth step: settled when the queue stopped standing; else, with enough evidence, kept if throughput rose by
    /// the payoff, cut back to the knee it estimates, or undone (with a ceiling) when it did not pay or overloaded.
    /// </summary>
    private Plan? JudgeGrow(Step step, in AdaptiveSample sample, long now)
    {
        var count = sample.WorkerCount;
        var overloaded = IsTrusted(sample) && _baseline.Seconds is { } baseline && _smoothedRunTime > baseline * (1 + _parameters.BackoffTolerance);
        if (_dwell.SawNoStandingQueue && !overloaded)
        {
            // The queue stopped standing: the step met the demand.
            Settle(step.To);
            return null;
        }

        var expected = (step.To - step.From) / (double)step.From;
        if (!overloaded && !HasEvidence(expected))
        {
            return new Plan(AdaptiveRule.Measuring, count);
        }

        var gain = step.ThroughputBefore > 0 ? (_dwell.Throughput / step.ThroughputBefore) - 1 : 0;
        _step = null;
        if (!overloaded && gain >= _parameters.PayoffFraction * expected)
        {
            Settle(step.To);
            return null;
        }

        var knee = Math.Clamp((int)Math.Round(step.From * (1 + gain)), step.From, step.To - 1);
        if (!overloaded && knee > step.From && gain >= _parameters.PayoffFraction / step.From)
        {
            // The knee lies between the two counts: settle at the estimate, and let probe steps (each of which
            // must pay) find the rest of the way; the count that overshot is the ceiling.
            _confirmedCount = Math.Max(_confirmedCount, knee);
            SetCeiling(step.To, now, doubled: false);
            return new Plan(AdaptiveRule.GrowthPaidPartly, knee);
        }

        if (step.To - step.From > ProbeSize(step.From))
        {
            // A long step that did not pay says only that its end is too far: go back, and climb from there
            // in probe steps below it.
            SetCeiling(step.To, now, doubled: false);
        }
        else
        {
            SetCeiling(step.From, now, doubled: step.IsProbe && _ceiling.Count == step.From);
        }

        return new Plan(AdaptiveRule.GrowthDidNotPay, step.From);
    }

    /// <summary>A probe against a starving queue: judged on the queue (it stopped standing or growing) or on throughput, not on the run time.</summary>
    private Plan? JudgeStarvingProbe(Step step, int count)
    {
        if (!_dwell.SawNoStandingQueue && !HasEvidence((step.To - step.From) / (double)step.From))
        {
            return new Plan(AdaptiveRule.Measuring, count);
        }

        // Judged on the queue, not on the run time (which may be high for reasons more workers do not worsen,
        // such as a neighbour's CPU burst): it paid if the queue stopped standing or growing, or if throughput
        // rose by the usual payoff.
        _step = null;
        var gain = step.ThroughputBefore > 0 ? (_dwell.Throughput / step.ThroughputBefore) - 1 : 0;
        if (_dwell.SawNoStandingQueue || _dwell.Completed >= _dwell.Arrivals || gain >= _parameters.PayoffFraction * (step.To - step.From) / step.From)
        {
            _starvingProbeAfter = _parameters.StarvingQueueProbeAfter;
            if (_smoothedRunTime is { } runTime && _baseline.Seconds is { } baseline && runTime > baseline * (1 + _parameters.GrowthTolerance))
            {
                // More workers served more at this run time: it is not this executor saturating its dependency.
                _baseline.Reset(runTime);
            }

            Settle(step.To);
            return null;
        }

        _starvingProbeAfter = TimeSpan.FromTicks(Math.Min(_starvingProbeAfter.Ticks * 2, _parameters.MaxProbeHoldTime.Ticks));
        return new Plan(AdaptiveRule.GrowthDidNotPay, step.From);
    }

    /// <summary>A probe down: free (the workers removed did nothing for throughput, a ceiling goes up) or a cost (back to where it was).</summary>
    private Plan? JudgeProbeDown(Step step, int count, long now)
    {
        if (_dwell.SawNoStandingQueue)
        {
            _step = null;
            return null;
        }

        var expectedLoss = (step.From - step.To) / (double)step.From;
        if (!HasEvidence(expectedLoss))
        {
            return new Plan(AdaptiveRule.Measuring, count);
        }

        _step = null;
        var loss = step.ThroughputBefore > 0 ? 1 - (_dwell.Throughput / step.ThroughputBefore) : 0;
        if (loss <= _parameters.PayoffFraction * expectedLoss)
        {
            // Free: the workers removed did nothing for throughput. Growth above this count would not either.
            SetCeiling(step.To, now, doubled: false);
            return null;
        }

        // Not free: this count is the lowest measured now, so no probe goes below it again.
        return new Plan(AdaptiveRule.ProbeDownCost, step.From);
    }

    /// <summary>A back-off for run time: when the run time did not fall with fewer workers, the dependency is slower, and its run time is the new baseline.</summary>
    private Plan? JudgeBackoff(Step step, int count)
    {
        if (_dwell.Completed < _parameters.MinItemsPerInterval)
        {
            // No further back-off before this one is judged, unless the judging runs out of time.
            if (_dwell.Seconds < _parameters.MaxEvaluationTime.TotalSeconds)
            {
                return new Plan(AdaptiveRule.Measuring, count);
            }

            _step = null;
            return null;
        }

        _step = null;
        if (_dwell.RunTime >= step.Before * RunTimeFellRatio)
        {
            // Fewer workers, same run time: not saturation by this executor but a slower dependency. Its run
            // time is the new baseline, and the ceiling the back-off put up is lifted.
            _baseline.Reset(_dwell.RunTime);
            _smoothedRunTime = _dwell.RunTime;
            _confirmedCount = Math.Max(_confirmedCount, step.To);
            _ceiling = default;
        }

        return null;
    }

    /// <summary>A back-off for failures: when the failure share did not fall with fewer workers, it is the usual share.</summary>
    private Plan? JudgeFailureBackoff(Step step, int count)
    {
        if (_dwell.Finished + _dwell.SlowItems < _parameters.MinItemsPerInterval)
        {
            if (_dwell.Seconds < _parameters.MaxEvaluationTime.TotalSeconds)
            {
                return new Plan(AdaptiveRule.Measuring, count);
            }

            _step = null;
            return null;
        }

        _step = null;
        if (_dwell.FailureShare >= step.Before * FailuresFellRatio)
        {
            _usualFailureShare = Math.Max(_usualFailureShare, _dwell.FailureShare);
        }

        return null;
    }

    /// <summary>
    /// A step of a kind no judge knows: a defect in the controller. It fails in Debug; in Release it is judged as a
    /// back-off, as it always was, so a release build keeps deciding.
    /// </summary>
    private Plan? JudgeUnknown(Step step, int count)
    {
        Debug.Fail($"The adaptive controller has no judge for a step of kind {step.Kind}.");
        return JudgeBackoff(step, count);
    }

    /// <summary>A growth step paid: counts up to it are below the knee, and a ceiling it passed is lifted.</summary>
    private void Settle(int count)
    {
        _step = null;
        if (_smoothedRunTime is { } runTime && _baseline.Seconds is { } baseline && runTime <= baseline * (1 + _parameters.GrowthTolerance))
        {
            _confirmedCount = Math.Max(_confirmedCount, count);
        }

        if (_ceiling.Count > 0 && count >= _ceiling.Count)
        {
            _ceiling = default;
        }
    }

    private AdaptiveDecision Commit(in AdaptiveSample sample, in AdaptiveSignals signals, Plan plan, long now)
    {
        var decision = new AdaptiveDecision(_time.GetUtcNow(), sample.WorkerCount, plan.Target, plan.Rule, signals, Applied: !_advisory);
        if (decision.IsChange)
        {
            if (plan.Rule is not (AdaptiveRule.Pinned or AdaptiveRule.Unpinned or AdaptiveRule.Bounds))
            {
                _recentChanges.Enqueue(now);
            }

            _lastChange = now;
            if (!_advisory)
            {
                // What was measured at the old count says nothing about the new one: start measuring afresh.
                _count = plan.Target;
                _dwell = new Dwell(plan.Target);
                _smoothedRunTime = null;
                _step = plan.Step;
                _idleSeconds = 0;
                if (plan.Rule == AdaptiveRule.Saturated)
                {
                    SetCeiling(sample.WorkerCount, now, doubled: false);
                }
            }
        }

        if (sample.Finished + sample.SlowItems >= _parameters.MinItemsPerInterval)
        {
            var weight = 1 - Math.Exp(-sample.Interval.TotalSeconds / _parameters.FailureMemory.TotalSeconds);
            _usualFailureShare += (signals.FailureShare - _usualFailureShare) * weight;
        }

        return decision;
    }

    /// <summary>Puts a ceiling at <paramref name="count"/>: for the probe hold, or twice the last hold after a probe that did not pay.</summary>
    private void SetCeiling(int count, long now, bool doubled)
    {
        var length = doubled && _ceiling.Length > TimeSpan.Zero
            ? TimeSpan.FromTicks(Math.Min(_ceiling.Length.Ticks * 2, _parameters.MaxProbeHoldTime.Ticks))
            : _parameters.ProbeHoldTime;
        _ceiling = new Hold(count, AddSaturating(now, length), length);
    }

    private int ChangesInLastMinute(long now)
    {
        while (_recentChanges.Count > 0 && _time.GetElapsedTime(_recentChanges.Peek(), now) >= TimeSpan.FromMinutes(1))
        {
            _recentChanges.Dequeue();
        }

        return _recentChanges.Count;
    }

    /// <summary>Forgets what was measured at the count in force (after a pin, an unpin or a switch of mode).</summary>
    private void ForgetCurrentCount()
    {
        _count = -1;
        _step = null;
        _ceiling = default;
    }

    /// <summary>
    /// Whether the queue has stood for the starving-queue probe time (doubled after each such probe that did not pay)
    /// and grown meanwhile.
    /// </summary>
    private bool IsStarving(in AdaptiveSample sample) =>
        IsStanding(sample) && _standingSeconds >= _starvingProbeAfter.TotalSeconds && sample.QueueLength > _standingFromLength;

    /// <summary>
    /// The fewest workers a back-off may leave: the arrivals per second times the run time (the busy workers' mean when
    /// the executor keeps up), with headroom, while the workers had slack, in this interval or on average since the
    /// count last changed (one interval's few looks can all find every worker busy); 0 when they were busy throughout
    /// (the arrivals may then be paced by the workers, and say nothing about the need).
    /// </summary>
    private int DemandFloor(in AdaptiveSample sample, in AdaptiveSignals signals)
    {
        var count = sample.WorkerCount;
        var runTime = Math.Max(sample.RunTime?.TotalSeconds ?? 0, signals.SmoothedRunTime?.TotalSeconds ?? 0);
        var demand = signals.ArrivalsPerSecond * runTime;
        var meanBusy = _dwell.Seconds > 0 ? _dwell.BusySeconds / _dwell.Seconds : demand;
        var slack = demand < count * DemandSlack || meanBusy < count * DemandSlack;
        return demand > 0 && slack ? (int)Math.Min(count, Math.Ceiling(demand * DemandHeadroom)) : 0;
    }

    private bool IsStanding(in AdaptiveSample sample) =>
        sample.QueueLength > 0 && sample.MinQueueWait >= _parameters.QueueWaitTarget;

    private bool IsTrusted(in AdaptiveSample sample) =>
        sample.RunTime is not null && sample.Completed >= _parameters.MinItemsPerInterval;

    private static double FailureShare(in AdaptiveSample sample)
    {
        var seen = sample.Finished + sample.SlowItems;
        return seen == 0 ? 0 : Math.Min(1, (sample.Failed + sample.SlowItems) / (double)seen);
    }

    private bool FailuresRose(in AdaptiveSample sample, double share) =>
        sample.Finished + sample.SlowItems >= _parameters.MinItemsPerInterval
        && share - _usualFailureShare >= _parameters.FailureRiseThreshold;

    /// <summary>Whether the current count has been measured with a standing queue for at least one whole interval.</summary>
    private bool HasMeasured() => _dwell.StandingCompleted >= _parameters.MinItemsPerInterval && _dwell.StandingSeconds > 0;

    /// <summary>
    /// Whether enough items finished at the current count for a relative change in throughput of
    /// <paramref name="expected"/> to stand out of the counting noise (two standard errors of a count of n items is
    /// about 2 / sqrt(n) of it), or the measurement ran out of time.
    /// </summary>
    private bool HasEvidence(double expected)
    {
        var needed = Math.Min(MaxRequiredItems, Math.Pow(NoiseStandardErrors / (_parameters.PayoffFraction * Math.Max(expected, 1e-6)), 2));
        return (_dwell.StandingCompleted >= Math.Max(needed, _parameters.MinItemsPerInterval) && _dwell.StandingSeconds > 0)
            || _dwell.Seconds >= _parameters.MaxEvaluationTime.TotalSeconds;
    }

    private int ProbeSize(int count) => Math.Max(1, (int)Math.Round(count * _parameters.ProbeStep));

    /// <summary>A count to move to, why, and the step to judge afterwards (if any).</summary>
    private readonly record struct Plan(AdaptiveRule Rule, int Target, Step? Step = null);

    /// <summary>A change under evaluation; <paramref name="Before"/> is the run time before a back-off, or the failure share before a failure back-off.</summary>
    private sealed record Step(StepKind Kind, int From, int To, double ThroughputBefore, double Before, bool IsProbe);

    /// <summary>What was measured since the count last changed; standing-queue intervals apart (service-limited throughput).</summary>
    private struct Dwell(int count)
    {
        public int Count = count;
        public double Seconds;
        public long Finished;
        public long Completed;
        public double BusySeconds;
        public double StandingSeconds;
        public long StandingCompleted;
        public bool SawNoStandingQueue;
        public long Troubled;
        public long SlowItems;
        public long Arrivals;

        /// <summary>Gets the share of the items seen that failed or were reported slow.</summary>
        public readonly double FailureShare => Finished + SlowItems > 0 ? Math.Min(1, Troubled / (double)(Finished + SlowItems)) : 0;

        /// <summary>Gets the completions per second over the standing-queue intervals (what the workers can do).</summary>
        public readonly double Throughput => StandingSeconds > 0 ? StandingCompleted / StandingSeconds : 0;

        /// <summary>Gets the busy time per completed item over the whole dwell (Little's law).</summary>
        public readonly double RunTime => Completed > 0 ? BusySeconds / Completed : 0;

        public void Add(in AdaptiveSample sample, bool standing)
        {
            var seconds = sample.Interval.TotalSeconds;
            Seconds += seconds;
            Finished += sample.Finished;
            Troubled += sample.Failed + sample.SlowItems;
            SlowItems += sample.SlowItems;
            BusySeconds += (sample.RunTime?.TotalSeconds ?? 0) * sample.Completed;
            Completed += sample.Completed;
            Arrivals += sample.Arrivals;
            if (standing)
            {
                StandingSeconds += seconds;
                StandingCompleted += sample.Completed;
            }
            else
            {
                SawNoStandingQueue = true;
            }
        }
    }

    /// <summary>A count above which growth waits (a ceiling) until a time; <see cref="Length"/> doubles for repeated probes.</summary>
    private readonly record struct Hold(int Count, long Until, TimeSpan Length)
    {
        public bool IsActive(long now) => Count > 0 && now < Until;

        public bool Blocks(int count, long now) => IsActive(now) && count >= Count;
    }
}
