using Microsoft.Extensions.Logging;
using Polly.Retry;
using Polly.Telemetry;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Polly.Core's own telemetry hook, set on the builder of each queue's pipeline: it turns the pipeline's events into
/// log lines that name the queue (Polly.Core alone logs nothing and has no meter of its own).
/// </summary>
internal sealed class WorkQueueTelemetryListener(string queueName, ILogger logger) : TelemetryListener
{
    public override void Write<TResult, TArgs>(in TelemetryEventArguments<TResult, TArgs> args)
    {
        if (args.Arguments is OnRetryArguments<TResult> retry)
        {
            var outcome = retry.Outcome;
            logger.RetryScheduled(queueName, retry.RetryDelay, retry.AttemptNumber + 1, outcome.Exception?.Message);
            return;
        }

        // Per-execution events (PipelineExecuting/Executed) would log every item, and each failed attempt
        // (ExecutionAttempt) is already logged as the retry it causes: keep the warnings and errors that remain,
        // such as a timeout.
        var level = args.Event.Severity switch
        {
            ResilienceEventSeverity.Critical => LogLevel.Critical,
            ResilienceEventSeverity.Error => LogLevel.Error,
            ResilienceEventSeverity.Warning => LogLevel.Warning,
            _ => LogLevel.None,
        };
        if (args.Event.EventName == "ExecutionAttempt")
        {
            return;
        }

        if (level != LogLevel.None && logger.IsEnabled(level))
        {
            logger.ResilienceEvent(level, queueName, args.Event.EventName, args.Source.StrategyName);
        }
    }
}
