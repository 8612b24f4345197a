namespace BoundedWork.PostgreSql.Internal;

/// <summary>What durable schedules need of the queue they enqueue on: its schema (their table lives beside its items).</summary>
internal sealed partial class PostgreSqlWorkQueue<T>
{
    /// <summary>Gets the queue's schema, unquoted.</summary>
    internal string StorageSchema => _sql.Schema;
}
