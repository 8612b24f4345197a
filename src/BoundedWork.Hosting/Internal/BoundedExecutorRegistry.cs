using System.Diagnostics.CodeAnalysis;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Creates and owns the registered executors, and applies configuration reloads to them.
/// </summary>
internal sealed class BoundedExecutorRegistry : IBoundedExecutorRegistry, IAsyncDisposable
{
    private readonly Dictionary<string, string> _namesIgnoringCase = new(StringComparer.OrdinalIgnoreCase);
    private readonly string[] _names;
    private readonly IOptionsMonitor<BoundedExecutorOptions> _optionsMonitor;
    private readonly ILogger _logger;
    private readonly Lock _sync = new();
    private readonly Dictionary<string, Entry> _entries = new(StringComparer.Ordinal);
    private readonly IDisposable? _changeSubscription;

    public BoundedExecutorRegistry(
        IEnumerable<BoundedExecutorRegistration> registrations,
        IOptionsMonitor<BoundedExecutorOptions> optionsMonitor,
        IServiceProvider services)
    {
        _names = [.. registrations.Select(registration => registration.Name)];
        foreach (var name in _names)
        {
            _namesIgnoringCase.Add(name, name);
        }

        _optionsMonitor = optionsMonitor;
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger<BoundedExecutor>();
        _changeSubscription = optionsMonitor.OnChange(OnOptionsChanged);
    }

    public IReadOnlyList<string> Names => _names;

    /// <summary>Gets a value indicating whether an executor named <paramref name="name"/> (ignoring case) is registered.</summary>
    public bool IsRegistered(string name) => _namesIgnoringCase.ContainsKey(name);

    /// <summary>Gets the executors created so far, in creation order.</summary>
    public IReadOnlyList<BoundedExecutor> CreatedExecutors
    {
        get
        {
            lock (_sync)
            {
                return [.. _entries.Values.Select(entry => entry.Executor)];
            }
        }
    }

    public BoundedExecutor GetExecutor(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        if (!TryGetExecutor(name, out var executor))
        {
            throw new KeyNotFoundException($"No bounded executor named '{name}' is registered; registered executors: {(_names.Length == 0 ? "none" : string.Join(", ", _names))}.");
        }

        return executor;
    }

    public bool TryGetExecutor(string name, [NotNullWhen(true)] out BoundedExecutor? executor)
    {
        ArgumentNullException.ThrowIfNull(name);
        if (!_namesIgnoringCase.TryGetValue(name, out var registeredName))
        {
            executor = null;
            return false;
        }

        executor = GetOrCreate(registeredName);
        return true;
    }

    public IReadOnlyList<BoundedExecutorStatistics> GetStatistics() =>
        [.. _names.Select(name => GetOrCreate(name).GetStatistics())];

    /// <summary>Creates every registered executor that does not exist yet.</summary>
    public void CreateAll()
    {
        foreach (var name in _names)
        {
            GetOrCreate(name);
        }
    }

    /// <summary>
    /// Drains the executors nobody has shut down (a provider used without a host). Executors the host already shut
    /// down are not waited for again: their deadline has passed.
    /// </summary>
    public async ValueTask DisposeAsync()
    {
        _changeSubscription?.Dispose();
        var running = CreatedExecutors.Where(executor => !executor.IsShutdown);
        await Task.WhenAll(running.Select(executor => executor.DisposeAsync().AsTask())).ConfigureAwait(false);
    }

    private BoundedExecutor GetOrCreate(string name)
    {
        lock (_sync)
        {
            if (_entries.TryGetValue(name, out var existing))
            {
                return existing.Executor;
            }
        }

        // Read outside the lock: it runs the user's configuration delegates. Throws if the options are invalid.
        var options = _optionsMonitor.Get(name);
        BoundedExecutor executor;
        lock (_sync)
        {
            if (_entries.TryGetValue(name, out var existing))
            {
                return existing.Executor;
            }

            executor = new BoundedExecutor(options);
            _entries.Add(name, new Entry(executor, options));
        }

        _logger.ExecutorStarted(name, options.WorkerCount, options.MaxWorkerCount, options.QueueCapacity, options.RejectionPolicy);
        return executor;
    }

    private void OnOptionsChanged(BoundedExecutorOptions options, string? name)
    {
        if (name is null)
        {
            return;
        }

        string? restartChanges;
        BoundedExecutorReconfiguration? applied = null;
        IReadOnlyDictionary<string, string> refused;
        BoundedExecutor executor;
        int currentWorkerCount;
        lock (_sync)
        {
            if (!_entries.TryGetValue(name, out var entry))
            {
                return; // not created yet: it will be created from the new options
            }

            executor = entry.Executor;
            restartChanges = entry.DescribeRestartChanges(options);

            // Only a setting whose configured value changed since the last applied configuration is applied, so a
            // reload never undoes a change made at runtime (by an admin endpoint, say) to any other setting.
            var change = entry.ChangedSince(options);
            refused = change.GetValidationErrors(executor.MaxWorkerCount);
            change = Without(change, refused);
            entry.LastConfigured = options;
            if (change != EmptyChange && !executor.IsShutdown)
            {
                try
                {
                    applied = executor.Reconfigure(change);
                }
                catch (InvalidOperationException) when (executor.IsShutdown)
                {
                    // Shut down meanwhile: nothing to change.
                }
            }

            currentWorkerCount = executor.Settings.WorkerCount;
        }

        if (restartChanges is not null)
        {
            _logger.RestartRequired(name, restartChanges);
        }

        if (applied is not null && DescribeChanges(applied) is { } changes)
        {
            _logger.ExecutorReconfigured(name, changes);
        }

        foreach (var (setting, reason) in refused)
        {
            if (setting == nameof(BoundedExecutorSettingsChange.WorkerCount))
            {
                _logger.ResizeAboveMaximum(name, options.WorkerCount, executor.MaxWorkerCount, currentWorkerCount);
            }
            else
            {
                // Options validation applies the same rules, so only the running maximum can refuse a value; should
                // another rule ever differ, the reload is reported as invalid for that setting.
                _logger.InvalidReload(name, currentWorkerCount, reason);
            }
        }
    }

    private static readonly BoundedExecutorSettingsChange EmptyChange = new();

    private static BoundedExecutorSettingsChange Without(BoundedExecutorSettingsChange change, IReadOnlyDictionary<string, string> refused) =>
        refused.Count == 0 ? change : change with
        {
            WorkerCount = refused.ContainsKey(nameof(change.WorkerCount)) ? null : change.WorkerCount,
            QueueCapacity = refused.ContainsKey(nameof(change.QueueCapacity)) ? null : change.QueueCapacity,
            RejectionPolicy = refused.ContainsKey(nameof(change.RejectionPolicy)) ? null : change.RejectionPolicy,
            WaitTimeout = refused.ContainsKey(nameof(change.WaitTimeout)) ? null : change.WaitTimeout,
            SlowItemThreshold = refused.ContainsKey(nameof(change.SlowItemThreshold)) ? null : change.SlowItemThreshold,
            QueueWaitThreshold = refused.ContainsKey(nameof(change.QueueWaitThreshold)) ? null : change.QueueWaitThreshold,
        };

    private static string? DescribeChanges(BoundedExecutorReconfiguration reconfiguration)
    {
        var (before, after) = (reconfiguration.Previous, reconfiguration.Current);
        List<string>? changes = null;
        Describe(nameof(before.WorkerCount), before.WorkerCount, after.WorkerCount);
        Describe(nameof(before.QueueCapacity), before.QueueCapacity, after.QueueCapacity);
        Describe(nameof(before.RejectionPolicy), before.RejectionPolicy, after.RejectionPolicy);
        Describe(nameof(before.WaitTimeout), before.WaitTimeout, after.WaitTimeout);
        Describe(nameof(before.SlowItemThreshold), before.SlowItemThreshold, after.SlowItemThreshold);
        Describe(nameof(before.QueueWaitThreshold), before.QueueWaitThreshold, after.QueueWaitThreshold);
        return changes is null ? null : string.Join(", ", changes);

        void Describe<T>(string setting, T previous, T current)
        {
            if (!EqualityComparer<T>.Default.Equals(previous, current))
            {
                (changes ??= []).Add($"{setting} {Format(previous)} -> {Format(current)}");
            }
        }

        static string Format<T>(T value) => value switch
        {
            TimeSpan timeSpan when timeSpan == Timeout.InfiniteTimeSpan => "infinite",
            IFormattable formattable => formattable.ToString(null, System.Globalization.CultureInfo.InvariantCulture),
            _ => value?.ToString() ?? "null",
        };
    }

    private sealed class Entry(BoundedExecutor executor, BoundedExecutorOptions created)
    {
        public BoundedExecutor Executor { get; } = executor;

        /// <summary>Gets the options the executor was created with: the values of its fixed settings.</summary>
        public BoundedExecutorOptions Created { get; } = created;

        /// <summary>Gets or sets the configured options of the last reload processed (the last applied configuration).</summary>
        public BoundedExecutorOptions LastConfigured { get; set; } = created;

        /// <summary>The runtime settings whose configured value differs from the last applied configuration.</summary>
        public BoundedExecutorSettingsChange ChangedSince(BoundedExecutorOptions options) => new()
        {
            WorkerCount = Changed(LastConfigured.WorkerCount, options.WorkerCount),
            QueueCapacity = Changed(LastConfigured.QueueCapacity, options.QueueCapacity),
            RejectionPolicy = Changed(LastConfigured.RejectionPolicy, options.RejectionPolicy),
            WaitTimeout = Changed(LastConfigured.WaitTimeout, options.WaitTimeout),
            SlowItemThreshold = Changed(LastConfigured.SlowItemThreshold, options.SlowItemThreshold),
            QueueWaitThreshold = Changed(LastConfigured.QueueWaitThreshold, options.QueueWaitThreshold),
        };

        /// <summary>
        /// Describes the fixed settings that <paramref name="options"/> changes compared with the running executor,
        /// or returns <see langword="null"/>. Each pending change is reported once, on the reload that makes it.
        /// </summary>
        public string? DescribeRestartChanges(BoundedExecutorOptions options)
        {
            List<string>? changes = null;
            Compare(nameof(BoundedExecutorOptions.MaxWorkerCount), Created.MaxWorkerCount, LastConfigured.MaxWorkerCount, options.MaxWorkerCount);
            Compare(nameof(BoundedExecutorOptions.FlowExecutionContext), Created.FlowExecutionContext, LastConfigured.FlowExecutionContext, options.FlowExecutionContext);
            Compare(nameof(BoundedExecutorOptions.DisposeTimeout), Created.DisposeTimeout, LastConfigured.DisposeTimeout, options.DisposeTimeout);
            return changes is null ? null : string.Join(", ", changes);

            void Compare<T>(string setting, T running, T lastSeen, T reloaded)
            {
                var comparer = EqualityComparer<T>.Default;
                if (!comparer.Equals(reloaded, running) && !comparer.Equals(reloaded, lastSeen))
                {
                    (changes ??= []).Add(FormattableString.Invariant($"{setting} {running} -> {reloaded}"));
                }
            }
        }

        private static T? Changed<T>(T before, T after) where T : struct =>
            EqualityComparer<T>.Default.Equals(before, after) ? null : after;
    }
}
