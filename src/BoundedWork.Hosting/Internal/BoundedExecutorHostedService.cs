using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Creates every registered executor when the host starts. When the host stops, it shuts them all down at once with
/// a deadline of the host's <see cref="HostOptions.ShutdownTimeout"/>, counted from the moment the application began
/// stopping, and enforced by each executor's own watchdog thread (so it holds while the ThreadPool is starved).
/// Until then it waits for queued and running items. At the deadline it reports each item still running, then
/// hands the queued items to the <see cref="IAbandonedWorkHandler"/> services, or logs each one when there is none.
/// </summary>
internal sealed class BoundedExecutorHostedService : IHostedService, IDisposable
{
    /// <summary>How many abandoned items are logged one by one per executor when no handler is registered.</summary>
    internal const int MaxAbandonedItemsLogged = 100;

    private readonly BoundedExecutorRegistry _registry;
    private readonly IServiceScopeFactory _scopeFactory;
    private readonly ILogger _logger;
    private readonly TimeSpan _shutdownTimeout;
    private readonly IHostApplicationLifetime? _lifetime;
    private readonly TimeProvider _clock;
    private readonly BlockingServiceRegistration[] _blockingServices;
    private CancellationTokenRegistration _stoppingRegistration;
    private long _stoppingTimestamp = long.MinValue;

    public BoundedExecutorHostedService(BoundedExecutorRegistry registry, IServiceScopeFactory scopeFactory, IServiceProvider services)
    {
        _registry = registry;
        _scopeFactory = scopeFactory;
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger<BoundedExecutor>();
        _shutdownTimeout = services.GetService<IOptions<HostOptions>>()?.Value.ShutdownTimeout ?? TimeSpan.FromSeconds(30);
        _lifetime = services.GetService<IHostApplicationLifetime>();
        _clock = services.GetService<TimeProvider>() ?? TimeProvider.System;
        _blockingServices = [.. services.GetServices<BlockingServiceRegistration>()];
    }

    public Task StartAsync(CancellationToken cancellationToken)
    {
        // A blocking service bound to an executor nobody registered would fail only when first resolved, in a request.
        foreach (var blockingService in _blockingServices)
        {
            blockingService.ThrowIfExecutorUnknown(_registry);
        }

        // The host's shutdown clock starts when the application begins stopping (Ctrl-C, SIGTERM, StopApplication),
        // before the hosted services registered after this one stop: the deadline counts from there.
        _stoppingRegistration = _lifetime?.ApplicationStopping.Register(
            static state => ((BoundedExecutorHostedService)state!).MarkStopping(), this) ?? default;
        _registry.CreateAll();
        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken)
    {
        MarkStopping();
        var timeout = RemainingShutdownTime(cancellationToken);
        return Task.WhenAll(_registry.CreatedExecutors.Select(executor => StopAsync(executor, timeout, cancellationToken)));
    }

    public void Dispose() => _stoppingRegistration.Dispose();

    private void MarkStopping() =>
        Interlocked.CompareExchange(ref _stoppingTimestamp, _clock.GetTimestamp(), long.MinValue);

    private TimeSpan RemainingShutdownTime(CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return TimeSpan.Zero;
        }

        // Infinite is negative (-1 ms): test for it before treating a negative timeout as none at all. A very long
        // timeout is passed on as it is; the executor's deadline saturates instead of wrapping round.
        if (_shutdownTimeout == Timeout.InfiniteTimeSpan)
        {
            return Timeout.InfiniteTimeSpan;
        }

        if (_shutdownTimeout <= TimeSpan.Zero)
        {
            return TimeSpan.Zero;
        }

        var elapsed = _clock.GetElapsedTime(Interlocked.Read(ref _stoppingTimestamp));
        return elapsed >= _shutdownTimeout ? TimeSpan.Zero : _shutdownTimeout - elapsed;
    }

    private async Task StopAsync(BoundedExecutor executor, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var shutdown = executor.ShutdownAsync(timeout);
        ShutdownResult result;
        IReadOnlyList<WorkItem> abandoned;
        try
        {
            result = await shutdown.WaitAsync(cancellationToken).ConfigureAwait(false);
            abandoned = result.AbandonedItems;
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The caller's own StopAsync token came first: that is the deadline. The executor hands every queued
            // item back exactly once, to whichever deadline passed first, so both results are kept.
            result = await executor.ShutdownAsync(TimeSpan.Zero).ConfigureAwait(false);
            abandoned = shutdown.IsCompletedSuccessfully && shutdown.Result.AbandonedItems.Count > 0
                ? [.. shutdown.Result.AbandonedItems, .. result.AbandonedItems]
                : result.AbandonedItems;
        }

        // Read at the deadline, before any handler runs: these are the items the deadline interrupts.
        var stillRunning = result.WorkersExited ? [] : executor.GetRunningItems();
        if (!result.WorkersExited)
        {
            _logger.ShutdownWorkersStillRunning(executor.Name, stillRunning.Count);
            foreach (var running in stillRunning)
            {
                _logger.ShutdownItemInterrupted(executor.Name, WorkItemDescription.Describe(running.Item), running.WorkerName, running.Elapsed);
            }
        }

        if (abandoned.Count > 0)
        {
            await HandOverAsync(executor.Name, abandoned).ConfigureAwait(false);
        }

        if (result.WorkersExited && abandoned.Count == 0)
        {
            _logger.ShutdownDrained(executor.Name);
        }
    }

    private async Task HandOverAsync(string executorName, IReadOnlyList<WorkItem> items)
    {
        var scope = _scopeFactory.CreateAsyncScope();
        await using (scope.ConfigureAwait(false))
        {
            var handlers = scope.ServiceProvider.GetServices<IAbandonedWorkHandler>().ToArray();
            _logger.ShutdownAbandoned(executorName, items.Count, handlers.Length);
            if (handlers.Length == 0)
            {
                LogEachAbandonedItem(executorName, items);
                return;
            }

            foreach (var handler in handlers)
            {
                try
                {
                    await handler.HandleAsync(executorName, items).ConfigureAwait(false);
                }
                catch (Exception ex)
                {
                    _logger.AbandonedWorkHandlerFailed(executorName, items.Count, ex);
                }
            }
        }
    }

    /// <summary>Without a handler the log is the only record left: the first items one by one, then the rest as a count.</summary>
    private void LogEachAbandonedItem(string executorName, IReadOnlyList<WorkItem> items)
    {
        var logged = Math.Min(items.Count, MaxAbandonedItemsLogged);
        for (var i = 0; i < logged; i++)
        {
            _logger.AbandonedItemNotPersisted(executorName, WorkItemDescription.Describe(items[i]));
        }

        if (items.Count > logged)
        {
            _logger.AbandonedItemsNotLogged(executorName, items.Count - logged, items.Count);
        }
    }
}
