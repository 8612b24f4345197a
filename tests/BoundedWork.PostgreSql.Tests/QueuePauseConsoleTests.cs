using System.Net;
using System.Text;
using System.Text.Json;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The console's fleet-wide pause routes over a real PostgreSQL queue on real Kestrel: what a careless or hostile
/// client sends is refused naming the field, and nothing is stored; a pause and a resume are stored, shown in the
/// cluster document and audited.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class QueuePauseConsoleTests(PostgresFixture postgres)
{
    private const string Pause = "/bounded-work/queues/notices/pause";
    private const string Resume = "/bounded-work/queues/notices/resume";

    public static TheoryData<string, string, string> BadPauses() => new()
    {
        { Pause, "{", "body" },
        { Pause, "[]", "body" },
        { Pause, "", "body" },
        { Pause, """{"for": "00:10:00"}""", "reason" },
        { Pause, """{"reason": "outage\r\nforged log line"}""", "reason" },
        { Pause, """{"reason": ""}""", "reason" },
        { Pause, """{"reason": 42}""", "reason" },
        { Pause, $$"""{"reason": "{{new string('x', 201)}}"}""", "reason" },
        { Pause, """{"reason": "outage", "for": "-00:00:01"}""", "for" },
        { Pause, """{"reason": "outage", "for": "00:00:00"}""", "for" },
        { Pause, """{"reason": "outage", "for": "31.00:00:00"}""", "for" },
        { Pause, """{"reason": "outage", "for": "99999999.00:00:00"}""", "for" },
        { Pause, """{"reason": "outage", "for": 600}""", "for" },
        { Pause, """{"reason": "outage", "key": ""}""", "key" },
        { Pause, """{"reason": "outage", "key": "a\u0000b"}""", "key" },
        { Pause, """{"reason": "outage", "key": ["a"]}""", "key" },
        { Pause, """{"reason": "outage", "until": "tomorrow"}""", "until" },
        { Resume, """{"key": 7}""", "key" },
        { Resume, """{"reason": "x"}""", "reason" },
        { Resume, "{", "body" },
    };

    [Theory]
    [MemberData(nameof(BadPauses))]
    public async Task PauseAndResume_BadBody_400NamingTheField_NothingStored(string path, string body, string field)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var app = await StartAsync(schema, new FakeLogCollector());
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };

        using var response = await PostAsync(client, path, body);
        var text = await response.Content.ReadAsStringAsync();
        Assert.True(response.StatusCode == HttpStatusCode.BadRequest, $"{response.StatusCode}: {text}");
        var errors = JsonDocument.Parse(text).RootElement.GetProperty("errors");
        Assert.True(errors.TryGetProperty(field, out _), $"the errors do not name {field}: {text}");
        Assert.DoesNotContain("\r\n", text, StringComparison.Ordinal);
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.queue_settings"));
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.paused_keys"));
    }

    [Fact]
    public async Task Pause_UnknownQueue_404NamingIt_NothingStored()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var app = await StartAsync(schema, new FakeLogCollector());
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };

        using var response = await PostAsync(client, "/bounded-work/queues/nope/pause", """{"reason": "outage"}""");
        var text = await response.Content.ReadAsStringAsync();
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        Assert.Contains("'nope'", text, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.NotFound, (await client.GetAsync("/bounded-work/queues/nope/pause")).StatusCode);
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.queue_settings"));
    }

    [Fact]
    public async Task PauseKeyAndQueue_ThenResume_StoredShownInTheClusterDocument_AndAudited()
    {
        var schema = await postgres.NewSchemaAsync();
        var logs = new FakeLogCollector();
        await using var app = await StartAsync(schema, logs);
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };

        var paused = await OkAsync(client, Pause, """{"reason": "provider outage", "for": "00:10:00"}""");
        Assert.True(paused.GetProperty("changed").GetBoolean());
        Assert.Equal("provider outage", paused.GetProperty("pause").GetProperty("reason").GetString());
        Assert.Equal("alice", paused.GetProperty("pause").GetProperty("by").GetString());
        var since = paused.GetProperty("pause").GetProperty("since").GetDateTimeOffset();
        Assert.Equal(TimeSpan.FromMinutes(10), paused.GetProperty("pause").GetProperty("until").GetDateTimeOffset() - since);
        var key = await OkAsync(client, Pause, """{"reason": "customer 42 under review", "key": "customer-42"}""");
        Assert.Equal("customer-42", key.GetProperty("pause").GetProperty("key").GetString());
        Assert.Equal(JsonValueKind.Null, key.GetProperty("pause").GetProperty("until").ValueKind);

        var cluster = JsonDocument.Parse(await client.GetStringAsync("/bounded-work/queues/notices/cluster")).RootElement;
        var pauses = cluster.GetProperty("pauses");
        Assert.Equal("provider outage", pauses.GetProperty("queue").GetProperty("reason").GetString());
        Assert.Equal("customer-42", Assert.Single(pauses.GetProperty("keys").EnumerateArray()).GetProperty("key").GetString());
        Assert.Equal(1, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.paused_keys"));

        var resumedKey = await OkAsync(client, Resume, """{"key": "customer-42"}""");
        Assert.True(resumedKey.GetProperty("changed").GetBoolean());
        Assert.Empty(resumedKey.GetProperty("pauses").GetProperty("keys").EnumerateArray());
        var resumed = await OkAsync(client, Resume, "{}");
        Assert.True(resumed.GetProperty("changed").GetBoolean());
        Assert.Equal(JsonValueKind.Null, resumed.GetProperty("pauses").GetProperty("queue").ValueKind);
        var again = await OkAsync(client, Resume, "");
        Assert.False(again.GetProperty("changed").GetBoolean());

        var audit = logs.GetSnapshot();
        Assert.Equal(2, audit.Count(e => e.Id.Id == 225));
        Assert.Equal(2, audit.Count(e => e.Id.Id == 226));
        Assert.All(audit.Where(e => e.Id.Id is 225 or 226), e => Assert.Equal("alice", e.GetStructuredStateValue("User")));
    }

    private static async Task<HttpResponseMessage> PostAsync(HttpClient client, string path, string body)
    {
        using var request = new HttpRequestMessage(HttpMethod.Post, path) { Content = new StringContent(body, Encoding.UTF8, "application/json") };
        request.Headers.Add("X-BoundedWork-Admin", "1");
        return await client.SendAsync(request);
    }

    private static async Task<JsonElement> OkAsync(HttpClient client, string path, string body)
    {
        using var response = await PostAsync(client, path, body);
        var text = await response.Content.ReadAsStringAsync();
        Assert.True(response.StatusCode == HttpStatusCode.OK, $"{response.StatusCode}: {text}");
        return JsonDocument.Parse(text).RootElement.Clone();
    }

    /// <summary>The operator's app: the queue (consuming nothing itself) and the console, its caller signed in as alice.</summary>
    private Task<WebApplication> StartAsync(string schema, FakeLogCollector logs) =>
        ConsoleApp.StartAsync(postgres, schema, new FakeLoggerProvider(logs));
}
