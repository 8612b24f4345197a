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
        int previousWorkerCount = 0, resizedTo = 0, refusedWorkerCount = 0;
        BoundedExecutor executor;
        lock (_sync)
        {
            if (!_entries.TryGetValue(name, out var entry))
            {
                return; // not created yet: it will be created from the new options
            }

            executor = entry.Executor;
            restartChanges = entry.DescribeRestartChanges(options);
            if (options.WorkerCount != entry.LastSeen.WorkerCount && !executor.IsShutdown)
            {
                // Only a change of the configured worker count resizes, so a reload of some other key never
                // undoes a resize made at runtime (by an admin endpoint, say).
                previousWorkerCount = executor.GetStatistics().TargetWorkerCount;
                if (options.WorkerCount > executor.MaxWorkerCount)
                {
                    refusedWorkerCount = options.WorkerCount;
                }
                else
                {
                    try
                    {
                        executor.Resize(options.WorkerCount);
                        resizedTo = options.WorkerCount;
                    }
                    catch (InvalidOperationException) when (executor.IsShutdown)
                    {
                        // Shut down meanwhile: nothing to resize.
                    }
                }
            }

            entry.LastSeen = options;
        }

        if (restartChanges is not null)
        {
            _logger.RestartRequired(name, restartChanges);
        }

        if (resizedTo != 0)
        {
            _logger.ExecutorResized(name, previousWorkerCount, resizedTo);
        }

        if (refusedWorkerCount != 0)
        {
            _logger.ResizeAboveMaximum(name, refusedWorkerCount, executor.MaxWorkerCount, previousWorkerCount);
        }
    }

    private sealed class Entry(BoundedExecutor executor, BoundedExecutorOptions created)
    {
        public BoundedExecutor Executor { get; } = executor;

        /// <summary>Gets the options the executor was created with: the values of its fixed settings.</summary>
        public BoundedExecutorOptions Created { get; } = created;

        /// <summary>Gets or sets the options of the last reload seen.</summary>
        public BoundedExecutorOptions LastSeen { get; set; } = created;

        /// <summary>
        /// Describes the fixed settings that <paramref name="options"/> changes compared with the running executor,
        /// or returns <see langword="null"/>. Each pending change is reported once, on the reload that makes it.
        /// </summary>
        public string? DescribeRestartChanges(BoundedExecutorOptions options)
        {
            List<string>? changes = null;
            Compare(nameof(BoundedExecutorOptions.QueueCapacity), Created.QueueCapacity, LastSeen.QueueCapacity, options.QueueCapacity);
            Compare(nameof(BoundedExecutorOptions.MaxWorkerCount), Created.MaxWorkerCount, LastSeen.MaxWorkerCount, options.MaxWorkerCount);
            Compare(nameof(BoundedExecutorOptions.RejectionPolicy), Created.RejectionPolicy, LastSeen.RejectionPolicy, options.RejectionPolicy);
            Compare(nameof(BoundedExecutorOptions.WaitTimeout), Created.WaitTimeout, LastSeen.WaitTimeout, options.WaitTimeout);
            Compare(nameof(BoundedExecutorOptions.FlowExecutionContext), Created.FlowExecutionContext, LastSeen.FlowExecutionContext, options.FlowExecutionContext);
            return changes is null ? null : string.Join(", ", changes);

            void Compare<T>(string setting, T running, T lastSeen, T reloaded)
            {
                var comparer = EqualityComparer<T>.Default;
                if (!comparer.Equals(reloaded, running) && !comparer.Equals(reloaded, lastSeen))
                {
                    (changes ??= []).Add($"{setting} {running} -> {reloaded}");
                }
            }
        }
    }
}
