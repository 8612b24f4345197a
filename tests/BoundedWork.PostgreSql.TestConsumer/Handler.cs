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

/// <summary>Records every delivery, and the item's effect once per item id; takes the configured time (the work).</summary>
public sealed class RecordingHandler(EffectStore store, WorkItemContext context) : IBlockingWorkHandler<Notice>
{
    public void Handle(Notice item, CancellationToken cancellationToken)
    {
        if (store.HandlerTime > TimeSpan.Zero)
        {
            Thread.Sleep(store.HandlerTime);
        }

        var node = Environment.ProcessId;
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
}
