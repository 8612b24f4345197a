using System.Text.Json;
using System.Text.Json.Serialization;
using System.Text.Json.Serialization.Metadata;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// A payload the item type's deserialization refuses, whatever it throws (a user's converter, a validating
/// constructor), is a dead letter of reason Malformed; the worker, the node and the reaper go on.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class MalformedPayloadTests(PostgresFixture postgres)
{
    [Fact]
    public async Task ConverterThrowingAnyException_DeadLettersTheItem_AndTheNodeGoesOnPastItsClaimLimit()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        // Two workers, one claim each: a claim limit of 2, and six bad items, more than the limit.
        await using var node = await StartAsync(schema, behavior, storage: o => o.ClaimsPerWorker = 1);
        for (var i = 0; i < 6; i++)
        {
            await node.EnqueueAsync(new Notice(i % 2 == 0 ? PickyNoticeConverter.FormatError : PickyNoticeConverter.CustomError));
        }

        for (var i = 1; i <= 10; i++)
        {
            await node.EnqueueAsync(new Notice(i));
        }

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 10 && behavior.DeadLetters.Count == 6, "every good item ran and every bad one is a dead letter");
        Assert.Equal(Enumerable.Range(1, 10), behavior.Deliveries.Select(d => d.Item.Number).Order());
        Assert.All(behavior.DeadLetters, letter =>
        {
            Assert.Equal(DeadLetterReason.Malformed, letter.Reason);
            Assert.Null(letter.Item);
        });
        Assert.Equal(3, behavior.DeadLetters.Count(l => l.Exception is FormatException));
        Assert.Equal(3, behavior.DeadLetters.Count(l => l.Exception is PickyNoticeException));
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3 AND last_error LIKE 'Malformed: System.FormatException: %'").Result == 3
                && postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3 AND last_error LIKE 'Malformed: {typeof(PickyNoticeException).FullName}: %'").Result == 3,
            "the six bad rows are dead letters in the table, with the deserializer's error");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (0, 1)").Result == 0, "nothing is left running or ready");
    }

    [Fact]
    public async Task ReapedLeaseOfAnItemTheConverterRefuses_IsDeliveredAsADeadLetter_AndTheNodeGoesOn()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await StartAsync(schema, behavior, queue: o => o.MaxRetryAttempts = 0);

        // A node that died while it ran the item's only delivery: its lease has expired.
        await node.EnqueueAsync(new Notice(0));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the first item ran");
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, state, attempts, lease_owner, lease_until)
            VALUES ('notices', '{"Number": {{PickyNoticeConverter.FormatError}}}', 1, 1, 'gone', now() - interval '1 second')
            """);
        var bad = await postgres.ScalarAsync<long>($"SELECT max(id) FROM {schema}.items");

        await behavior.WaitUntilAsync(() => !behavior.DeadLetters.IsEmpty, "the reaped item is a dead letter");
        var letter = Assert.Single(behavior.DeadLetters);
        Assert.Equal(bad, letter.ItemId);
        Assert.Equal(DeadLetterReason.LeaseExpired, letter.Reason);
        Assert.Null(letter.Item);
        Assert.IsType<FormatException>(letter.Exception?.InnerException);

        await node.EnqueueAsync(new Notice(1));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "the node goes on");
        Assert.Equal(3, await postgres.ScalarAsync<short>($"SELECT state FROM {schema}.items WHERE id = {bad}"));
    }

    private async Task<Node> StartAsync(string schema, Behavior behavior, Action<WorkQueueOptions<Notice>>? queue = null, Action<PostgreSqlWorkQueueOptions<Notice>>? storage = null)
    {
        var json = new JsonSerializerOptions { TypeInfoResolver = NoticeJson.Default, Converters = { new PickyNoticeConverter() } };
        var builder = Host.CreateApplicationBuilder();
        builder.Logging.ClearProviders();
        builder.Services.AddSingleton(behavior);
        builder.Services.AddSingleton(new QueueNode.NodeName("a"));
        builder.Services.AddSingleton<IDeadLetterHandler<Notice>, TestDeadLetters>();
        builder.Services
            .AddWorkQueue<Notice, TestHandler>("notices", o =>
            {
                o.RetryDelay = TimeSpan.FromMilliseconds(20);
                o.MaxRetryDelay = TimeSpan.FromMilliseconds(100);
                queue?.Invoke(o);
            })
            .UsePostgreSql(postgres.ConnectionString, (JsonTypeInfo<Notice>)json.GetTypeInfo(typeof(Notice)), o =>
            {
                o.Schema = schema;
                o.LeaseDuration = TimeSpan.FromSeconds(2);
                o.PollInterval = TimeSpan.FromMilliseconds(100);
                o.MaxReconnectDelay = TimeSpan.FromMilliseconds(500);
                storage?.Invoke(o);
            })
            .Configure(o => o.WorkerCount = 2);
        var host = builder.Build();
        await host.StartAsync();
        return new Node(host);
    }

    private sealed class Node(IHost host) : IAsyncDisposable
    {
        private readonly IPostgreSqlWorkQueue<Notice> _queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<Notice>>();

        public Task<long> EnqueueAsync(Notice notice) => _queue.EnqueueWithIdAsync(notice);

        public async ValueTask DisposeAsync()
        {
            await host.StopAsync();
            host.Dispose();
        }
    }
}

/// <summary>Thrown by <see cref="PickyNoticeConverter"/>: an exception type the serializer knows nothing of.</summary>
public sealed class PickyNoticeException(string message) : Exception(message);

/// <summary>Writes any <see cref="Notice"/>; refuses to read those numbered <see cref="FormatError"/> or <see cref="CustomError"/>, as a user's validating converter would.</summary>
public sealed class PickyNoticeConverter : JsonConverter<Notice>
{
    public const int FormatError = -1;
    public const int CustomError = -2;

    public override Notice Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options)
    {
        using var document = JsonDocument.ParseValue(ref reader);
        var number = document.RootElement.GetProperty("Number").GetInt32();
        return number switch
        {
            FormatError => throw new FormatException($"{number} is not a valid notice number."),
            CustomError => throw new PickyNoticeException($"notice {number} fails validation"),
            _ => new Notice(number, document.RootElement.TryGetProperty("Key", out var key) && key.ValueKind == JsonValueKind.String ? key.GetString() : null),
        };
    }

    public override void Write(Utf8JsonWriter writer, Notice value, JsonSerializerOptions options)
    {
        writer.WriteStartObject();
        writer.WriteNumber("Number", value.Number);
        if (value.Key is { } key)
        {
            writer.WriteString("Key", key);
        }

        writer.WriteEndObject();
    }
}
