namespace BoundedWork.Hosting;

/// <summary>
/// Which dead letters of a queue to requeue or purge (<see cref="IDeadLetterStore"/>): some by id
/// (<see cref="ByIds"/>), or all of them, optionally within a time window (<see cref="All"/>).
/// </summary>
public sealed record DeadLetterSelection
{
    /// <summary>The most ids one selection takes.</summary>
    public const int MaxIds = 1000;

    private DeadLetterSelection(IReadOnlyList<long>? itemIds, DateTimeOffset? since, DateTimeOffset? until)
    {
        ItemIds = itemIds;
        Since = since;
        Until = until;
    }

    /// <summary>Gets the selected items' ids; <see langword="null"/> for every dead letter in the window.</summary>
    public IReadOnlyList<long>? ItemIds { get; }

    /// <summary>Gets the earliest time an item became a dead letter to select (inclusive); only without ids.</summary>
    public DateTimeOffset? Since { get; }

    /// <summary>Gets the time before which an item became a dead letter to select (exclusive); only without ids.</summary>
    public DateTimeOffset? Until { get; }

    /// <summary>Selects the dead letters with these ids (ids that are not dead letters of the queue are skipped).</summary>
    /// <param name="itemIds">1 to <see cref="MaxIds"/> (1,000) ids.</param>
    /// <returns>The selection.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="itemIds"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="itemIds"/> is empty or has more than 1,000 ids.</exception>
    public static DeadLetterSelection ByIds(IEnumerable<long> itemIds)
    {
        ArgumentNullException.ThrowIfNull(itemIds);
        long[] ids = [.. itemIds.Distinct()];
        return ids.Length is 0 or > MaxIds
            ? throw new ArgumentException($"A selection takes 1 to {MaxIds} ids (was {ids.Length}).", nameof(itemIds))
            : new DeadLetterSelection(ids, null, null);
    }

    /// <summary>Selects every dead letter of the queue, or those that became dead letters in a time window.</summary>
    /// <param name="since">The earliest time (inclusive); <see langword="null"/> for no lower bound.</param>
    /// <param name="until">The time before which (exclusive); <see langword="null"/> for no upper bound.</param>
    /// <returns>The selection.</returns>
    /// <exception cref="ArgumentException"><paramref name="until"/> is not after <paramref name="since"/>.</exception>
    public static DeadLetterSelection All(DateTimeOffset? since = null, DateTimeOffset? until = null) =>
        since is { } from && until is { } to && to <= from
            ? throw new ArgumentException($"The window must end after it starts (since {from:O}, until {to:O}).", nameof(until))
            : new DeadLetterSelection(null, since, until);

    /// <inheritdoc/>
    public override string ToString() => ItemIds is { } ids
        ? ids.Count == 1 ? $"item {ids[0]}" : $"{ids.Count} items by id"
        : (Since, Until) switch
        {
            (null, null) => "all",
            ({ } from, null) => $"all since {from:O}",
            (null, { } to) => $"all until {to:O}",
            ({ } from, { } to) => $"all from {from:O} until {to:O}",
        };
}
