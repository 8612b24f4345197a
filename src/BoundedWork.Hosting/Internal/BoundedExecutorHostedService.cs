using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Creates every registered executor when the host starts, and when it stops shuts them all down at once with
/// the host's shutdown token as the deadline, handing the items that never ran to the
/// <see cref="IAbandonedWorkHandler"/> services.
/// </summary>
internal sealed class BoundedExecutorHostedService : IHostedService
{
    private readonly BoundedExecutorRegistry _registry;
    private readonly IServiceScopeFactory _scopeFactory;
    private readonly ILogger _logger;

    public BoundedExecutorHostedService(BoundedExecutorRegistry registry, IServiceScopeFactory scopeFactory, IServiceProvider services)
    {
        _registry = registry;
        _scopeFactory = scopeFactory;
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger<BoundedExecutor>();
    }

    public Task StartAsync(CancellationToken cancellationToken)
    {
        _registry.CreateAll();
        return Task.CompletedTask;
    }

    public Task StopAsync(CancellationToken cancellationToken) =>
        Task.WhenAll(_registry.CreatedExecutors.Select(executor => StopAsync(executor, cancellationToken)));

    private async Task StopAsync(BoundedExecutor executor, CancellationToken deadline)
    {
        var result = await executor.ShutdownAsync(deadline).ConfigureAwait(false);
        if (result.AbandonedItems.Count > 0)
        {
            await HandOverAsync(executor.Name, result.AbandonedItems).ConfigureAwait(false);
        }

        if (!result.WorkersExited)
        {
            _logger.ShutdownWorkersStillRunning(executor.Name, executor.GetStatistics().BusyWorkerCount);
        }
        else if (result.Drained)
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
}
