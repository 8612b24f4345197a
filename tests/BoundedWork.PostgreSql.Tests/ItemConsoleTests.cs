using System.Collections.Concurrent;
using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>The admin console's stored-item endpoints on real Kestrel over the real table: search, dry run, apply, audit, and bad input.</summary>
[Collection(PostgresCollection.Name)]
public sealed class ItemConsoleTests(PostgresFixture postgres)
{
    private const string Prefix = "/bounded-work/queues/notices/items";

    [Fact]
    public async Task SearchPreviewApply_ThroughTheConsole_AreAudited()
    {
        var schema = await postgres.NewSchemaAsync();
        var audit = new AuditLog();
        await using var app = await StartAsync(schema, audit);
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, state, run_at, ordering_key)
            SELECT 'notices', jsonb_build_object('Number', i, 'Customer', jsonb_build_object('Id', 'c' || (i % 2))), 5, now() + interval '1 hour', 'k' || (i % 3)
            FROM generate_series(1, 30) AS i;
            """);

        var first = await client.GetFromJsonAsync<JsonElement>(Prefix + "?state=scheduled&path=Customer.Id&equals=c1&limit=10");
        Assert.Equal("scheduled", first.GetProperty("state").GetString());
        Assert.Equal(10, first.GetProperty("items").GetArrayLength());
        Assert.Equal("scheduled", first.GetProperty("items")[0].GetProperty("state").GetString());
        var cursor = first.GetProperty("nextCursor").GetString()!;
        var second = await client.GetFromJsonAsync<JsonElement>($"{Prefix}?state=scheduled&path=Customer.Id&equals=c1&limit=10&cursor={Uri.EscapeDataString(cursor)}");
        Assert.Equal(5, second.GetProperty("items").GetArrayLength());
        Assert.Equal(JsonValueKind.Null, second.GetProperty("nextCursor").ValueKind);

        const string Action = """{"action": "set-priority", "priority": 9, "state": "scheduled", "path": "Customer.Id", "equals": "c1"}""";
        var preview = await (await SendAsync(client, Prefix + "/preview", Action)).Content.ReadFromJsonAsync<JsonElement>();
        Assert.Equal(15, preview.GetProperty("count").GetInt32());
        Assert.False(preview.GetProperty("wholeState").GetBoolean());
        var token = preview.GetProperty("confirmToken").GetString()!;
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE priority = 9"));

        var applied = await SendAsync(client, Prefix + "/apply", Action[..^1] + $$""", "confirmToken": "{{token}}"}""");
        Assert.Equal(HttpStatusCode.OK, applied.StatusCode);
        var result = await applied.Content.ReadFromJsonAsync<JsonElement>();
        Assert.Equal(15, result.GetProperty("applied").GetInt32());
        Assert.Equal("set-priority", result.GetProperty("action").GetString());
        Assert.Equal(15L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE priority = 9 AND payload->'Customer'->>'Id' = 'c1'"));
        Assert.Contains(audit.Events, e => e.Id == 243 && e.Message.Contains("would touch 15 items", StringComparison.Ordinal));
        Assert.Contains(audit.Events, e => e.Id == 240 && e.Message.Contains("15 items of work queue 'notices' changed by", StringComparison.Ordinal)
            && e.Message.Contains("set-priority of state=scheduled path=Customer.Id equals=c1", StringComparison.Ordinal));

        // Every item of the state: the dry run says so, and the token caps the action at its count.
        var whole = await (await SendAsync(client, Prefix + "/preview", """{"action": "cancel", "state": "scheduled"}""")).Content.ReadFromJsonAsync<JsonElement>();
        Assert.True(whole.GetProperty("wholeState").GetBoolean());
        Assert.Equal(30, whole.GetProperty("count").GetInt32());
    }

    [Fact]
    public async Task HostileInput_GetsProblemDetailsNamingTheField_AndChangesNothing()
    {
        var schema = await postgres.NewSchemaAsync();
        var audit = new AuditLog();
        await using var app = await StartAsync(schema, audit);
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };
        await postgres.ExecuteAsync($"INSERT INTO {schema}.items (queue, payload, state, run_at) SELECT 'notices', jsonb_build_object('Number', i), 0, now() FROM generate_series(1, 20) i");
        var before = await postgres.ScalarAsync<string>($"SELECT md5(string_agg(i::text, '|' ORDER BY id)) FROM {schema}.items i");

        await AssertProblemAsync(await client.GetAsync("/bounded-work/queues/nope/items?state=ready"), HttpStatusCode.NotFound, "No durable work queue named 'nope'");
        await AssertProblemAsync(await client.GetAsync(Prefix), HttpStatusCode.BadRequest, "required", "state");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=lost"), HttpStatusCode.BadRequest, "Unknown state 'lost'", "state");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&state=running"), HttpStatusCode.BadRequest, "Give it once", "state");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&limit=100000000000"), HttpStatusCode.BadRequest, "between 1 and 500", "limit");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&limit=-1"), HttpStatusCode.BadRequest, "between 1 and 500", "limit");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&path=$.a[0]&equals=1"), HttpStatusCode.BadRequest, "is not a path", "path");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&path=a..b&equals=1"), HttpStatusCode.BadRequest, "is not a path", "path");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&path=a"), HttpStatusCode.BadRequest, "go together", "equals");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&enqueuedSince=-5"), HttpStatusCode.BadRequest, "ISO 8601", "enqueuedSince");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&changedSince=2026-01-02T00:00:00Z&changedUntil=2026-01-01T00:00:00Z"), HttpStatusCode.BadRequest, "before the window's end", "changedSince");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=running&changedSince=2026-01-02T00:00:00Z"), HttpStatusCode.BadRequest, "do not apply to running", "changedSince");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&key=a%0D%0Ab"), HttpStatusCode.BadRequest, "control characters", "key");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&cursor=3.0.1.1"), HttpStatusCode.BadRequest, "is not a cursor", "cursor");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?state=ready&colour=red"), HttpStatusCode.BadRequest, "Unknown query parameter", "colour");

        const string Preview = Prefix + "/preview";
        const string Apply = Prefix + "/apply";
        await AssertProblemAsync(await SendAsync(client, Preview, null), HttpStatusCode.BadRequest, "request body is missing");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "cancel"}"""), HttpStatusCode.BadRequest, "required", "state");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "explode", "state": "ready"}"""), HttpStatusCode.BadRequest, "Unknown action", "action");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "cancel", "state": ["ready", "scheduled"]}"""), HttpStatusCode.BadRequest, "must be a string, not an array", "state");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "delete", "state": "ready"}"""), HttpStatusCode.BadRequest, "Delete takes items that are", "state");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "set-priority", "state": "ready", "priority": 1e9}"""), HttpStatusCode.BadRequest, "whole number", "priority");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "set-priority", "state": "ready", "priority": 500}"""), HttpStatusCode.BadRequest, "between -100 and 100", "priority");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "set-run-at", "state": "ready", "runAt": "1969-12-31T00:00:00Z"}"""), HttpStatusCode.BadRequest, "at or after", "runAt");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "set-run-at", "state": "ready", "runAt": "-3"}"""), HttpStatusCode.BadRequest, "ISO 8601", "runAt");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "cancel", "state": "ready", "path": "a b", "equals": "x"}"""), HttpStatusCode.BadRequest, "is not a path", "path");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "cancel", "state": "ready", "key": "a\r\nb"}"""), HttpStatusCode.BadRequest, "control characters", "key");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "cancel", "state": "ready", "error": "\ud800"}"""), HttpStatusCode.BadRequest, "not valid UTF-8", "error");
        await AssertProblemAsync(await SendAsync(client, Preview, """{"action": "cancel", "state": "ready", "confirmToken": "1.x"}"""), HttpStatusCode.BadRequest, "Unknown field", "confirmToken");
        await AssertProblemAsync(await SendBytesAsync(client, Preview, [.. """{"action": "cancel", "state": "ready", "key": "a"""u8, 0xC3, 0x28, .. "\"}"u8]), HttpStatusCode.BadRequest, "not valid UTF-8", "key");
        await AssertProblemAsync(await SendAsync(client, Preview, "[1]"), HttpStatusCode.BadRequest, "must be a JSON object");
        await AssertProblemAsync(await SendAsync(client, Apply, """{"action": "cancel", "state": "ready"}"""), HttpStatusCode.BadRequest, "confirmToken of the dry run", "confirmToken");
        await AssertProblemAsync(await SendAsync(client, Apply, """{"action": "cancel", "state": "ready", "confirmToken": "20.0123456789ab"}"""), HttpStatusCode.BadRequest, "not that of a dry run", "confirmToken");
        var token = (await (await SendAsync(client, Preview, """{"action": "cancel", "state": "ready", "key": "k1"}""")).Content.ReadFromJsonAsync<JsonElement>()).GetProperty("confirmToken").GetString();
        await AssertProblemAsync(await SendAsync(client, Apply, $$"""{"action": "cancel", "state": "ready", "confirmToken": "{{token}}"}"""), HttpStatusCode.BadRequest, "not that of a dry run", "confirmToken");
        await AssertProblemAsync(await SendAsync(client, Preview, "{\"action\": \"cancel\", \"state\": \"ready\", \"error\": \"" + new string('x', 20_000) + "\"}"), HttpStatusCode.RequestEntityTooLarge, "larger than");

        Assert.Equal(before, await postgres.ScalarAsync<string>($"SELECT md5(string_agg(i::text, '|' ORDER BY id)) FROM {schema}.items i"));
        Assert.DoesNotContain(audit.Events, e => e.Id == 240);
        Assert.Contains(audit.Events, e => e.Id == 241);
    }

    private static Task<HttpResponseMessage> SendAsync(HttpClient client, string path, string? json) =>
        SendBytesAsync(client, path, json is null ? [] : Encoding.UTF8.GetBytes(json));

    private static async Task<HttpResponseMessage> SendBytesAsync(HttpClient client, string path, byte[] body)
    {
        using var request = new HttpRequestMessage(HttpMethod.Post, path) { Content = new ByteArrayContent(body) };
        request.Content.Headers.ContentType = new("application/json");
        request.Headers.Add("X-BoundedWork-Admin", "1");
        return await client.SendAsync(request);
    }

    private static async Task AssertProblemAsync(HttpResponseMessage response, HttpStatusCode status, string detail, string? field = null)
    {
        var body = await response.Content.ReadAsStringAsync();
        Assert.True(response.StatusCode == status, $"{response.StatusCode}, expected {status}: {body}");
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        var problem = JsonDocument.Parse(body).RootElement;
        Assert.Contains(detail, problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        if (field is not null)
        {
            Assert.True(problem.GetProperty("errors").TryGetProperty(field, out _), body);
        }
    }

    private Task<WebApplication> StartAsync(string schema, AuditLog audit) =>
        ConsoleApp.StartAsync(postgres, schema, audit, signedInAs: null);

    /// <summary>The console's audit events, as logged.</summary>
    private sealed class AuditLog : ILoggerProvider, ILogger
    {
        public ConcurrentQueue<(int Id, string Message)> Events { get; } = new();

        public ILogger CreateLogger(string categoryName) => this;

        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
            Events.Enqueue((eventId.Id, formatter(state, exception)));

        public void Dispose()
        {
        }
    }
}
