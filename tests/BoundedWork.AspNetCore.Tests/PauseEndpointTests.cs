using System.Net;
using System.Text.Json;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// <c>POST /executors/{name}/pause</c> and <c>/resume</c>: applied, shown in the executor's document, audited as a
/// settings change is, and refused with a problem naming the field for what a hostile or careless client sends.
/// </summary>
public sealed class PauseEndpointTests
{
    private const string Pause = "/bounded-work/executors/payments/pause";
    private const string Resume = "/bounded-work/executors/payments/resume";

    [Fact]
    public async Task PauseThenResume_AppliedShownAndAudited()
    {
        await using var server = await AdminServer.StartAsync();

        using var paused = await server.Client.SendChangeAsync(HttpMethod.Post, Pause, """{"reason": "provider outage", "for": "00:10:00"}""");
        Assert.Equal(HttpStatusCode.OK, paused.StatusCode);
        var answer = await paused.JsonAsync();
        Assert.True(answer.GetProperty("changed").GetBoolean());
        Assert.True(answer.GetProperty("pause").GetProperty("paused").GetBoolean());
        Assert.Equal("provider outage", answer.GetProperty("pause").GetProperty("reason").GetString());
        Assert.NotEqual(JsonValueKind.Null, answer.GetProperty("pause").GetProperty("until").ValueKind);
        Assert.True(server.Payments.IsPaused);

        using var shown = await server.Client.GetAsync("/bounded-work/executors/payments");
        Assert.True((await shown.JsonAsync()).GetProperty("pause").GetProperty("paused").GetBoolean());

        var entry = Assert.Single(server.Logs.WithEvent("ExecutorPaused"));
        Assert.Equal(LogLevel.Information, entry.Level);
        Assert.Equal("alice", entry.GetStructuredStateValue("User"));
        Assert.Equal("payments", entry.GetStructuredStateValue("ExecutorName"));
        Assert.Equal("provider outage", entry.GetStructuredStateValue("Reason"));
        Assert.Equal("for 00:10:00", entry.GetStructuredStateValue("Until"));

        using var resumed = await server.Client.SendChangeAsync(HttpMethod.Post, Resume, "{}");
        Assert.Equal(HttpStatusCode.OK, resumed.StatusCode);
        Assert.True((await resumed.JsonAsync()).GetProperty("changed").GetBoolean());
        Assert.False(server.Payments.IsPaused);
        var resumedEntry = Assert.Single(server.Logs.WithEvent("ExecutorResumed"));
        Assert.Equal("provider outage", resumedEntry.GetStructuredStateValue("Reason"));

        using var again = await server.Client.SendChangeAsync(HttpMethod.Post, Resume, "{}");
        Assert.Equal(HttpStatusCode.OK, again.StatusCode);
        Assert.False((await again.JsonAsync()).GetProperty("changed").GetBoolean());
        Assert.Single(server.Logs.WithEvent("ExecutorResumed"));
    }

    [Fact]
    public async Task PauseAndResume_CountedAsChangesOnTheHostMeter()
    {
        await using var server = await AdminServer.StartAsync();
        using var recorder = new AdminMeterRecorder(server.App.Services);

        using var paused = await server.Client.SendChangeAsync(HttpMethod.Post, Pause, """{"reason": "x"}""");
        using var resumed = await server.Client.SendChangeAsync(HttpMethod.Post, Resume, string.Empty);

        Assert.Equal(HttpStatusCode.OK, resumed.StatusCode);
        Assert.Equal(
            [
                ("boundedwork.admin.changes", 1L, "payments", "paused"),
                ("boundedwork.admin.changes", 1L, "payments", "paused"),
            ],
            recorder.Measurements);
    }

    [Theory]
    [InlineData("""{"reason": "line\r\nforged: entry"}""", "reason")]
    [InlineData("""{"reason": ""}""", "reason")]
    [InlineData("""{"reason": ["a", "b"]}""", "reason")]
    [InlineData("""{"reason": 42}""", "reason")]
    [InlineData("""{"for": "00:10:00"}""", "reason")]
    [InlineData("""{"reason": "x", "for": "-00:00:01"}""", "for")]
    [InlineData("""{"reason": "x", "for": "00:00:00"}""", "for")]
    [InlineData("""{"reason": "x", "for": "99999999.00:00:00"}""", "for")]
    [InlineData("""{"reason": "x", "for": "31.00:00:00"}""", "for")]
    [InlineData("""{"reason": "x", "for": ["00:10:00", "00:20:00"]}""", "for")]
    [InlineData("""{"reason": "x", "for": 600}""", "for")]
    [InlineData("""{"reason": "x", "for": "10m"}""", "for")]
    [InlineData("""{"reason": "x", "reason": "y"}""", "reason")]
    [InlineData("""{"reason": "x", "until": "tomorrow"}""", "until")]
    [InlineData("""[{"reason": "x"}]""", "body")]
    [InlineData("", "body")]
    public async Task Pause_BadBody_400NamingTheField_AndNothingChanges(string body, string field)
    {
        await using var server = await AdminServer.StartAsync();

        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, Pause, body);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        var problem = await response.JsonAsync();
        Assert.True(problem.GetProperty("errors").TryGetProperty(field, out _), $"No error for '{field}': {problem}");
        Assert.False(server.Payments.IsPaused);
        Assert.Single(server.Logs.WithEvent("SettingsChangeRefused"));
        Assert.Empty(server.Logs.WithEvent("ExecutorPaused"));
    }

    [Fact]
    public async Task Pause_HugeBody_413()
    {
        await using var server = await AdminServer.StartAsync();
        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, Pause, $$"""{"reason": "{{new string('x', 10_000)}}"}""");
        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, response.StatusCode);
        Assert.False(server.Payments.IsPaused);
    }

    [Fact]
    public async Task Resume_WithFields_400()
    {
        await using var server = await AdminServer.StartAsync();
        server.Payments.Pause("kept");
        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, Resume, """{"reason": "x"}""");
        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.True(server.Payments.IsPaused);
    }

    [Theory]
    [InlineData("/bounded-work/executors/nobody/pause")]
    [InlineData("/bounded-work/executors/nobody/resume")]
    public async Task UnknownExecutor_404(string path)
    {
        await using var server = await AdminServer.StartAsync();
        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, path, """{"reason": "x"}""");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    [Fact]
    public async Task Pause_WithoutTheRequestHeader_400_AndNotPaused()
    {
        await using var server = await AdminServer.StartAsync();
        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, Pause, """{"reason": "x"}""", header: false);
        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.False(server.Payments.IsPaused);
    }

    [Fact]
    public async Task Pause_ShutDownExecutor_409()
    {
        await using var server = await AdminServer.StartAsync();
        await server.Payments.ShutdownAsync();
        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, Pause, """{"reason": "x"}""");
        Assert.Equal(HttpStatusCode.Conflict, response.StatusCode);
    }

    [Theory]
    [InlineData("""{"reason": "line\r\nforged: entry"}""", "reason")]
    [InlineData("""{"reason": ["a", "b"]}""", "reason")]
    [InlineData("""{"reason": "x", "for": "-00:00:01"}""", "for")]
    [InlineData("""{"reason": "x", "for": "99999999.00:00:00"}""", "for")]
    public async Task Pause_BadBody_TheSocketAnswersAsKestrelDoes(string body, string field)
    {
        var path = Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));

        using var http = await server.Client.SendChangeAsync(HttpMethod.Post, Pause, body);
        var socket = LocalSocketClient.Send(path, "POST", "/executors/payments/pause", body);

        Assert.Equal(400, (int)http.StatusCode);
        Assert.Equal(400, socket.Status);
        Assert.True(socket.Json.GetProperty("errors").TryGetProperty(field, out _), socket.Body);
        Assert.Equal((await http.JsonAsync()).GetProperty("detail").GetString(), socket.Json.GetProperty("detail").GetString());
        Assert.False(server.Payments.IsPaused);

        var paused = LocalSocketClient.Send(path, "POST", "/executors/payments/pause", """{"reason": "from the socket"}""");
        Assert.Equal(200, paused.Status);
        Assert.True(server.Payments.IsPaused);
        Assert.Equal("from the socket", server.Payments.GetStatistics().PauseReason);
    }
}
