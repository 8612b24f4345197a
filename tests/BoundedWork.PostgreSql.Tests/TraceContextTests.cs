using System.Collections.Concurrent;
using System.Diagnostics;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The producer's W3C trace context is stored with the item at enqueue (in any of its forms) and handed to the handler
/// on every delivery, on whichever node or process runs it.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class TraceContextTests(PostgresFixture postgres)
{
    [Fact]
    public async Task EnqueueUnderAW3CActivity_TheHandlerSeesItsTraceContext_OnEveryDelivery_RetriesIncluded()
    {
        var schema = await postgres.NewSchemaAsync();
        var seen = new ConcurrentQueue<(int Attempt, string? TraceParent, string? TraceState)>();
        var behavior = new Behavior
        {
            Handle = (_, context) =>
            {
                seen.Enqueue((context.Attempt, context.TraceParent, context.TraceState));
                if (context.Attempt == 1)
                {
                    throw new InvalidOperationException("the first delivery fails");
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);

        string producerId;
        using (var producer = StartW3CActivity("vendor=opaque"))
        {
            producerId = producer.Id!;
            await node.Queue.EnqueueAsync(new Notice(1));
        }

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the retry succeeds");
        Assert.Equal([(1, producerId, "vendor=opaque"), (2, producerId, "vendor=opaque")], seen.ToArray());
        Assert.Matches("^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$", producerId);
    }

    [Fact]
    public async Task EveryEnqueueForm_StoresTheTraceContext_AndNoW3CActivityStoresNone()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();

        string producerId;
        using (var activity = StartW3CActivity(traceState: null))
        {
            producerId = activity.Id!;
            Assert.True(producer.Queue.TryEnqueue(new Notice(1)));
            await producer.Queue.EnqueueAsync(new Notice(2));
            await using (var transaction = await connection.BeginTransactionAsync())
            {
                await producer.Queue.EnqueueAsync(new Notice(3), transaction);
                await producer.Queue.EnqueueAsync(new Notice(4), new EnqueueOptions { IdempotencyKey = "four" }, transaction);
                await producer.Queue.EnqueueAsync(new Notice(5), new EnqueueOptions { Delay = TimeSpan.FromHours(1) }, transaction);
                await transaction.CommitAsync();
            }

            await producer.Queue.EnqueueAsync(new Notice(6), connection);
            await producer.Queue.EnqueueAsync(new Notice(7), new EnqueueOptions { Priority = 3, IdempotencyKey = "seven" });
        }

        await producer.Queue.EnqueueAsync(new Notice(8)); // no activity
        using (var hierarchical = new Activity("legacy").SetIdFormat(ActivityIdFormat.Hierarchical).Start())
        {
            await producer.Queue.EnqueueAsync(new Notice(9)); // an id that is not W3C: not stored
        }

        var stored = await TraceParentsAsync(schema);
        Assert.Equal(Enumerable.Repeat<string?>(producerId, 7).Append(null).Append(null), stored);
    }

    [Fact]
    public async Task DeadLetter_KeepsTheTraceContextInTheTable()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior { Handle = (_, _) => throw new InvalidOperationException("always") };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 1);

        string producerId;
        using (var activity = StartW3CActivity("k=v"))
        {
            producerId = activity.Id!;
            await node.Queue.EnqueueAsync(new Notice(1));
        }

        await behavior.WaitUntilAsync(() => behavior.DeadLetters.Count == 1, "the item is a dead letter");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3").Result == 1, "the dead letter is recorded");
        Assert.Equal(producerId, await postgres.ScalarAsync<string>($"SELECT traceparent FROM {schema}.items"));
        Assert.Equal("k=v", await postgres.ScalarAsync<string>($"SELECT tracestate FROM {schema}.items"));
    }

    [Fact]
    public async Task ConsumerInAnotherProcess_SeesTheProducersTraceParent()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var consumer = await ConsumerProcess.StartAsync(postgres.ConnectionString, schema, workers: 1, TimeSpan.Zero, TimeSpan.FromSeconds(30));

        string producerId;
        using (var activity = StartW3CActivity(traceState: null))
        {
            producerId = activity.Id!;
            await producer.Queue.EnqueueAsync(new Notice(1));
        }

        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.deliveries").Result == 1, "the child process handled the item");
        Assert.Equal(producerId, await postgres.ScalarAsync<string>($"SELECT traceparent FROM {schema}.deliveries"));
    }

    private static Activity StartW3CActivity(string? traceState)
    {
        var activity = new Activity("producer").SetIdFormat(ActivityIdFormat.W3C);
        activity.TraceStateString = traceState;
        return activity.Start();
    }

    private async Task<string?[]> TraceParentsAsync(string schema)
    {
        var values = new List<string?>();
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand($"SELECT traceparent FROM {schema}.items ORDER BY (payload->>'Number')::int", connection);
        await using var reader = await command.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            values.Add(reader.IsDBNull(0) ? null : reader.GetString(0));
        }

        return [.. values];
    }
}
