using System.Diagnostics;
using System.Text.Json.Serialization;
using BoundedWork.Hosting;

namespace BoundedWork.OpenTelemetry.TestConsumer;

/// <summary>The item the trace tests enqueue: a payment callback to record.</summary>
public sealed record Callback(string OrderId);

/// <summary>Source-generated JSON metadata of <see cref="Callback"/>.</summary>
[JsonSerializable(typeof(Callback))]
public sealed partial class CallbackJson : JsonSerializerContext;

/// <summary>One exported span as the consumer process reports it (a line <c>SPAN {json}</c> on its output).</summary>
public sealed record ExportedSpan(
    string Name,
    string Source,
    string Kind,
    string TraceId,
    string SpanId,
    string? ParentSpanId,
    string Status,
    Dictionary<string, string?> Tags,
    List<string> LinkedSpanIds)
{
    public const string LinePrefix = "SPAN ";

    public static ExportedSpan From(Activity activity) => new(
        activity.DisplayName,
        activity.Source.Name,
        activity.Kind.ToString(),
        activity.TraceId.ToHexString(),
        activity.SpanId.ToHexString(),
        activity.ParentSpanId == default ? null : activity.ParentSpanId.ToHexString(),
        activity.Status.ToString(),
        activity.TagObjects.ToDictionary(tag => tag.Key, tag => Convert.ToString(tag.Value, System.Globalization.CultureInfo.InvariantCulture)),
        [.. activity.Links.Select(link => link.Context.SpanId.ToHexString())]);
}

/// <summary>
/// Records the callback in the ledger: its own span (the handler's work, on source <see cref="SourceName"/>), then
/// a line <c>HANDLED {item id}</c> on the output.
/// </summary>
public sealed class LedgerHandler(WorkItemContext context) : IBlockingWorkHandler<Callback>
{
    public const string SourceName = "Ledger";

    private static readonly ActivitySource s_source = new(SourceName);

    public void Handle(Callback item, CancellationToken cancellationToken)
    {
        using (var activity = s_source.StartActivity("ledger write"))
        {
            activity?.SetTag("order.id", item.OrderId);
        }

        Console.WriteLine("HANDLED " + context.ItemId.ToString(System.Globalization.CultureInfo.InvariantCulture));
    }
}
