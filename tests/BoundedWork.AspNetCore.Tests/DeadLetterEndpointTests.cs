using System.Net;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The console's dead-letter endpoints over a stand-in storage (the PostgreSQL tests run them over the real table):
/// secured like every console endpoint, audited like every change, and honest when the storage fails.
/// </summary>
public sealed class DeadLetterEndpointTests
{
    private const string Prefix = "/bounded-work/queues/payments/dead-letters";

    [Fact]
    public async Task Endpoints_RequireThePolicy_401Anonymous_403WithoutTheRole()
    {
        await using var server = await StartAsync(new FakeDeadLetterStore());
        using var anonymous = server.CreateClient(null, null);
        using var outsider = server.CreateClient("bob", "sales");

        foreach (var client in new[] { anonymous, outsider })
        {
            var expected = client == anonymous ? HttpStatusCode.Unauthorized : HttpStatusCode.Forbidden;
            Assert.Equal(expected, (await client.GetAsync(Prefix)).StatusCode);
            Assert.Equal(expected, (await client.GetAsync(Prefix + "/1")).StatusCode);
            using var requeue = await client.SendChangeAsync(HttpMethod.Post, Prefix + "/1/requeue", "{}");
            Assert.Equal(expected, requeue.StatusCode);
            using var purge = await client.SendChangeAsync(HttpMethod.Post, Prefix + "/purge", """{"all": true}""");
            Assert.Equal(expected, purge.StatusCode);
            using var delete = await client.SendChangeAsync(HttpMethod.Delete, Prefix + "/1", null);
            Assert.Equal(expected, delete.StatusCode);
        }
    }

    [Fact]
    public async Task RequeueAndPurge_AreLoggedWithWhoWhatAndHowMany_AndCounted()
    {
        var store = new FakeDeadLetterStore { Affected = 3 };
        await using var server = await StartAsync(store);
        using var recorder = new AdminMeterRecorder(server.App.Services);

        using var requeued = await server.Client.SendChangeAsync(HttpMethod.Post, Prefix + "/requeue", """{"ids": [7, 8, 9]}""");
        using var purged = await server.Client.SendChangeAsync(HttpMethod.Post, Prefix + "/purge", """{"all": true, "since": "2026-11-23T10:00:00Z"}""");
        using var refused = await server.Client.SendChangeAsync(HttpMethod.Post, Prefix + "/purge", """{"all": true, "ids": [1]}""");

        Assert.Equal(HttpStatusCode.OK, requeued.StatusCode);
        Assert.Equal(HttpStatusCode.OK, purged.StatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);
        var requeueEntry = Assert.Single(server.Logs.WithEvent("DeadLettersRequeued"));
        Assert.Equal(206, requeueEntry.Id.Id);
        Assert.Equal(LogLevel.Information, requeueEntry.Level);
        Assert.Equal("alice", requeueEntry.GetStructuredStateValue("User"));
        Assert.Equal("payments", requeueEntry.GetStructuredStateValue("QueueName"));
        Assert.Equal("3 items by id", requeueEntry.GetStructuredStateValue("Selection"));
        Assert.Equal("3", requeueEntry.GetStructuredStateValue("Count"));
        Assert.Equal("127.0.0.1", requeueEntry.GetStructuredStateValue("RemoteAddress"));
        var purgeEntry = Assert.Single(server.Logs.WithEvent("DeadLettersPurged"));
        Assert.Equal(207, purgeEntry.Id.Id);
        Assert.Equal(LogLevel.Warning, purgeEntry.Level);
        Assert.Equal("all since 2026-11-23T10:00:00.0000000+00:00", purgeEntry.GetStructuredStateValue("Selection"));
        var refusal = Assert.Single(server.Logs.WithEvent("DeadLetterChangeRefused"));
        Assert.Equal(208, refusal.Id.Id);
        Assert.Equal("purge", refusal.GetStructuredStateValue("Operation"));
        Assert.Equal("400", refusal.GetStructuredStateValue("StatusCode"));

        Assert.Equal([[7L, 8L, 9L]], store.Requeued.Select(s => s.ItemIds!.ToArray()));
        Assert.Equal(DateTimeOffset.Parse("2026-11-23T10:00:00Z", System.Globalization.CultureInfo.InvariantCulture), Assert.Single(store.Purged).Since);
        Assert.Equal(
            [
                ("boundedwork.admin.dead_letters", 3L, "payments", "requeue"),
                ("boundedwork.admin.dead_letters", 3L, "payments", "purge"),
                ("boundedwork.admin.refused", 1L, "payments", "invalid"),
            ],
            recorder.Measurements);
    }

    [Fact]
    public async Task StorageFailure_Is503_LoggedAsAnError_AndChangesNothing()
    {
        var store = new FakeDeadLetterStore { Failure = new InvalidOperationException("connection refused") };
        await using var server = await StartAsync(store);

        using var list = await server.Client.GetAsync(Prefix);
        using var requeue = await server.Client.SendChangeAsync(HttpMethod.Post, Prefix + "/5/requeue", "{}");

        foreach (var response in new[] { list, requeue })
        {
            Assert.Equal(HttpStatusCode.ServiceUnavailable, response.StatusCode);
            Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
            var problem = JsonDocument.Parse(await response.Content.ReadAsStringAsync()).RootElement;
            Assert.Contains("connection refused", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
            Assert.Equal("payments", problem.GetProperty("queue").GetString());
        }

        Assert.Equal(2, server.Logs.WithEvent("DeadLetterStorageFailed").Count);
        Assert.Empty(server.Logs.WithEvent("DeadLettersRequeued"));
        Assert.Equal("unavailable", Assert.Single(server.Logs.WithEvent("DeadLetterChangeRefused")).GetStructuredStateValue("Reason"));
    }

    [Fact]
    public async Task AnonymousConsole_RefusesDeadLetterChanges_ForAForeignHostOrOrigin_ButShowsThem()
    {
        var store = new FakeDeadLetterStore { Affected = 1 };
        await using var server = await StartAsync(store, anonymous: true);
        using var client = server.CreateClient(null, null);

        using var rebound = new HttpRequestMessage(HttpMethod.Post, Prefix + "/purge") { Content = new StringContent("""{"all": true}""", System.Text.Encoding.UTF8, "application/json") };
        rebound.Headers.Add(TestKit.AdminHeader, "1");
        rebound.Headers.Host = "attacker.example";
        using var foreignHost = await client.SendAsync(rebound);
        using var crossOrigin = new HttpRequestMessage(HttpMethod.Post, Prefix + "/requeue") { Content = new StringContent("""{"ids": [1]}""", System.Text.Encoding.UTF8, "application/json") };
        crossOrigin.Headers.Add(TestKit.AdminHeader, "1");
        crossOrigin.Headers.Add("Origin", "http://localhost:9999");
        using var foreignOrigin = await client.SendAsync(crossOrigin);

        Assert.Equal(HttpStatusCode.Forbidden, foreignHost.StatusCode);
        Assert.Equal(HttpStatusCode.Forbidden, foreignOrigin.StatusCode);
        Assert.Empty(store.Purged);
        Assert.Empty(store.Requeued);
        Assert.Equal(HttpStatusCode.OK, (await client.GetAsync(Prefix)).StatusCode);
    }

    /// <summary>
    /// A requeue that is not JSON (another content type, or none: a bare <c>curl -X POST</c>) is refused with the same
    /// problem document as every other 4xx answer, over HTTP and over the local socket, and changes nothing.
    /// </summary>
    [Theory]
    [InlineData("/5/requeue", "text/plain")]
    [InlineData("/5/requeue", null)]
    [InlineData("/requeue", "text/plain")]
    [InlineData("/requeue", null)]
    public async Task Requeue_NotJson_Is415WithAProblemBody_OverHttpAndTheSocket(string path, string? contentType)
    {
        var socket = Path.Combine(Path.GetTempPath(), $"bw-dl415-{Guid.NewGuid():N}.sock");
        var store = new FakeDeadLetterStore { Affected = 1 };
        await using var server = await AdminServer.StartAsync(configure: builder =>
        {
            builder.Services.AddSingleton<IDeadLetterStore>(store);
            builder.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = socket);
        });

        using var http = await server.Client.SendChangeAsync(HttpMethod.Post, Prefix + path, contentType is null ? null : """{"ids": [5]}""", contentType ?? "application/json");
        var overHttp = await AdminApiTests.AssertProblem(http, HttpStatusCode.UnsupportedMediaType, "application/json");
        Assert.Equal("Unsupported media type", overHttp.GetProperty("title").GetString());

        var overSocket = LocalSocketClient.Send(socket, "POST", "/queues/payments/dead-letters" + path, contentType is null ? null : """{"ids": [5]}""", contentType);
        Assert.Equal(415, overSocket.Status);
        Assert.StartsWith("application/problem+json", overSocket.ContentType, StringComparison.Ordinal);
        Assert.Equal(415, overSocket.Json.GetProperty("status").GetInt32());
        Assert.Contains("application/json", overSocket.Json.GetProperty("detail").GetString(), StringComparison.Ordinal);

        Assert.Empty(store.Requeued);
        Assert.Equal(["unsupported_media_type", "unsupported_media_type"], server.Logs.WithEvent("DeadLetterChangeRefused").Select(e => e.GetStructuredStateValue("Reason")));
    }

    [Fact]
    public async Task ExecutorWithoutADurableQueue_HasNoDeadLetters_404()
    {
        await using var server = await StartAsync(new FakeDeadLetterStore());

        using var response = await server.Client.GetAsync("/bounded-work/queues/mail/dead-letters");

        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        Assert.Contains("in-memory queues hand theirs to their dead-letter handlers", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }

    private static Task<AdminServer> StartAsync(FakeDeadLetterStore store, bool anonymous = false) =>
        AdminServer.StartAsync(anonymous: anonymous, configure: builder => builder.Services.AddSingleton<IDeadLetterStore>(store));
}
