using System.Diagnostics.Metrics;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Runs after every other configuration of a registered executor's options: pins the name to the registration,
/// passes the host's meter factory, and puts logging in front of the user's callbacks (both run).
/// </summary>
internal sealed class BoundedExecutorOptionsSetup : IPostConfigureOptions<BoundedExecutorOptions>
{
    private readonly BoundedExecutorRegistration[] _registrations;
    private readonly ILogger _logger;
    private readonly IMeterFactory? _meterFactory;

    public BoundedExecutorOptionsSetup(IEnumerable<BoundedExecutorRegistration> registrations, IServiceProvider services)
    {
        _registrations = [.. registrations];
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger<BoundedExecutor>();
        _meterFactory = services.GetService<IMeterFactory>();
    }

    public void PostConfigure(string? name, BoundedExecutorOptions options)
    {
        if (BoundedExecutorRegistration.Find(_registrations, name) is not { } registration)
        {
            return;
        }

        options.Name = registration.Name;
        options.MeterFactory ??= _meterFactory;

        // Each options instance is configured once, so each callback is wrapped once.
        var logger = _logger;
        var onError = options.OnError;
        options.OnError = args =>
        {
            logger.WorkItemFailed(args.ExecutorName, args.Exception);
            onError?.Invoke(args);
        };

        var onRejected = options.OnRejected;
        options.OnRejected = args =>
        {
            if (args.Reason is RejectionReason.Discarded or RejectionReason.Evicted)
            {
                logger.WorkItemDiscarded(args.ExecutorName, args.Reason);
            }
            else
            {
                logger.WorkItemRejected(args.ExecutorName, args.Reason);
            }

            onRejected?.Invoke(args);
        };

        // A ThreadPool thread blocking on the executor is logged at most once per interval, with the count since the
        // previous line; the caller's stack is captured only for a line actually written.
        var blockingWaits = new RateLimitedCounter(options.TimeProvider ?? TimeProvider.System, RateLimitedCounter.DefaultInterval);
        var onBlockingWait = options.OnThreadPoolBlockingWait;
        options.OnThreadPoolBlockingWait = args =>
        {
            if (blockingWaits.TryCountAndReport(out var count) && logger.IsEnabled(LogLevel.Warning))
            {
                logger.ThreadPoolBlockingWait(args.ExecutorName, count, args.Total, args.Kind, new System.Diagnostics.StackTrace(1, fNeedFileInfo: false).ToString());
            }

            onBlockingWait?.Invoke(args);
        };

        // A running item is reported once, so at most one line per worker per threshold; long queue waits can come
        // for every item of a backlog, so they are rate-limited.
        var longQueueWaits = new RateLimitedCounter(options.TimeProvider ?? TimeProvider.System, RateLimitedCounter.DefaultInterval);
        var onSlowItem = options.OnSlowItem;
        options.OnSlowItem = args =>
        {
            if (args.Kind == SlowItemKind.Running)
            {
                if (logger.IsEnabled(LogLevel.Warning))
                {
                    logger.SlowItemRunning(args.ExecutorName, WorkItemDescription.Describe(args.Item), args.WorkerName, args.Elapsed, args.Threshold);
                }
            }
            else if (longQueueWaits.TryCountAndReport(out var count) && logger.IsEnabled(LogLevel.Warning))
            {
                logger.LongQueueWait(args.ExecutorName, count, args.Threshold, WorkItemDescription.Describe(args.Item), args.Elapsed);
            }

            onSlowItem?.Invoke(args);
        };

        // At most a few lines a minute: the controller changes the count at most MaxChangesPerMinute times.
        var onWorkerCountDecision = options.OnWorkerCountDecision;
        options.OnWorkerCountDecision = decision =>
        {
            logger.WorkerCountDecision(decision.ExecutorName, decision.OldCount, decision.NewCount, decision.Rule, decision.Applied, decision.Description);
            onWorkerCountDecision?.Invoke(decision);
        };
    }
}
