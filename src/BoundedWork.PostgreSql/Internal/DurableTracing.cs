using System.Diagnostics;
using System.Globalization;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// The spans of the durable hop, after the OpenTelemetry messaging semantic conventions. An enqueue is a
/// <c>send {queue}</c> producer span, current while its statement runs, so the <c>traceparent</c> the statement stores
/// is the send span's. A delivery is a <c>process {queue}</c> consumer span whose parent is that stored context (and
/// which links to it too), started when this node claims the item and ended when its outcome is posted; the executor's
/// item (and so the handler) runs inside it. Every delivery of an item (retries, a requeued dead letter) has the same
/// parent, so they all join the producer's trace. Nothing here may change an item's fate: a listener that throws is
/// ignored and the item runs untraced.
/// </summary>
internal static class DurableTracing
{
    public const string SystemTag = "messaging.system";
    public const string DestinationTag = "messaging.destination.name";
    public const string OperationTypeTag = "messaging.operation.type";
    public const string OperationNameTag = "messaging.operation.name";
    public const string MessageIdTag = "messaging.message.id";
    public const string BatchCountTag = "messaging.batch.message_count";
    public const string ErrorTypeTag = "error.type";
    public const string AttemptTag = "boundedwork.attempt";
    public const string OutcomeTag = "boundedwork.outcome";

    private static readonly ActivitySource s_source = new(PostgreSqlWorkQueueDiagnostics.ActivitySourceName, typeof(DurableTracing).Assembly.GetName().Version?.ToString());

    /// <summary>Starts the producer span of an enqueue of <paramref name="count"/> items (current until stopped); <see langword="null"/> when nobody listens.</summary>
    public static Activity? StartSend(string queue, int count)
    {
        if (!s_source.HasListeners())
        {
            return null;
        }

        try
        {
            var activity = s_source.StartActivity("send " + queue, ActivityKind.Producer);
            if (activity is { IsAllDataRequested: true })
            {
                activity.SetTag(SystemTag, PostgreSqlWorkQueueDiagnostics.MessagingSystem);
                activity.SetTag(DestinationTag, queue);
                activity.SetTag(OperationTypeTag, "send");
                activity.SetTag(OperationNameTag, "send");
                if (count != 1)
                {
                    activity.SetTag(BatchCountTag, count);
                }
            }

            return activity;
        }
        catch (Exception)
        {
            return null;
        }
    }

    /// <summary>Ends an enqueue's span with the stored item's id (a single item), or its failure.</summary>
    public static void StopSend(Activity? activity, long? itemId, Exception? failure)
    {
        if (activity is null)
        {
            return;
        }

        try
        {
            if (itemId is { } id)
            {
                activity.SetTag(MessageIdTag, id.ToString(CultureInfo.InvariantCulture));
            }

            if (failure is not null)
            {
                activity.SetStatus(ActivityStatusCode.Error, failure.Message);
                activity.SetTag(ErrorTypeTag, failure.GetType().FullName);
            }

            activity.Dispose();
        }
        catch (Exception)
        {
            // A listener's failure never changes what the enqueue did.
        }
    }

    /// <summary>
    /// Starts a delivery's consumer span, child of the stored producer context (and linked to it), and leaves it
    /// current so that the executor's item, submitted next on this thread, runs inside it; the caller restores the
    /// previous current activity after submitting.
    /// </summary>
    public static Activity? StartProcess(string queue, StoredItem item)
    {
        if (!s_source.HasListeners())
        {
            return null;
        }

        try
        {
            ActivityContext parent = default;
            ActivityLink[]? links = null;
            if (item.TraceParent is { } traceParent && ActivityContext.TryParse(traceParent, item.TraceState, isRemote: true, out var stored))
            {
                parent = stored;
                links = [new ActivityLink(stored)];
            }

            var activity = s_source.StartActivity("process " + queue, ActivityKind.Consumer, parent, tags: null, links);
            if (activity is { IsAllDataRequested: true })
            {
                activity.SetTag(SystemTag, PostgreSqlWorkQueueDiagnostics.MessagingSystem);
                activity.SetTag(DestinationTag, queue);
                activity.SetTag(OperationTypeTag, "process");
                activity.SetTag(OperationNameTag, "process");
                activity.SetTag(MessageIdTag, item.Id.ToString(CultureInfo.InvariantCulture));
                activity.SetTag(AttemptTag, item.Attempts);
            }

            return activity;
        }
        catch (Exception)
        {
            return null;
        }
    }

    /// <summary>
    /// Ends a delivery's span with its outcome (on the thread that posts it, usually a worker). The thread's current
    /// activity is left as it was, unless it was this span, which gives way to its parent as usual.
    /// </summary>
    public static void StopProcess(Activity? activity, OutcomeKind kind, string? error)
    {
        if (activity is null)
        {
            return;
        }

        try
        {
            var current = Activity.Current;
            activity.SetTag(OutcomeTag, OutcomeName(kind));
            if (kind is OutcomeKind.Retry or OutcomeKind.Dead && error is not null)
            {
                activity.SetStatus(ActivityStatusCode.Error, error);
                activity.SetTag(ErrorTypeTag, kind == OutcomeKind.Dead ? "dead_letter" : "retry");
            }

            activity.Dispose();
            if (!ReferenceEquals(current, activity))
            {
                Activity.Current = current;
            }
        }
        catch (Exception)
        {
            // A listener's failure never changes the delivery's outcome.
        }
    }

    private static string OutcomeName(OutcomeKind kind) => kind switch
    {
        OutcomeKind.Completed => "completed",
        OutcomeKind.Retry => "retry",
        OutcomeKind.Dead => "dead_letter",
        OutcomeKind.Cancelled => "cancelled",
        OutcomeKind.Released => "released",
        OutcomeKind.Snoozed => "snoozed",
        _ => "unknown",
    };
}
