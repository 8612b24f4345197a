using BoundedWork.PostgreSql.Internal;

namespace BoundedWork.PostgreSql.Tests.Model;

/// <summary>A queue that owns the model tests' stored items: they never run and are never released through it.</summary>
internal sealed class ModelOwner : IStoredItemOwner
{
    public static readonly ModelOwner Instance = new();

    public string DeliveryDescriptionPrefix => "Model.Handle(Item";

    public void Run(StoredItem item)
    {
    }

    public void Release(StoredItem item)
    {
    }
}

/// <summary>Stored items for the model tests, with increasing ids.</summary>
internal sealed class ItemSource
{
    private long _next = 1;

    public StoredItem Next(string? key = null, short priority = 0, int dueOffset = 0)
    {
        var id = _next++;
        return new StoredItem(ModelOwner.Instance, id, "{}", 1, 0, DateTimeOffset.UnixEpoch, key is not null, null, null, key, delivery: id)
        {
            Priority = priority,
            RunAt = DateTimeOffset.UnixEpoch.AddSeconds(dueOffset),
        };
    }
}
