namespace BoundedWork.PostgreSql;

/// <summary>What an enqueue with an idempotency key did (<c>IPostgreSqlWorkQueue&lt;T&gt;.EnqueueIdempotentAsync</c>).</summary>
/// <param name="ItemId">
/// The id of the stored item that holds the key: the new item's, or, for a duplicate, the one stored before (its
/// <see cref="Hosting.WorkItemContext.ItemId"/> when handled).
/// </param>
/// <param name="IsDuplicate">
/// <see langword="true"/> if an item with the same key was already stored (ready, scheduled, running, completed or a
/// dead letter, until cleanup deletes its row): this call stored nothing and the item it was given is discarded.
/// </param>
public readonly record struct IdempotentEnqueueResult(long ItemId, bool IsDuplicate);
