namespace BoundedWork.PostgreSql;

/// <summary>
/// Names of the diagnostics the durable queues publish: the <c>BoundedWork.PostgreSql</c> meter (what each node claimed,
/// finished and read from the database) and the <c>BoundedWork.PostgreSql</c> activity source, which traces each
/// enqueue (<c>send {queue}</c>, a producer span) and each delivery (<c>process {queue}</c>, a consumer span that
/// continues the producer's trace on whichever node runs it), named and tagged after the OpenTelemetry messaging
/// semantic conventions.
/// </summary>
public static class PostgreSqlWorkQueueDiagnostics
{
    /// <summary>The name of the meter that holds the durable queues' instruments.</summary>
    public const string MeterName = "BoundedWork.PostgreSql";

    /// <summary>The name of the activity source that traces enqueues and deliveries.</summary>
    public const string ActivitySourceName = "BoundedWork.PostgreSql";

    /// <summary>The value of <c>messaging.system</c> on every span of the activity source.</summary>
    public const string MessagingSystem = "boundedwork";
}
