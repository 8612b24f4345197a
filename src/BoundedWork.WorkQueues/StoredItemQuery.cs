using System.Text;

namespace BoundedWork.Hosting;

/// <summary>The state of a stored item of a durable work queue.</summary>
public enum StoredItemState
{
    /// <summary>Due and waiting to be claimed.</summary>
    Ready,

    /// <summary>Waiting for its time (a delayed enqueue, or a retry's backoff).</summary>
    Scheduled,

    /// <summary>Claimed by a node.</summary>
    Running,

    /// <summary>Handled; kept until its retention ends (unless completed items are deleted at once).</summary>
    Completed,

    /// <summary>Failed for good; kept until its retention ends.</summary>
    DeadLetter,

    /// <summary>Cancelled; kept until its retention ends.</summary>
    Cancelled,
}

/// <summary>
/// A search of one state of a durable queue's items (<see cref="IStoredItemSearch.SearchItemsAsync"/>), and the
/// selection of an action (<see cref="StoredItemAction.Selection"/>): every filter given must match.
/// </summary>
/// <remarks>
/// Pages come in the state's own order: ready items in claim order (highest priority first, then by due time and
/// id); scheduled items by due time and id; running items by id; completed, dead and cancelled items the most recently
/// finished first. <see cref="Validate"/> states every rule; the storage checks it too.
/// </remarks>
public sealed record StoredItemQuery
{
    /// <summary>The largest <see cref="Limit"/>.</summary>
    public const int MaxLimit = 500;

    /// <summary>The longest <see cref="OrderingKey"/>, <see cref="ErrorContains"/> or <see cref="PayloadEquals"/>, in characters.</summary>
    public const int MaxTextLength = 1024;

    /// <summary>The longest <see cref="PayloadPath"/>, in characters.</summary>
    public const int MaxPayloadPathLength = 256;

    /// <summary>The most segments of a <see cref="PayloadPath"/>.</summary>
    public const int MaxPayloadPathSegments = 16;

    /// <summary>Gets the state of the items to find.</summary>
    /// <value>Required.</value>
    public required StoredItemState State { get; init; }

    /// <summary>Gets the ordering key the items must have (exactly).</summary>
    /// <value>Defaults to <see langword="null"/>: any key, or none.</value>
    public string? OrderingKey { get; init; }

    /// <summary>Gets the earliest enqueue time (inclusive).</summary>
    /// <value>Defaults to <see langword="null"/>: no lower bound.</value>
    public DateTimeOffset? EnqueuedSince { get; init; }

    /// <summary>Gets the enqueue time before which items are found (exclusive).</summary>
    /// <value>Defaults to <see langword="null"/>: no upper bound.</value>
    public DateTimeOffset? EnqueuedUntil { get; init; }

    /// <summary>
    /// Gets the earliest time of the item's last change of state (inclusive): when it finished (completed, dead letter,
    /// cancelled), or when it became or becomes due (ready, scheduled). Running items keep no such time: refused.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: no lower bound.</value>
    public DateTimeOffset? ChangedSince { get; init; }

    /// <summary>Gets the time of the last change before which items are found (exclusive); see <see cref="ChangedSince"/>.</summary>
    /// <value>Defaults to <see langword="null"/>: no upper bound.</value>
    public DateTimeOffset? ChangedUntil { get; init; }

    /// <summary>Gets a text the item's last error must contain (ignoring case).</summary>
    /// <value>Defaults to <see langword="null"/>: any error, or none.</value>
    public string? ErrorContains { get; init; }

    /// <summary>
    /// Gets the path of a field of the payload (JSON): property names and array indexes separated by dots, such as
    /// <c>customer.id</c> or <c>lines.0.sku</c>; each segment letters, digits, <c>_</c> or <c>-</c>. Given with
    /// <see cref="PayloadEquals"/>.
    /// </summary>
    /// <value>Defaults to <see langword="null"/>: no payload filter.</value>
    public string? PayloadPath { get; init; }

    /// <summary>Gets the value the payload's field at <see cref="PayloadPath"/> must have, as text (a string's characters, a number's or a boolean's JSON).</summary>
    /// <value>Defaults to <see langword="null"/>: no payload filter.</value>
    public string? PayloadEquals { get; init; }

    /// <summary>Gets the most items on the page.</summary>
    /// <value>Defaults to 50. Between 1 and <see cref="MaxLimit"/> (500).</value>
    public int Limit { get; init; } = 50;

    /// <summary>Gets where the page starts: the <see cref="StoredItemPage.NextCursor"/> of the page before, with the same state and filters.</summary>
    /// <value>Defaults to <see langword="null"/>: the first page.</value>
    public string? Cursor { get; init; }

    /// <summary>Gets a value indicating whether the query has no filter: it takes every item of its state.</summary>
    public bool MatchesWholeState =>
        OrderingKey is null && EnqueuedSince is null && EnqueuedUntil is null && ChangedSince is null && ChangedUntil is null
        && ErrorContains is null && PayloadPath is null;

    /// <summary>Checks the query's rules.</summary>
    /// <exception cref="ArgumentException">A rule is broken; <see cref="ArgumentException.ParamName"/> names the property.</exception>
    public void Validate()
    {
        if (!Enum.IsDefined(State))
        {
            throw new ArgumentException($"StoredItemQuery.State must be one of {string.Join(", ", Enum.GetNames<StoredItemState>())} (was {(int)State}).", nameof(State));
        }

        if (Limit is < 1 or > MaxLimit)
        {
            throw new ArgumentException($"StoredItemQuery.Limit must be between 1 and {MaxLimit} (was {Limit}).", nameof(Limit));
        }

        CheckText(OrderingKey, nameof(OrderingKey), allowEmpty: false);
        CheckText(ErrorContains, nameof(ErrorContains), allowEmpty: false);
        CheckText(PayloadEquals, nameof(PayloadEquals), allowEmpty: true);
        CheckWindow(EnqueuedSince, EnqueuedUntil, nameof(EnqueuedSince));
        CheckWindow(ChangedSince, ChangedUntil, nameof(ChangedSince));
        if (State == StoredItemState.Running && (ChangedSince is not null || ChangedUntil is not null))
        {
            throw new ArgumentException("StoredItemQuery.ChangedSince and ChangedUntil do not apply to running items (the storage keeps no time of their claim).", nameof(ChangedSince));
        }

        if ((PayloadPath is null) != (PayloadEquals is null))
        {
            throw new ArgumentException("StoredItemQuery.PayloadPath and PayloadEquals go together: give both or neither.", PayloadPath is null ? nameof(PayloadPath) : nameof(PayloadEquals));
        }

        if (PayloadPath is not null && PathProblem(PayloadPath) is { } problem)
        {
            throw new ArgumentException($"StoredItemQuery.PayloadPath '{Shorten(PayloadPath)}' is not a path: {problem}", nameof(PayloadPath));
        }
    }

    /// <summary>The payload path's segments (after <see cref="Validate"/>), or an empty array without a path.</summary>
    /// <returns>The segments, in order.</returns>
    public string[] PayloadPathSegments() => PayloadPath?.Split('.') ?? [];

    private static string? PathProblem(string path)
    {
        if (path.Length is 0 or > MaxPayloadPathLength)
        {
            return $"it must have 1 to {MaxPayloadPathLength} characters (had {path.Length}).";
        }

        var segments = path.Split('.');
        if (segments.Length > MaxPayloadPathSegments)
        {
            return $"it may have at most {MaxPayloadPathSegments} segments (had {segments.Length}).";
        }

        foreach (var segment in segments)
        {
            if (segment.Length == 0)
            {
                return "a segment is empty (two dots in a row, or a dot at an end); write fields as a.b.c, array indexes as a.0.b.";
            }

            foreach (var c in segment)
            {
                if (!(char.IsAsciiLetterOrDigit(c) || c is '_' or '-'))
                {
                    return $"'{(char.IsControl(c) || char.IsSurrogate(c) ? $"\\u{(int)c:X4}" : c.ToString())}' may not appear in a segment (letters, digits, '_' and '-' only; '.' separates segments).";
                }
            }
        }

        return null;
    }

    private static void CheckText(string? value, string name, bool allowEmpty)
    {
        if (value is null)
        {
            return;
        }

        if ((!allowEmpty && value.Length == 0) || value.Length > MaxTextLength)
        {
            throw new ArgumentException($"StoredItemQuery.{name} must have {(allowEmpty ? 0 : 1)} to {MaxTextLength} characters (had {value.Length}).", name);
        }

        if (value.Contains('\0', StringComparison.Ordinal))
        {
            throw new ArgumentException($"StoredItemQuery.{name} may not contain a NUL character.", name);
        }

        if (!IsWellFormed(value))
        {
            throw new ArgumentException($"StoredItemQuery.{name} is not valid text (it holds a lone surrogate).", name);
        }
    }

    private static void CheckWindow(DateTimeOffset? since, DateTimeOffset? until, string name)
    {
        if (since is { } from && until is { } to && from >= to)
        {
            throw new ArgumentException($"StoredItemQuery.{name} ({from:O}) must be before the window's end ({to:O}).", name);
        }
    }

    private static bool IsWellFormed(string value)
    {
        try
        {
            _ = new UTF8Encoding(false, throwOnInvalidBytes: true).GetByteCount(value);
            return true;
        }
        catch (EncoderFallbackException)
        {
            return false;
        }
    }

    private static string Shorten(string text) => text.Length <= 64 ? text : string.Concat(text.AsSpan(0, 64), "...");
}

/// <summary>A page of stored items, in the order of their state (<see cref="StoredItemQuery"/>).</summary>
/// <param name="Items">The items on the page, without their payloads.</param>
/// <param name="NextCursor">The cursor of the next page (<see cref="StoredItemQuery.Cursor"/>); <see langword="null"/> on the last page.</param>
/// <param name="Examined">How many stored items of the state the page examined: the filters are checked on at most the storage's scan budget a page.</param>
public sealed record StoredItemPage(IReadOnlyList<StoredItemInfo> Items, string? NextCursor, int Examined);

/// <summary>A stored item as a search shows it (without its payload).</summary>
public sealed record StoredItemInfo
{
    /// <summary>Gets the item's id.</summary>
    public required long ItemId { get; init; }

    /// <summary>Gets the item's state.</summary>
    public required StoredItemState State { get; init; }

    /// <summary>Gets how many times the item was delivered.</summary>
    public required int Attempts { get; init; }

    /// <summary>Gets the item's priority.</summary>
    public int Priority { get; init; }

    /// <summary>Gets the item's ordering key, if it has one.</summary>
    public string? OrderingKey { get; init; }

    /// <summary>Gets when the item was enqueued.</summary>
    public required DateTimeOffset EnqueuedAt { get; init; }

    /// <summary>Gets when the item became or becomes due.</summary>
    public required DateTimeOffset RunAt { get; init; }

    /// <summary>Gets when the item finished (completed, dead letter, cancelled); <see langword="null"/> otherwise.</summary>
    public DateTimeOffset? FinishedAt { get; init; }

    /// <summary>Gets the item's last error (cut after 4,096 characters), if any.</summary>
    public string? LastError { get; init; }

    /// <summary>Gets the item's tenant (<see cref="EnqueueOptions.Tenant"/>), or <see langword="null"/> if it has none.</summary>
    public string? Tenant { get; init; }
}
