using System.Diagnostics.CodeAnalysis;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Creates and owns the registered executors, and applies configuration reloads to them.
/// </summary>
/// <remarks>
/// A reload of a running executor is judged here: invalid options (a value configuration could not convert, a setting
/// out of range) are logged as <c>InvalidReload</c> and ignored, and the last good options are put back in the options
/// monitor's cache, so <see cref="IOptionsMonitor{TOptions}"/> keeps answering them. Valid options are applied setting
/// by setting: only what changed in configuration since the last applied reload.
/// </remarks>
internal sealed class BoundedExecutorRegistry : IBoundedExecutorRegistry, IAsyncDisposable
{
    private readonly Dictionary<string, string> _namesIgnoringCase = new(StringComparer.OrdinalIgnoreCase);
    private readonly string[] _names;
    private readonly IOptionsMonitor<BoundedExecutorOptions> _optionsMonitor;
    private readonly IOptionsMonitorCache<BoundedExecutorOptions> _optionsCache;
    private readonly LastGoodOptionsStore _lastGood;
    private readonly ILogger _logger;
    private readonly Lock _sync = new();
    private readonly Dictionary<string, Entry> _entries = new(StringComparer.Ordinal);
    private readonly IDisposable? _changeSubscription;

    public BoundedExecutorRegistry(
        IEnumerable<BoundedExecutorRegistration> registrations,
        IOptionsMonitor<BoundedExecutorOptions> optionsMonitor,
        IOptionsMonitorCache<BoundedExecutorOptions> optionsCache,
        LastGoodOptionsStore lastGood,
        IServiceProvider services)
    {
        _names = [.. registrations.Select(registration => registration.Name)];
        foreach (var name in _names)
        {
            _namesIgnoringCase.Add(name, name);
        }

        _optionsMonitor = optionsMonitor;
        _optionsCache = optionsCache;
        _lastGood = lastGood;
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
            _lastGood.Remember(name, options);
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
        string? refused = null;
        string? invalid = null;
        BoundedExecutorOptions? lastGood = null;
        BoundedExecutor executor;
        int currentWorkerCount;
        var workerCountAboveMaximum = false;
        lock (_sync)
        {
            if (!_entries.TryGetValue(name, out var entry))
            {
                return; // not created yet: it will be created from the new options
            }

            executor = entry.Executor;
            var failures = BoundedExecutorOptionsValidator.GetFailures(name, options);
            if (failures.Count > 0)
            {
                invalid = string.Join(" ", failures);
                lastGood = _lastGood.TryGet(name, out var good) ? good : entry.LastConfigured;
                _optionsCache.TryRemove(name);
                _optionsCache.TryAdd(name, lastGood);
                currentWorkerCount = executor.Settings.WorkerCount;
                restartChanges = null;
            }
            else
            {
                _lastGood.Remember(name, options);
                restartChanges = entry.DescribeRestartChanges(options);
                (applied, refused, workerCountAboveMaximum) = Apply(entry, options);
                currentWorkerCount = executor.Settings.WorkerCount;
            }
        }

        if (invalid is not null)
        {
            _logger.InvalidReload(name, lastGood!.WorkerCount, invalid);
            return;
        }

        if (restartChanges is not null)
        {
            _logger.RestartRequired(name, restartChanges);
        }

        if (applied is { ChangedSettings.Count: > 0 } && _logger.IsEnabled(LogLevel.Information))
        {
            _logger.ExecutorReconfigured(name, applied.ToString());
        }

        if (workerCountAboveMaximum)
        {
            _logger.ResizeAboveMaximum(name, options.WorkerCount, executor.MaxWorkerCount, currentWorkerCount);
        }

        if (refused is not null)
        {
            _logger.InvalidReload(name, currentWorkerCount, refused);
        }
    }

    /// <summary>
    /// Applies the runtime settings whose configured value changed since the last applied configuration, so a reload
    /// never undoes a change made at runtime (by an admin endpoint, say) to any other setting. A worker count above the
    /// maximum the executor was started with is refused; the other settings apply.
    /// </summary>
    private static (BoundedExecutorReconfiguration? Applied, string? Refused, bool WorkerCountAboveMaximum) Apply(Entry entry, BoundedExecutorOptions options)
    {
        var executor = entry.Executor;
        var lastConfigured = entry.LastConfigured.ToSettings();
        var configured = options.ToSettings();
        var workerCountAboveMaximum = configured.WorkerCount != lastConfigured.WorkerCount && configured.WorkerCount > executor.MaxWorkerCount;
        if (workerCountAboveMaximum)
        {
            configured = configured with { WorkerCount = lastConfigured.WorkerCount };
        }

        entry.LastConfigured = options;
        if (configured == lastConfigured || executor.IsShutdown)
        {
            return (null, null, workerCountAboveMaximum);
        }

        try
        {
            return (executor.Reconfigure(current => current.WithChanges(lastConfigured, configured)), null, workerCountAboveMaximum);
        }
        catch (InvalidOperationException) when (executor.IsShutdown)
        {
            return (null, null, workerCountAboveMaximum); // shut down meanwhile: nothing to change
        }
        catch (ArgumentException ex)
        {
            // Options validation applies the same rules, so this cannot happen; should a rule ever differ, the reload
            // is reported as invalid and changes nothing.
            return (null, ex.Message, workerCountAboveMaximum);
        }
    }

    private sealed class Entry(BoundedExecutor executor, BoundedExecutorOptions created)
    {
        public BoundedExecutor Executor { get; } = executor;

        /// <summary>Gets the options the executor was created with: the values of its fixed settings.</summary>
        public BoundedExecutorOptions Created { get; } = created;

        /// <summary>Gets or sets the configured options of the last reload processed (the last applied configuration).</summary>
        public BoundedExecutorOptions LastConfigured { get; set; } = created;

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
    }
}
