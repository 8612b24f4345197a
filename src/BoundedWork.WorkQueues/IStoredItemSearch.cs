namespace BoundedWork.Hosting;

/// <summary>
/// The items a durable work queue keeps in its storage, to search and act on in bulk: find items by state, ordering
/// key, times, error text or a payload field, a page at a time; then cancel, delete, requeue, reprioritise or
/// reschedule a selection, after a dry run that says how many it would touch. Storage packages register one per queue
/// (BoundedWork.PostgreSql does); the admin console's item endpoints and <c>bw items</c> use them. Resolve all of them
/// with <c>IEnumerable&lt;IStoredItemSearch&gt;</c>.
/// </summary>
/// <remarks>
/// A search examines a bounded number of stored items a page (the storage says how many, in
/// <see cref="StoredItemPage.Examined"/>): a page may hold fewer items than asked, even none, and still have a next
/// cursor. An action walks its selection the same way, in short batches that skip the rows a consumer is claiming
/// right now, so it never makes the consumers wait.
/// </remarks>
public interface IStoredItemSearch
{
    /// <summary>Gets the name of the queue whose items these are.</summary>
    string QueueName { get; }

    /// <summary>Finds the queue's items in one state that match every filter of <paramref name="query"/>, a page at a time.</summary>
    /// <param name="query">The state, the filters, the page's size and where it starts.</param>
    /// <param name="cancellationToken">Cancels the query.</param>
    /// <returns>The page, and the cursor of the next one if there may be more.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="query"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The query is invalid (the exception's <see cref="ArgumentException.ParamName"/> names the property), or its cursor is not one this store returned for the same state.</exception>
    Task<StoredItemPage> SearchItemsAsync(StoredItemQuery query, CancellationToken cancellationToken = default);

    /// <summary>
    /// The dry run of an action: counts the items it would touch now, changing nothing, and returns the token that
    /// <see cref="ApplyItemActionAsync"/> requires for the same action.
    /// </summary>
    /// <param name="action">The action and its selection.</param>
    /// <param name="cancellationToken">Cancels the count.</param>
    /// <returns>How many items the action would touch, and its confirmation token.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The action or its selection is invalid (the exception's <see cref="ArgumentException.ParamName"/> names the property).</exception>
    Task<StoredItemActionPreview> PreviewItemActionAsync(StoredItemAction action, CancellationToken cancellationToken = default);

    /// <summary>
    /// Applies an action after its dry run: walks the selection in short batches and touches at most the number of
    /// items the dry run counted (a selection that grew since is not followed past it). An item a consumer is claiming
    /// at that moment, or that left the selection since, is skipped and counted as such.
    /// </summary>
    /// <param name="action">The action and its selection, as given to the dry run.</param>
    /// <param name="confirmToken">The <see cref="StoredItemActionPreview.ConfirmToken"/> of the dry run of this same action.</param>
    /// <param name="cancellationToken">Cancels the walk between batches; the batches applied stay applied.</param>
    /// <returns>How many items were changed and how many were skipped.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="action"/> or <paramref name="confirmToken"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The action is invalid, or <paramref name="confirmToken"/> is not the token of a dry run of this action.</exception>
    Task<StoredItemActionResult> ApplyItemActionAsync(StoredItemAction action, string confirmToken, CancellationToken cancellationToken = default);
}
