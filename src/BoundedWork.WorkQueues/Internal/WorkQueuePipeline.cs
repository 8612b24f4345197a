using Microsoft.Extensions.Logging;
using Polly;
using Polly.Retry;

namespace BoundedWork.Hosting.Internal;

/// <summary>Builds a typed work queue's Polly pipeline from its settings.</summary>
internal static class WorkQueuePipeline
{
    /// <summary>
    /// Returns the configured pipeline, or builds one: the <see cref="WorkQueueOptions{T}.ConfigurePipeline"/> callback's
    /// strategies, or the default retry (unless <paramref name="storedRetries"/>: durable storage keeps its retries in
    /// the database instead) around the per-attempt timeout.
    /// </summary>
    /// <exception cref="InvalidOperationException">
    /// An in-memory queue has a pipeline of the application's and a retry setting too: only one retry can run, so the
    /// combination is refused rather than one of them silently ignored. A durable queue keeps both: the settings are
    /// the storage's retries, the pipeline runs each delivery.
    /// </exception>
    public static ResiliencePipeline Build<T>(string name, WorkQueueOptions<T> options, TimeProvider clock, ILogger logger, bool storedRetries)
    {
        if (!storedRetries && options.RetrySettingsSet && (options.Pipeline is not null || options.ConfigurePipeline is not null))
        {
            var setting = options.Pipeline is not null ? "Pipeline" : "ConfigurePipeline";
            throw new InvalidOperationException(
                $"Work queue '{name}' sets both {setting} and MaxRetryAttempts/RetryDelay/MaxRetryDelay: {setting} replaces the queue's " +
                $"retry, so those settings would be ignored. Add the retry to the pipeline (builder.AddRetry(new RetryStrategyOptions {{ MaxRetryAttempts = ... }})), " +
                $"or remove {setting} to use the settings.");
        }

        if (options.Pipeline is { } pipeline)
        {
            return pipeline;
        }

        var builder = new ResiliencePipelineBuilder
        {
            Name = name,
            TimeProvider = clock,
            TelemetryListener = new WorkQueueTelemetryListener(name, logger),
        };

        if (options.ConfigurePipeline is { } configure)
        {
            configure(builder);
            return builder.Build();
        }

        if (options.MaxRetryAttempts > 0 && !storedRetries)
        {
            builder.AddRetry(new RetryStrategyOptions
            {
                MaxRetryAttempts = options.MaxRetryAttempts,
                Delay = options.RetryDelay,
                MaxDelay = options.MaxRetryDelay,
                BackoffType = DelayBackoffType.Exponential,
                UseJitter = true,
                // A handler that cannot be constructed fails every attempt the same way: a dead letter at once.
                ShouldHandle = new PredicateBuilder().Handle<Exception>(static e => e is not OperationCanceledException and not HandlerUnavailableException),
            });
        }

        if (options.AttemptTimeout != Timeout.InfiniteTimeSpan)
        {
            builder.AddTimeout(options.AttemptTimeout);
        }

        return builder.Build();
    }
}
