namespace BoundedWork;

/// <summary>The outcome of <see cref="BoundedExecutor.ShutdownAsync(CancellationToken)"/>.</summary>
public sealed class ShutdownResult
{
    internal ShutdownResult(IReadOnlyList<WorkItem> abandonedItems, bool workersExited)
    {
        AbandonedItems = abandonedItems;
        WorkersExited = workersExited;
    }

    /// <summary>
    /// Gets the items that were still queued at the deadline and never ran, oldest first, so the caller can
    /// persist or rerun them. Awaited items are included; their tasks have been cancelled. Empty after a full drain.
    /// </summary>
    public IReadOnlyList<WorkItem> AbandonedItems { get; }

    /// <summary>
    /// Gets a value indicating whether every worker thread had exited when the call returned. It is
    /// <see langword="false"/> only when a deadline passed while items were still running; those items finish
    /// on their own (they are never interrupted) and <see cref="BoundedExecutor.Completion"/> completes after them.
    /// </summary>
    public bool WorkersExited { get; }

    /// <summary>Gets a value indicating whether every accepted item ran (nothing was abandoned and all workers exited).</summary>
    public bool Drained => AbandonedItems.Count == 0 && WorkersExited;

    /// <summary>Describes the outcome in words: drained, or how many items were abandoned and whether workers still run.</summary>
    /// <returns>For example <c>Drained: every accepted item ran</c> or <c>1 item abandoned; all workers exited</c>.</returns>
    public override string ToString() => Drained
        ? "Drained: every accepted item ran"
        : string.Create(
            System.Globalization.CultureInfo.InvariantCulture,
            $"{AbandonedItems.Count} {(AbandonedItems.Count == 1 ? "item" : "items")} abandoned; {(WorkersExited ? "all workers exited" : "workers still running items past the deadline (they finish on their own)")}");
}
