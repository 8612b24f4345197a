using BoundedWork.Internal.Adaptive;
using Microsoft.Extensions.Time.Testing;

namespace BoundedWork.AdaptiveSimulation;

/// <summary>
/// A discrete-time model of an executor in front of a <see cref="Downstream"/>, driven by the adaptive controller
/// (or at a fixed worker count). Deterministic for a seed; simulated minutes run in a fraction of a second.
/// </summary>
/// <remarks>
/// Each step of <see cref="SimulationSettings.Step"/>: items arrive (Poisson or paced) into a bounded queue (rejected
/// when full); calls whose service ended complete and hand their connection to the next waiting call; idle workers
/// take queued items and call the dependency (waiting for a connection when all <see cref="Downstream.Capacity"/> are
/// taken). Like the executor, growing starts idle workers at once, and shrinking retires idle workers at once and
/// busy ones when they finish their item. Every <see cref="SimulationSettings.LookPeriod"/> the simulated watchdog
/// reads what the real one reads (<see cref="AdaptiveReading"/>), on a <see cref="FakeTimeProvider"/> that follows the
/// simulated time, and passes it through the same <see cref="AdaptiveSampler"/> and <see cref="AdaptiveController"/>.
/// </remarks>
internal sealed class Simulator
{
    private readonly SimulationSettings _settings;
    private readonly Random _random;
    private readonly FakeTimeProvider _clock = new(Epoch);
    private readonly Queue<double> _queue = new();
    private readonly Queue<double> _waitingForConnection = new();
    private readonly PriorityQueue<(double Started, bool Fails), double> _inService = new();
    private readonly AdaptiveSampler? _sampler;
    private readonly AdaptiveController? _controller;
    private readonly SimulationRecorder _recorder;
    private double _now;
    private double _paced;
    private int _target;
    private int _live;
    private int _busy;
    private long _submitted;
    private long _completed;
    private long _failed;
    private long _rejected;

    /// <summary>Gets the simulated clock's time at the start of every run (decision times count from it).</summary>
    public static DateTimeOffset Epoch { get; } = new(2025, 1, 1, 0, 0, 0, TimeSpan.Zero);

    private Simulator(SimulationSettings settings)
    {
        _settings = settings;
        _random = new Random(settings.Seed);
        _target = _live = settings.InitialWorkers;
        if (settings.Adaptive is { } parameters)
        {
            _sampler = new AdaptiveSampler(parameters, _clock);
            _controller = new AdaptiveController(parameters, _clock) { Advisory = settings.Advisory };
        }

        _recorder = new SimulationRecorder(settings.RecordPeriod.TotalSeconds);
    }

    /// <summary>Gets the controller, to pin or unpin it from <see cref="Run(SimulationSettings, Action{Simulator, double}?)"/>'s callback.</summary>
    public AdaptiveController? Controller => _controller;

    /// <summary>Runs a simulation to its end.</summary>
    /// <param name="settings">What to simulate.</param>
    /// <param name="onLook">Called at each look of the watchdog with the simulated time (to act as an operator), or <see langword="null"/>.</param>
    /// <returns>The time series, the decisions and the totals.</returns>
    public static SimulationResult Run(SimulationSettings settings, Action<Simulator, double>? onLook = null)
    {
        ArgumentNullException.ThrowIfNull(settings);
        return new Simulator(settings).RunCore(onLook);
    }

    /// <summary>Resizes the simulated executor as an operator would (the controller is not told; pin it for that).</summary>
    /// <param name="workers">The new worker count.</param>
    public void Resize(int workers) => Apply(workers);

    private SimulationResult RunCore(Action<Simulator, double>? onLook)
    {
        var step = _settings.Step.TotalSeconds;
        var end = _settings.Duration.TotalSeconds;
        var look = _settings.LookPeriod.TotalSeconds;
        var nextLook = look;
        var decisions = new List<AdaptiveDecision>();
        while (_now < end)
        {
            _now += step;
            Arrive(step);
            Complete();
            TakeItems();
            if (_now >= nextLook)
            {
                // The watchdog's waits end a little late or early: jitter of 20% keeps its looks from falling in
                // step with paced arrivals (which would bias what it sees).
                nextLook += look * (0.8 + (0.4 * _random.NextDouble()));
                onLook?.Invoke(this, _now);
                Look(decisions);
            }

            _recorder.Record(_now, _target, _live, _busy, _queue.Count, _queue.Count > 0 ? _now - _queue.Peek() : 0, _completed, _rejected);
        }

        return new SimulationResult(_settings, _recorder.Points, _recorder.RunTimes, decisions, _submitted, _completed, _failed, _rejected);
    }

    private void Arrive(double step)
    {
        var rate = Math.Max(0, _settings.Load.RatePerSecond(_now));
        int arrivals;
        if (_settings.Load.Poisson)
        {
            arrivals = Poisson(rate * step);
        }
        else
        {
            _paced += rate * step;
            arrivals = (int)_paced;
            _paced -= arrivals;
        }

        for (var i = 0; i < arrivals; i++)
        {
            _submitted++;
            if (_queue.Count < _settings.QueueCapacity)
            {
                _queue.Enqueue(_now);
            }
            else
            {
                _rejected++;
            }
        }
    }

    private int Poisson(double mean)
    {
        // Knuth's method: fine for the small means of one step.
        var limit = Math.Exp(-mean);
        var k = 0;
        var p = _random.NextDouble();
        while (p > limit)
        {
            k++;
            p *= _random.NextDouble();
        }

        return k;
    }

    private void Complete()
    {
        while (_inService.TryPeek(out var call, out var ended) && ended <= _now)
        {
            _inService.Dequeue();
            if (call.Fails)
            {
                _failed++;
            }
            else
            {
                _completed++;
            }

            _recorder.RunTime(ended, ended - call.Started);
            _busy--;
            if (_live > _target)
            {
                _live--; // a busy worker retires once its item is done
            }

            if (_waitingForConnection.TryDequeue(out var started))
            {
                StartService(ended, started);
            }
        }
    }

    private void TakeItems()
    {
        while (_busy < _live && _queue.TryDequeue(out _))
        {
            _busy++;
            if (_inService.Count < _settings.Downstream.Capacity)
            {
                StartService(_now, _now);
            }
            else
            {
                _waitingForConnection.Enqueue(_now);
            }
        }
    }

    private void StartService(double at, double itemStarted)
    {
        var downstream = _settings.Downstream;
        var calls = _inService.Count + _waitingForConnection.Count + 1;
        var contention = 1 + (downstream.ContentionPenalty * Math.Max(0, calls - downstream.Capacity) / downstream.Capacity);
        var jitter = 1 + (downstream.Jitter * ((2 * _random.NextDouble()) - 1));
        var service = downstream.ServiceTime.TotalSeconds * downstream.SpeedFactor(at) * jitter * contention * downstream.Slowdown(at, _inService.Count + 1);
        var fails = _random.NextDouble() < downstream.FailureShare(at);
        if (fails)
        {
            service *= downstream.FailureTimeFactor;
        }

        _inService.Enqueue((itemStarted, fails), at + service);
    }

    private void Look(List<AdaptiveDecision> decisions)
    {
        if (_controller is null || _sampler is null)
        {
            return;
        }

        _clock.Advance(TimeSpan.FromSeconds(_now) - (_clock.GetUtcNow() - Epoch));
        var reading = new AdaptiveReading(
            _clock.GetTimestamp(), _completed, _failed, _submitted, 0, _busy, _target, _queue.Count,
            TimeSpan.FromSeconds(_queue.Count > 0 ? _now - _queue.Peek() : 0), _settings.MinWorkers, _settings.MaxWorkers);
        if (!_sampler.Observe(reading, out var sample))
        {
            return;
        }

        var decision = _controller.Decide(sample);
        decisions.Add(decision);
        if (decision.IsChange && decision.Applied)
        {
            Apply(decision.NewCount);
        }
    }

    private void Apply(int workers)
    {
        _target = workers;
        if (workers > _live)
        {
            _live = workers;
            return;
        }

        var idle = _live - _busy;
        _live -= Math.Min(idle, _live - workers);
    }
}
