namespace BoundedWork.Internal;

/// <summary>How an item that ran (or was skipped by its worker) ended; each is counted once (see <see cref="OutcomeCounters"/>).</summary>
internal enum ItemOutcome
{
    Completed,
    Failed,
    Cancelled,
}
