namespace BoundedWork.Hosting;

/// <summary>What an action does to each item of its selection (<see cref="StoredItemAction"/>), and the states it takes.</summary>
public enum StoredItemActionKind
{
    /// <summary>Requeues dead letters as new deliveries (as <see cref="IDeadLetterStore.RequeueDeadLettersAsync"/> does). Selection state: <see cref="StoredItemState.DeadLetter"/>.</summary>
    Requeue,

    /// <summary>Cancels items that have not started. Selection state: <see cref="StoredItemState.Ready"/> or <see cref="StoredItemState.Scheduled"/>.</summary>
    Cancel,

    /// <summary>Deletes finished items (their idempotency keys are free again). Selection state: <see cref="StoredItemState.Completed"/>, <see cref="StoredItemState.DeadLetter"/> or <see cref="StoredItemState.Cancelled"/>.</summary>
    Delete,

    /// <summary>Sets the items' priority to <see cref="StoredItemAction.Priority"/>. Selection state: <see cref="StoredItemState.Ready"/> or <see cref="StoredItemState.Scheduled"/>.</summary>
    SetPriority,

    /// <summary>Sets when the items become due to <see cref="StoredItemAction.RunAt"/> (ready if it has come, else scheduled). Selection state: <see cref="StoredItemState.Ready"/> or <see cref="StoredItemState.Scheduled"/>.</summary>
    SetRunAt,
}

/// <summary>An action on the stored items a query selects (<see cref="IStoredItemSearch.PreviewItemActionAsync"/>, <see cref="IStoredItemSearch.ApplyItemActionAsync"/>).</summary>
public sealed record StoredItemAction
{
    /// <summary>The earliest <see cref="RunAt"/>: 1970-01-01T00:00:00Z.</summary>
    public static readonly DateTimeOffset MinRunAt = DateTimeOffset.UnixEpoch;

    /// <summary>Gets what to do.</summary>
    /// <value>Required.</value>
    public required StoredItemActionKind Kind { get; init; }

    /// <summary>Gets which items: a query's state and filters (its <see cref="StoredItemQuery.Limit"/> and <see cref="StoredItemQuery.Cursor"/> are not used).</summary>
    /// <value>Required.</value>
    public required StoredItemQuery Selection { get; init; }

    /// <summary>Gets the new priority of <see cref="StoredItemActionKind.SetPriority"/>.</summary>
    /// <value>Defaults to <see langword="null"/>. Required for that action, between <see cref="EnqueueOptions.MinPriority"/> and <see cref="EnqueueOptions.MaxPriority"/>; refused for the others.</value>
    public int? Priority { get; init; }

    /// <summary>Gets the new due time of <see cref="StoredItemActionKind.SetRunAt"/>.</summary>
    /// <value>Defaults to <see langword="null"/>. Required for that action, at or after <see cref="MinRunAt"/>; refused for the others.</value>
    public DateTimeOffset? RunAt { get; init; }

    /// <summary>Checks the action's rules and its selection's.</summary>
    /// <exception cref="ArgumentException">A rule is broken; <see cref="ArgumentException.ParamName"/> names the property.</exception>
    public void Validate()
    {
        ArgumentNullException.ThrowIfNull(Selection);
        if (!Enum.IsDefined(Kind))
        {
            throw new ArgumentException($"StoredItemAction.Kind must be one of {string.Join(", ", Enum.GetNames<StoredItemActionKind>())} (was {(int)Kind}).", nameof(Kind));
        }

        Selection.Validate();
        StoredItemState[] states = Kind switch
        {
            StoredItemActionKind.Requeue => [StoredItemState.DeadLetter],
            StoredItemActionKind.Delete => [StoredItemState.Completed, StoredItemState.DeadLetter, StoredItemState.Cancelled],
            _ => [StoredItemState.Ready, StoredItemState.Scheduled],
        };
        if (!states.Contains(Selection.State))
        {
            throw new ArgumentException($"{Kind} takes items that are {string.Join(" or ", states)}, not {Selection.State}.", nameof(Selection.State));
        }

        if ((Kind == StoredItemActionKind.SetPriority) != (Priority is not null))
        {
            throw new ArgumentException($"StoredItemAction.Priority is {(Priority is null ? "required for SetPriority" : $"not taken by {Kind}")}.", nameof(Priority));
        }

        if (Priority is < EnqueueOptions.MinPriority or > EnqueueOptions.MaxPriority)
        {
            throw new ArgumentException($"StoredItemAction.Priority must be between {EnqueueOptions.MinPriority} and {EnqueueOptions.MaxPriority} (was {Priority}).", nameof(Priority));
        }

        if ((Kind == StoredItemActionKind.SetRunAt) != (RunAt is not null))
        {
            throw new ArgumentException($"StoredItemAction.RunAt is {(RunAt is null ? "required for SetRunAt" : $"not taken by {Kind}")}.", nameof(RunAt));
        }

        if (RunAt < MinRunAt)
        {
            throw new ArgumentException($"StoredItemAction.RunAt must be at or after {MinRunAt:O} (was {RunAt:O}).", nameof(RunAt));
        }
    }
}

/// <summary>The dry run of an action: how many items it would touch now, and the token that applies it.</summary>
/// <param name="Count">How many items the action would touch now.</param>
/// <param name="ConfirmToken">The token <see cref="IStoredItemSearch.ApplyItemActionAsync"/> requires: it names this action and selection, and the count, the most items the action will then touch.</param>
public sealed record StoredItemActionPreview(int Count, string ConfirmToken);

/// <summary>What an applied action did.</summary>
/// <param name="Applied">How many items it changed.</param>
/// <param name="Skipped">How many selected items it left: claimed by a consumer at that moment, or out of the selection by then.</param>
/// <param name="StoppedAtConfirmedCount">Whether it stopped at the dry run's count before the end of the selection (more items may match now: the selection grew since).</param>
public sealed record StoredItemActionResult(int Applied, int Skipped, bool StoppedAtConfirmedCount);
