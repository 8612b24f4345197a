using System.Diagnostics.Metrics;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>The console's instruments on the <c>BoundedWork.Admin</c> meter, created through the host's meter factory.</summary>
internal sealed class AdminMetrics
{
    public const string MeterName = BoundedWorkAdminDiagnostics.MeterName;
    public const string ExecutorTag = "boundedwork.executor";
    public const string SettingTag = "boundedwork.setting";
    public const string ReasonTag = "boundedwork.reason";

    /// <summary>The executor tag of a refused change to a name that is not registered.</summary>
    public const string UnknownExecutor = "(unknown)";

    private readonly Counter<long> _changes;
    private readonly Counter<long> _refused;
    private readonly Counter<long> _deadLetters;

    public AdminMetrics(IMeterFactory meterFactory)
    {
        var meter = meterFactory.Create(MeterName);
        _changes = meter.CreateCounter<long>(
            "boundedwork.admin.changes", "{change}", "Executor settings changed through the admin console, one per setting whose value changed.");
        _refused = meter.CreateCounter<long>(
            "boundedwork.admin.refused", "{request}", "Requests to change an executor, or a queue's dead letters, that the admin console refused (invalid input, unknown or shut-down executor or queue, missing header or content type, storage unavailable).");
        _deadLetters = meter.CreateCounter<long>(
            "boundedwork.admin.dead_letters", "{item}", "Dead letters requeued or purged through the admin console (tag boundedwork.operation: requeue or purge).");
    }

    public const string OperationTag = "boundedwork.operation";

    public void DeadLetters(string queue, string operation, int count) =>
        _deadLetters.Add(count, new KeyValuePair<string, object?>(ExecutorTag, queue), new KeyValuePair<string, object?>(OperationTag, operation));

    public void Changed(string executor, string setting) =>
        _changes.Add(1, new KeyValuePair<string, object?>(ExecutorTag, executor), new KeyValuePair<string, object?>(SettingTag, setting));

    public void Refused(string executor, string reason) =>
        _refused.Add(1, new KeyValuePair<string, object?>(ExecutorTag, executor), new KeyValuePair<string, object?>(ReasonTag, reason));
}
