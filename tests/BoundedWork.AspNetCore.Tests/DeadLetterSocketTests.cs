using System.Globalization;
using System.Net.Http.Headers;
using System.Text;
using BoundedWork.AspNetCore.Internal;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The dead-letter routes on the local socket: the same handlers as over HTTP (same answers, same size cap, same audit,
/// with the socket's peer as the caller), and an answer at the request's deadline when the storage does not answer.
/// The PostgreSQL and bw tests run them over the real table.
/// </summary>
public sealed class DeadLetterSocketTests
{
    private const string Queue = "/queues/payments/dead-letters";

    public static TheoryData<string, string, string?, string?, bool> Requests() => new()
    {
        { "GET", Queue, null, null, false },
        { "GET", Queue + "?limit=2&since=2026-11-23T10%3A00%3A00Z&until=2026-11-24T10:00:00Z", null, null, false },
        { "GET", Queue + "?limit=0&colour=red", null, null, false },
        { "GET", Queue + "?since=yesterday&limit=1&limit=2", null, null, false },
        { "GET", Queue + "?cursor=", null, null, false },
        { "GET", "/queues/nope/dead-letters", null, null, false },
        { "GET", "/queues/x%20y/dead-letters/1", null, null, false },
        { "GET", Queue + "/abc", null, null, false },
        { "GET", Queue + "/12", null, null, false },
        { "POST", Queue + "/7/requeue", "{}", "application/json", true },
        { "POST", Queue + "/7/requeue", """{"x": 1}""", "application/json", true },
        { "POST", Queue + "/0/requeue", "{}", "application/json", true },
        { "DELETE", Queue + "/7", "", "application/json", true },
        { "DELETE", Queue + "/7", "", "application/json", false },
        { "POST", Queue + "/requeue", """{"ids": [1, 2, 3]}""", "application/json", true },
        { "POST", Queue + "/requeue", """{"ids": [1], "all": true}""", "application/json", true },
        { "POST", Queue + "/purge", """{"all": true, "since": "2026-11-23T10:00:00Z"}""", "application/json", true },
        { "POST", Queue + "/purge", """{"all": false}""", "application/json", true },
        { "POST", Queue + "/purge", "all=true", "application/x-www-form-urlencoded", true },
        { "POST", Queue + "/purge", "", "application/json", true },
        { "POST", "/queues/nope/dead-letters/purge", """{"all": true}""", "application/json", true },
    };

    [Theory]
    [MemberData(nameof(Requests))]
    public async Task LocalSocket_DeadLetterRoute_AnswersAsKestrelDoes(string method, string target, string? body, string? contentType, bool header)
    {
        var path = SocketPath();
        var store = new FakeDeadLetterStore { Affected = 3 };
        await using var server = await StartAsync(store, path);

        using var request = new HttpRequestMessage(new HttpMethod(method), "/bounded-work" + target);
        if (body is not null)
        {
            request.Content = new ByteArrayContent(Encoding.UTF8.GetBytes(body));
            request.Content.Headers.ContentType = MediaTypeHeaderValue.Parse(contentType!);
        }

        if (header)
        {
            request.Headers.Add(TestKit.AdminHeader, "1");
        }

        using var overHttp = await server.Client.SendAsync(request);
        var http = await overHttp.Content.ReadAsStringAsync();
        var socket = LocalSocketClient.Send(path, method, target, body, contentType, header);

        Assert.Equal((int)overHttp.StatusCode, socket.Status);
        Assert.Equal(overHttp.Content.Headers.ContentType?.ToString(), socket.ContentType);
        Assert.Equal(http, socket.Body);
        Assert.Equal(0, store.Requeued.Count % 2); // each transport asked the store alike: both or neither
        Assert.Equal(0, store.Purged.Count % 2);
    }

    [Fact]
    public async Task LocalSocket_DeadLetterRoute_WrongMethod_405ListingTheSocketsMethods()
    {
        var path = SocketPath();
        await using var server = await StartAsync(new FakeDeadLetterStore(), path);

        var put = LocalSocketClient.Send(path, "PUT", Queue + "/1", "{}");
        var getPurge = LocalSocketClient.Send(path, "GET", Queue + "/purge");
        var postList = LocalSocketClient.Send(path, "POST", Queue, "{}");

        Assert.Equal((405, "PUT is not allowed on /queues/payments/dead-letters/1; allowed: GET, DELETE."), (put.Status, put.Json.GetProperty("detail").GetString()));
        Assert.Equal((405, "GET is not allowed on /queues/payments/dead-letters/purge; allowed: POST."), (getPurge.Status, getPurge.Json.GetProperty("detail").GetString()));
        Assert.Equal(405, postList.Status);
        Assert.Equal(404, LocalSocketClient.Send(path, "GET", Queue + "/1/requeue/more").Status);
    }

    [Fact]
    public async Task LocalSocket_DeadLetterChanges_AreAuditedWithTheSocketPeer()
    {
        var path = SocketPath();
        var store = new FakeDeadLetterStore { Affected = 2 };
        await using var server = await StartAsync(store, path);

        var purged = LocalSocketClient.Send(path, "POST", Queue + "/purge", """{"all": true}""");
        var refused = LocalSocketClient.Send(path, "POST", Queue + "/requeue", """{"ids": "all"}""");

        Assert.Equal(200, purged.Status);
        Assert.Equal(2, purged.Json.GetProperty("count").GetInt32());
        var entry = Assert.Single(server.Logs.WithEvent("DeadLettersPurged"));
        Assert.Equal(LogLevel.Warning, entry.Level);
        Assert.Equal($"local socket peer (uid {UserId()}, pid {Environment.ProcessId})", entry.GetStructuredStateValue("User"));
        Assert.Equal("unix:" + path, entry.GetStructuredStateValue("RemoteAddress"));
        Assert.Equal("all", entry.GetStructuredStateValue("Selection"));
        Assert.Equal("2", entry.GetStructuredStateValue("Count"));
        Assert.Equal(400, refused.Status);
        Assert.True(refused.Json.GetProperty("errors").TryGetProperty("ids", out _), refused.Body);
        var refusal = Assert.Single(server.Logs.WithEvent("DeadLetterChangeRefused"));
        Assert.Equal("requeue", refusal.GetStructuredStateValue("Operation"));
        Assert.StartsWith("local socket peer (uid ", refusal.GetStructuredStateValue("User"), StringComparison.Ordinal);
    }

    /// <summary>A selection of 1,000 long ids is larger than a settings body may be, and within a selection's cap.</summary>
    [Fact]
    public async Task LocalSocket_DeadLetterSelection_TakesTheSelectionsSizeCap_NotTheSettingsOne()
    {
        var path = SocketPath();
        var store = new FakeDeadLetterStore { Affected = 1000 };
        await using var server = await StartAsync(store, path);
        var ids = Enumerable.Range(1, 1000).Select(i => 1_000_000_000_000_000_000L + i).ToList();
        var selection = $$"""{"ids": [{{string.Join(", ", ids.Select(i => i.ToString(CultureInfo.InvariantCulture)))}}]}""";
        var tooLarge = $$"""{"all": true, "pad": "{{new string('x', DeadLetterRequest.MaxBodyBytes)}}"}""";

        var accepted = LocalSocketClient.Send(path, "POST", Queue + "/requeue", selection);
        var refused = LocalSocketClient.Send(path, "POST", Queue + "/purge", tooLarge);

        Assert.True(Encoding.UTF8.GetByteCount(selection) > SettingsRequest.MaxBodyBytes);
        Assert.Equal(200, accepted.Status);
        Assert.Equal(ids, Assert.Single(store.Requeued).ItemIds);
        Assert.Equal(413, refused.Status);
        Assert.Contains($"larger than {DeadLetterRequest.MaxBodyBytes} bytes", refused.Json.GetProperty("errors").GetProperty("body")[0].GetString(), StringComparison.Ordinal);
        Assert.Empty(store.Purged);
    }

    [Fact]
    public async Task LocalSocket_StorageDoesNotAnswer_503AtTheDeadline_TheOperationIsCancelled_AndTheSocketServesOn()
    {
        var path = SocketPath();
        var store = new FakeDeadLetterStore { Hold = new TaskCompletionSource<int>(TaskCreationOptions.RunContinuationsAsynchronously) };
        await using var server = await StartAsync(store, path, new LocalSocketLimits(4, TimeSpan.FromSeconds(5)));

        var held = LocalSocketClient.Send(path, "POST", Queue + "/requeue", """{"ids": [5]}""");

        Assert.Equal(503, held.Status);
        Assert.Equal("payments", held.Json.GetProperty("queue").GetString());
        Assert.Contains("did not answer within the local socket's request deadline", held.Json.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.True(await store.HeldCallCancelled.Task.WaitAsync(TestKit.Safety));
        Assert.Empty(server.Logs.WithEvent("DeadLettersRequeued"));
        Assert.NotEmpty(server.Logs.WithEvent("LocalSocketFailed"));
        Assert.Equal(200, LocalSocketClient.Send(path, "GET", Queue).Status);
    }

    private static Task<AdminServer> StartAsync(FakeDeadLetterStore store, string path, LocalSocketLimits? limits = null) =>
        AdminServer.StartAsync(configure: builder =>
        {
            builder.Services.AddSingleton<IDeadLetterStore>(store);
            builder.Services.AddBoundedWorkAdmin(o =>
            {
                o.LocalSocketPath = path;
                o.LocalSocketLimits = limits ?? LocalSocketLimits.Default;
            });
        });

    private static string UserId() => File.ReadLines("/proc/self/status").First(l => l.StartsWith("Uid:", StringComparison.Ordinal)).Split('\t', StringSplitOptions.RemoveEmptyEntries)[1];

    private static string SocketPath() => Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
}
