using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// The process's in-memory schedules (<see cref="IRecurringSchedules"/>) and their hosted service: starts their
/// timers with the host and stops them first when it stops. Publishes <c>boundedwork.schedule.runs</c> on the
/// <c>BoundedWork</c> meter: a counter per schedule and outcome (succeeded, failed, skipped, rejected).
/// </summary>
internal sealed class RecurringScheduleRegistry : IRecurringSchedules, IDisposable
{
    public const string RunsInstrument = "boundedwork.schedule.runs";
    public const string ScheduleTag = "boundedwork.schedule";

    private readonly object _sync = new();
    private readonly List<ScheduleRunner> _runners = [];
    private readonly IBoundedExecutorRegistry _executors;
    private readonly IServiceScopeFactory _scopes;
    private readonly TimeProvider _clock;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Meter _meter;
    private bool _started;

    public RecurringScheduleRegistry(IServiceProvider services, IEnumerable<RecurringRegistration> registrations)
    {
        _executors = services.GetRequiredService<IBoundedExecutorRegistry>();
        _scopes = services.GetRequiredService<IServiceScopeFactory>();
        _clock = services.GetService<TimeProvider>() ?? TimeProvider.System;
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger(ScheduleLog.Category);
        foreach (var registration in registrations)
        {
            _runners.Add(new ScheduleRunner(
                registration.Name, registration.Schedule, registration.Executor, registration.Handler(services), registration.Options,
                _executors, _scopes, _clock, _logger, _stopping.Token));
        }

        _meter = services.GetService<IMeterFactory>()?.Create(BoundedWorkDiagnostics.MeterName) ?? new Meter(BoundedWorkDiagnostics.MeterName);
        _meter.CreateObservableCounter(RunsInstrument, Observe, unit: "{run}",
            description: "Ticks of recurring schedules by outcome: succeeded, failed, skipped (the previous run was still going) and rejected (the executor refused).");
    }

    public IReadOnlyList<RecurringScheduleStatus> GetStatus()
    {
        lock (_sync)
        {
            return [.. _runners.Select(r => r.GetStatus())];
        }
    }

    public RecurringScheduleStatus GetStatus(string name) => Find(name).GetStatus();

    public bool SetPaused(string name, bool paused)
    {
        var runner = Find(name);
        var changed = paused ? runner.Pause() : runner.Resume();
        _logger.ScheduleChanged(name, (paused, changed) switch
        {
            (true, true) => "paused",
            (true, false) => "already paused",
            (false, true) => "resumed",
            (false, false) => "already running",
        });
        return changed;
    }

    public RecurringTriggerResult TriggerNow(string name)
    {
        var result = Find(name).TriggerNow();
        _logger.ScheduleTriggered(name, result);
        return result;
    }

    public void Change(string name, RecurringSchedule schedule)
    {
        ArgumentNullException.ThrowIfNull(schedule);
        var runner = Find(name);
        var before = runner.GetStatus().Schedule;
        runner.Change(schedule);
        _logger.ScheduleRetimed(name, before, schedule);
    }

    public void Add(string name, RecurringSchedule schedule, string executor, Action<RecurringTickContext> handler, Action<RecurringScheduleOptions>? configure = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(schedule);
        ArgumentException.ThrowIfNullOrWhiteSpace(executor);
        ArgumentNullException.ThrowIfNull(handler);
        var options = new RecurringScheduleOptions();
        configure?.Invoke(options);
        options.Validate();
        if (!_executors.TryGetExecutor(executor, out _))
        {
            throw new ArgumentException($"No bounded executor is registered under the name '{executor}'; schedule '{name}' needs one (AddBoundedExecutor).", nameof(executor));
        }

        var runner = new ScheduleRunner(name, schedule, executor, handler, options, _executors, _scopes, _clock, _logger, _stopping.Token);
        lock (_sync)
        {
            if (_runners.Any(r => string.Equals(r.Name, name, StringComparison.OrdinalIgnoreCase)))
            {
                runner.Dispose();
                throw new ArgumentException($"A recurring schedule named '{name}' already exists; names are unique ignoring case.", nameof(name));
            }

            _runners.Add(runner);
            if (_started)
            {
                runner.Start();
            }
        }

        _logger.ScheduleAdded(name, schedule, executor);
    }

    public bool Remove(string name)
    {
        ScheduleRunner? runner;
        lock (_sync)
        {
            runner = _runners.Find(r => string.Equals(r.Name, name, StringComparison.OrdinalIgnoreCase));
            if (runner is null)
            {
                return false;
            }

            _runners.Remove(runner);
        }

        runner.Dispose();
        _logger.ScheduleChanged(name, "removed");
        return true;
    }

    public Task StartAsync(CancellationToken cancellationToken)
    {
        lock (_sync)
        {
            foreach (var runner in _runners)
            {
                if (!_executors.Names.Contains(runner.Executor, StringComparer.OrdinalIgnoreCase))
                {
                    throw new InvalidOperationException(
                        $"Recurring schedule '{runner.Name}' runs on executor '{runner.Executor}', but no bounded executor is registered under that name (AddBoundedExecutor).");
                }
            }

            _started = true;
            foreach (var runner in _runners)
            {
                runner.Start();
            }
        }

        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken)
    {
        StopTimers();
        _stopping.Cancel();
        return Task.CompletedTask;
    }

    public void Dispose()
    {
        StopTimers();
        _stopping.Dispose();
        _meter.Dispose();
    }

    private void StopTimers()
    {
        lock (_sync)
        {
            _started = false;
            foreach (var runner in _runners)
            {
                runner.Dispose();
            }
        }
    }

    private ScheduleRunner Find(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        lock (_sync)
        {
            return _runners.Find(r => string.Equals(r.Name, name, StringComparison.OrdinalIgnoreCase))
                ?? throw new KeyNotFoundException($"No recurring schedule is named '{name}'.");
        }
    }

    private IEnumerable<Measurement<long>> Observe()
    {
        foreach (var status in GetStatus())
        {
            var schedule = new KeyValuePair<string, object?>(ScheduleTag, status.Name);
            yield return new(status.Succeeded, schedule, new(BoundedWorkDiagnostics.OutcomeTag, "succeeded"));
            yield return new(status.Failed, schedule, new(BoundedWorkDiagnostics.OutcomeTag, "failed"));
            yield return new(status.Skipped, schedule, new(BoundedWorkDiagnostics.OutcomeTag, "skipped"));
            yield return new(status.Rejected, schedule, new(BoundedWorkDiagnostics.OutcomeTag, "rejected"));
        }
    }
}
