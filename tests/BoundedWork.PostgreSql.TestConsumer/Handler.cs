using System.Text.Json.Serialization;
using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.TestConsumer;

/// <summary>The item the tests enqueue.</summary>
public sealed record Notice(int Number, string? Key = null);

/// <summary>Source-generated JSON metadata of <see cref="Notice"/>.</summary>
[JsonSerializable(typeof(Notice))]
public sealed partial class NoticeJson : JsonSerializerContext;

/// <summary>Where the handlers record deliveries and effects.</summary>
public sealed class EffectStore(NpgsqlDataSource dataSource, string schema, TimeSpan handlerTime)
{
    public NpgsqlDataSource DataSource { get; } = dataSource;

    public string Schema { get; } = schema;

    public TimeSpan HandlerTime { get; } = handlerTime;
}

/// <summary>
/// Records every delivery, and the item's effect once per item id; takes the configured time (the work), during
/// which a cancellation of the item stops it (recorded in <c>cancellations</c>). A handler of a second or more also
/// records when it starts (in <c>starts</c>), so a test can act while it runs.
/// </summary>
public sealed class RecordingHandler(EffectStore store, WorkItemContext context) : IBlockingWorkHandler<Notice>
{
    public void Handle(Notice item, CancellationToken cancellationToken)
    {
        var node = Environment.ProcessId;
        if (store.HandlerTime >= TimeSpan.FromSeconds(1))
        {
            Execute($"INSERT INTO \"{store.Schema}\".starts (item_id, node) VALUES ($1, $2)", context.ItemId, node);
        }

        if (store.HandlerTime > TimeSpan.Zero && cancellationToken.WaitHandle.WaitOne(store.HandlerTime))
        {
            Execute($"INSERT INTO \"{store.Schema}\".cancellations (item_id, node) VALUES ($1, $2)", context.ItemId, node);
            cancellationToken.ThrowIfCancellationRequested();
        }

        using var connection = store.DataSource.OpenConnection();
        using var batch = new NpgsqlBatch(connection)
        {
            BatchCommands =
            {
                new NpgsqlBatchCommand($"INSERT INTO \"{store.Schema}\".deliveries (item_id, number, attempt, node, traceparent) VALUES ($1, $2, $3, $4, $5)")
                {
                    Parameters =
                    {
                        new() { Value = context.ItemId }, new() { Value = item.Number }, new() { Value = context.Attempt }, new() { Value = node },
                        new() { Value = (object?)context.TraceParent ?? DBNull.Value, NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Text },
                    },
                },
                new NpgsqlBatchCommand($"INSERT INTO \"{store.Schema}\".effects (item_id, number, node) VALUES ($1, $2, $3) ON CONFLICT (item_id) DO NOTHING")
                {
                    Parameters = { new() { Value = context.ItemId }, new() { Value = item.Number }, new() { Value = node } },
                },
            },
        };
        batch.ExecuteNonQuery();
    }

    private void Execute(string sql, long itemId, int node)
    {
        using var connection = store.DataSource.OpenConnection();
        using var command = new NpgsqlCommand(sql, connection) { Parameters = { new() { Value = itemId }, new() { Value = node } } };
        command.ExecuteNonQuery();
    }
}
