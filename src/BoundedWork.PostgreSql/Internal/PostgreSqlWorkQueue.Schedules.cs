namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// What durable schedules need of the queue they enqueue on: its schema (their table lives beside its items), and what
/// a pass needs to insert many ticks in one statement of its own (see <see cref="ScheduleSql.EnqueueAndAdvance"/>): an
/// item's row as every enqueue stores it, the lock id of an ordering key, the channel that wakes the consumers.
/// </summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    /// <summary>Gets the queue's schema, unquoted.</summary>
    internal string StorageSchema => _sql.Schema;

    /// <summary>Gets the channel an enqueue notifies to wake the consumers (the payload is the queue's name).</summary>
    internal string StorageNotifyChannel => _sql.NotifyChannel;

    /// <summary>The lock id of an ordering key (an SQL expression) of queue <c>$1</c>, as every enqueue takes it.</summary>
    internal string OrderingKeyLockId(string key) => _sql.OrderingKeyLockId(key);

    /// <summary>An item's payload and ordering key as an enqueue stores them (a failure throws here, before any I/O).</summary>
    internal (string Payload, string? OrderingKey) StoredRowOf(T item) => (Serialize(item), OrderingKeyOf(item));
}
