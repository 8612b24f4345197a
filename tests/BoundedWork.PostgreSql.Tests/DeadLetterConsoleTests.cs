using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>The admin console's dead-letter endpoints on real Kestrel over the real table.</summary>
[Collection(PostgresCollection.Name)]
public sealed class DeadLetterConsoleTests(PostgresFixture postgres)
{
    private const string Prefix = "/bounded-work/queues/notices/dead-letters";

    [Fact]
    public async Task ListShowRequeuePurge_ThroughTheConsole_TheRequeuedItemIsHandled()
    {
        var schema = await postgres.NewSchemaAsync();
        var fail = true;
        var behavior = new Behavior { Handle = (item, _) => { if (Volatile.Read(ref fail)) { throw new InvalidOperationException("refused " + item.Number); } } };
        await using var app = await StartAsync(schema, behavior);
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };
        var queue = app.Services.GetRequiredService<IPostgreSqlWorkQueue<Notice>>();
        var ids = new List<long>();
        for (var i = 0; i < 4; i++)
        {
            ids.Add(await queue.EnqueueWithIdAsync(new Notice(i)));
        }

        await behavior.WaitUntilAsync(() => behavior.DeadLetters.Count == 4, "four dead letters");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3").Result == 4, "recorded");

        // List, two to a page.
        var first = await client.GetFromJsonAsync<JsonElement>(Prefix + "?limit=2");
        Assert.Equal("notices", first.GetProperty("queue").GetString());
        Assert.Equal(2, first.GetProperty("items").GetArrayLength());
        var item = first.GetProperty("items")[0];
        Assert.StartsWith("Failed: System.InvalidOperationException: refused", item.GetProperty("lastError").GetString(), StringComparison.Ordinal);
        Assert.Equal(1, item.GetProperty("attempts").GetInt32());
        Assert.False(item.TryGetProperty("payload", out _));
        var cursor = first.GetProperty("nextCursor").GetString()!;
        var second = await client.GetFromJsonAsync<JsonElement>($"{Prefix}?limit=2&cursor={Uri.EscapeDataString(cursor)}");
        Assert.Equal(JsonValueKind.Null, second.GetProperty("nextCursor").ValueKind);
        var listed = first.GetProperty("items").EnumerateArray().Concat(second.GetProperty("items").EnumerateArray()).Select(e => e.GetProperty("id").GetInt64());
        Assert.Equal(ids.Order(), listed.Order());

        // Show one, with its payload as JSON.
        var shown = await client.GetFromJsonAsync<JsonElement>($"{Prefix}/{ids[0]}");
        Assert.Equal(0, shown.GetProperty("payload").GetProperty("Number").GetInt32());
        Assert.False(shown.GetProperty("payloadTruncated").GetBoolean());
        Assert.Equal("notices", shown.GetProperty("queue").GetString());

        // Requeue one: it is handled.
        Volatile.Write(ref fail, false);
        var requeued = await SendAsync(client, HttpMethod.Post, $"{Prefix}/{ids[0]}/requeue", null);
        Assert.Equal(HttpStatusCode.OK, requeued.StatusCode);
        var answer = await requeued.Content.ReadFromJsonAsync<JsonElement>();
        Assert.Equal(1, answer.GetProperty("count").GetInt32());
        Assert.Equal("requeue", answer.GetProperty("operation").GetString());
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Any(d => d.Id == ids[0]), "the requeued item is handled");

        // Purge one by its path, requeue a selection, purge the rest.
        Assert.Equal(HttpStatusCode.OK, (await SendAsync(client, HttpMethod.Delete, $"{Prefix}/{ids[1]}", null)).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await client.GetAsync($"{Prefix}/{ids[1]}")).StatusCode);
        var selection = await SendAsync(client, HttpMethod.Post, Prefix + "/requeue", $$"""{"ids": [{{ids[2]}}, {{ids[1]}}]}""");
        Assert.Equal(1, (await selection.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("count").GetInt32());
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Any(d => d.Id == ids[2]), "the requeued selection is handled");
        var purged = await SendAsync(client, HttpMethod.Post, Prefix + "/purge", """{"all": true}""");
        Assert.Equal(1, (await purged.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("count").GetInt32());

        Assert.Equal(0, (await client.GetFromJsonAsync<JsonElement>(Prefix)).GetProperty("items").GetArrayLength());
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 2").Result == 2, "the two requeued items completed");
        Assert.Equal(2L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
    }

    [Fact]
    public async Task BadRequests_GetProblemDetails_NamingWhatIsWrong()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var app = await StartAsync(schema, new Behavior());
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };

        await AssertProblemAsync(await client.GetAsync("/bounded-work/queues/nope/dead-letters"), HttpStatusCode.NotFound, "No durable work queue named 'nope'");
        await AssertProblemAsync(await client.GetAsync(Prefix + "/abc"), HttpStatusCode.BadRequest, "positive whole number", field: "id");
        await AssertProblemAsync(await client.GetAsync(Prefix + "/12345"), HttpStatusCode.NotFound, "has no dead letter 12345");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?limit=0&colour=red"), HttpStatusCode.BadRequest, "between 1 and 500", field: "limit");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?since=yesterday"), HttpStatusCode.BadRequest, "ISO 8601", field: "since");
        await AssertProblemAsync(await client.GetAsync(Prefix + "?cursor=x"), HttpStatusCode.BadRequest, "pass a page's NextCursor unchanged", field: "cursor");

        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/requeue", """{"ids": [1], "all": true}"""), HttpStatusCode.BadRequest, "either ids");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/requeue", """{"ids": []}"""), HttpStatusCode.BadRequest, "1 to 1000", field: "ids");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/purge", """{"all": false}"""), HttpStatusCode.BadRequest, "must be true", field: "all");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/purge", """{"everything": true}"""), HttpStatusCode.BadRequest, "Unknown field", field: "everything");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/purge", "[1, 2]"), HttpStatusCode.BadRequest, "must be a JSON object");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/purge", """{"ids": [1]"""), HttpStatusCode.BadRequest, "not valid JSON");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/purge", null), HttpStatusCode.BadRequest, "request body is missing");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/1/requeue", """{"x": 1}"""), HttpStatusCode.BadRequest, "empty or {}");
        await AssertProblemAsync(await SendAsync(client, HttpMethod.Post, Prefix + "/1/requeue", "{}"), HttpStatusCode.NotFound, "has no dead letter 1");

        using var noHeader = new HttpRequestMessage(HttpMethod.Post, Prefix + "/purge") { Content = new StringContent("""{"all": true}""", Encoding.UTF8, "application/json") };
        await AssertProblemAsync(await client.SendAsync(noHeader), HttpStatusCode.BadRequest, "X-BoundedWork-Admin");
        using var form = new HttpRequestMessage(HttpMethod.Post, Prefix + "/purge") { Content = new StringContent("all=true", Encoding.UTF8, "application/x-www-form-urlencoded") };
        form.Headers.Add("X-BoundedWork-Admin", "1");
        await AssertProblemAsync(await client.SendAsync(form), HttpStatusCode.UnsupportedMediaType, "Send the selection as JSON");

        var wrongMethod = await client.PutAsync(Prefix + "/1", new StringContent("{}", Encoding.UTF8, "application/json"));
        await AssertProblemAsync(wrongMethod, HttpStatusCode.MethodNotAllowed, "PUT is not allowed");
        Assert.Equal(["GET", "HEAD", "DELETE"], wrongMethod.Content.Headers.Allow);
        var getPurge = await client.GetAsync(Prefix + "/purge");
        await AssertProblemAsync(getPurge, HttpStatusCode.MethodNotAllowed, "GET is not allowed");

        using var head = new HttpRequestMessage(HttpMethod.Head, Prefix);
        Assert.Equal(HttpStatusCode.OK, (await client.SendAsync(head)).StatusCode);
    }

    private static async Task<HttpResponseMessage> SendAsync(HttpClient client, HttpMethod method, string path, string? json)
    {
        using var request = new HttpRequestMessage(method, path)
        {
            Content = json is null ? new StringContent(string.Empty, Encoding.UTF8, "application/json") : new StringContent(json, Encoding.UTF8, "application/json"),
        };
        request.Headers.Add("X-BoundedWork-Admin", "1");
        return await client.SendAsync(request);
    }

    private static async Task AssertProblemAsync(HttpResponseMessage response, HttpStatusCode status, string detail, string? field = null)
    {
        var body = await response.Content.ReadAsStringAsync();
        Assert.True(response.StatusCode == status, $"{response.StatusCode}, expected {status}: {body}");
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        var problem = JsonDocument.Parse(body).RootElement;
        Assert.Equal((int)status, problem.GetProperty("status").GetInt32());
        Assert.Contains(detail, problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        if (field is not null)
        {
            Assert.True(problem.GetProperty("errors").TryGetProperty(field, out _), body);
        }
    }

    private Task<WebApplication> StartAsync(string schema, Behavior behavior) =>
        ConsoleApp.StartAsync(postgres, schema, signedInAs: null, behavior: behavior,
            queue: o => o.MaxRetryAttempts = 0,
            storage: o => (o.Consume, o.PollInterval) = (true, TimeSpan.FromMilliseconds(100)),
            services: s => s.AddSingleton<Hosting.IDeadLetterHandler<Notice>, TestDeadLetters>());
}
