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

    /// <summary>Gets a value indicating whether each handler records its start and end in <c>runs</c> (the clock is the database's).</summary>
    public bool RecordsRuns { get; init; }
}

/// <summary>
/// Records every delivery, and the item's effect once per item id; takes the configured time (the work), during
/// which a cancellation of the item stops it (recorded in <c>cancellations</c>). A handler of a second or more also
/// records when it starts (in <c>starts</c>), so a test can act while it runs. With <see cref="EffectStore.RecordsRuns"/>
/// every run records its start and end in <c>runs</c>, around everything else it does.
/// </summary>
public sealed class RecordingHandler(EffectStore store, WorkItemContext context) : IBlockingWorkHandler<Notice>
{
    public void Handle(Notice item, CancellationToken cancellationToken)
    {
        var node = Environment.ProcessId;
        if (store.RecordsRuns)
        {
            using var connection = store.DataSource.OpenConnection();
            using var command = new NpgsqlCommand(
                $"INSERT INTO \"{store.Schema}\".runs (item_id, number, key, node, attempt, started_at) VALUES ($1, $2, $3, $4, $5, clock_timestamp())", connection)
            {
                Parameters =
                {
                    new() { Value = context.ItemId }, new() { Value = item.Number },
                    new() { Value = (object?)item.Key ?? DBNull.Value, NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Text },
                    new() { Value = node }, new() { Value = context.Attempt },
                },
            };
            command.ExecuteNonQuery();
        }

        try
        {
            Work(item, node, cancellationToken);
        }
        finally
        {
            if (store.RecordsRuns)
            {
                using var connection = store.DataSource.OpenConnection();
                using var command = new NpgsqlCommand(
                    $"UPDATE \"{store.Schema}\".runs SET ended_at = clock_timestamp() WHERE item_id = $1 AND attempt = $2 AND node = $3", connection)
                {
                    Parameters = { new() { Value = context.ItemId }, new() { Value = context.Attempt }, new() { Value = node } },
                };
                command.ExecuteNonQuery();
            }
        }
    }

    private void Work(Notice item, int node, CancellationToken cancellationToken)
    {
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
