using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>The owner of stored items a test builds by hand for the outcome writer: never asked to run or release one.</summary>
internal sealed class NoOwner : IStoredItemOwner
{
    public string DeliveryDescriptionPrefix => "handler.Handle(Notice";

    public void Run(StoredItem item) => throw new InvalidOperationException();

    public void Release(StoredItem item) => throw new InvalidOperationException();
}
