using System.Globalization;

namespace BoundedWork.Hosting.Internal;

/// <summary>Describes a work item for a log line: what it runs (<see cref="WorkItem.Description"/>) and its state.</summary>
internal static class WorkItemDescription
{
    private const int MaxStateLength = 500;

    public static string Describe(WorkItem item)
    {
        var name = item.Callback is null ? "(none)" : item.Description;
        var state = item.State switch
        {
            null => "null",
            IFormattable formattable => formattable.ToString(null, CultureInfo.InvariantCulture),
            var other => other.ToString() ?? other.GetType().FullName ?? "?",
        };
        if (state.Length > MaxStateLength)
        {
            state = string.Concat(state.AsSpan(0, MaxStateLength), "…");
        }

        return $"{name} with state {state}{(item.IsAwaited ? " (awaited; its task was cancelled)" : string.Empty)}";
    }
}
