namespace BoundedWork.Hosting;

/// <summary>
/// What an enqueue that may find its idempotency key taken did (<c>IDurableWorkQueue&lt;T&gt;.EnqueueAsync(item, options)</c> with <see cref="EnqueueOptions.IdempotencyKey"/>).
/// </summary>
/// <param name="ItemId">
/// The id of the stored item: the new item's, or, for a duplicate, the one stored before with the same key (its
/// <see cref="WorkItemContext.ItemId"/> when handled).
/// </param>
/// <param name="IsDuplicate">
/// <see langword="true"/> if an item with the same idempotency key was already stored (ready, scheduled, running,
/// completed, cancelled or a dead letter, until cleanup deletes its row): this call stored nothing and the item it was
/// given is discarded.
/// </param>
public readonly record struct EnqueueResult(long ItemId, bool IsDuplicate);
