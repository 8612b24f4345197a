using System.Net;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The adaptive mode through the console: turned on and bounded with PATCH, a resize pins, unpin, the state and decision log in the executor's document, bad input as problems.</summary>
public sealed class AdaptiveEndpointTests : IAsyncLifetime
{
    private AdminServer _server = null!;

    public async Task InitializeAsync() => _server = await AdminServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task Patch_AdaptiveModeAndBounds_AppliedAndShownInTheDocument()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"adaptiveMode": "advisory", "adaptiveMinWorkers": 2, "adaptiveMaxWorkers": 6}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var settings = _server.Payments.Settings;
        Assert.Equal((AdaptiveMode.Advisory, 2, (int?)6), (settings.AdaptiveMode, settings.AdaptiveMinWorkerCount, settings.AdaptiveMaxWorkerCount));
        var adaptive = (await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync()).GetProperty("adaptive");
        Assert.Equal("Advisory", adaptive.GetProperty("mode").GetString());
        Assert.Equal(2, adaptive.GetProperty("minWorkers").GetInt32());
        Assert.Equal(6, adaptive.GetProperty("maxWorkers").GetInt32());
        Assert.False(adaptive.GetProperty("pinned").GetBoolean());
        Assert.Empty(adaptive.GetProperty("decisions").EnumerateArray());

        using var unbounded = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"adaptiveMaxWorkers": null}""");
        Assert.Equal(HttpStatusCode.OK, unbounded.StatusCode);
        Assert.Null(_server.Payments.Settings.AdaptiveMaxWorkerCount);
    }

    [Fact]
    public async Task PutWorkers_WithPinFor_WhileAdaptive_PinsForThatLong_ThenPatchUnpins()
    {
        _server.Payments.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.On });

        using var put = await _server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 5, "pinFor": "00:10:00"}""");

        Assert.Equal(HttpStatusCode.OK, put.StatusCode);
        var s = _server.Payments.GetStatistics();
        Assert.Equal((5, true), (s.TargetWorkerCount, s.IsWorkerCountPinned));
        Assert.NotNull(s.WorkerCountPinnedUntil);
        var adaptive = (await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync()).GetProperty("adaptive");
        Assert.True(adaptive.GetProperty("pinned").GetBoolean());
        Assert.Equal("Pinned", adaptive.GetProperty("decisions").EnumerateArray().Last().GetProperty("rule").GetString());
        var audit = Assert.Single(_server.Logs.WithEvent("WorkerCountPinChanged"));
        Assert.Equal("pinned for 00:10:00", audit.GetStructuredStateValue("Pin"));

        using var unpin = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"pinned": false}""");

        Assert.Equal(HttpStatusCode.OK, unpin.StatusCode);
        Assert.False(_server.Payments.GetStatistics().IsWorkerCountPinned);
        Assert.Equal("unpinned", _server.Logs.WithEvent("WorkerCountPinChanged")[^1].GetStructuredStateValue("Pin"));
    }

    [Fact]
    public async Task PutWorkers_WhileAdaptive_PinsUntilUnpinned()
    {
        _server.Payments.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.Advisory });

        using var put = await _server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 3}""");

        Assert.Equal(HttpStatusCode.OK, put.StatusCode);
        var s = _server.Payments.GetStatistics();
        Assert.Equal((3, true, (DateTimeOffset?)null), (s.TargetWorkerCount, s.IsWorkerCountPinned, s.WorkerCountPinnedUntil));
    }

    [Theory]
    [InlineData("PATCH", """{"adaptiveMode": "sometimes"}""", "adaptiveMode", "adaptiveMode 'sometimes' is not one of Off, On, Advisory.")]
    [InlineData("PATCH", """{"adaptiveMaxWorkers": 100}""", "adaptiveMaxWorkers", "AdaptiveMaxWorkerCount (100) must not exceed MaxWorkerCount")]
    [InlineData("PATCH", """{"adaptiveMinWorkers": 0}""", "adaptiveMinWorkers", "AdaptiveMinWorkerCount must be at least 1 (was 0).")]
    [InlineData("PUT", """{"workers": 4, "pinFor": "00:10:00"}""", "pinFor", "the adaptive mode, which is Off")]
    [InlineData("PUT", """{"workers": 4, "pinFor": "00:00:00.5"}""", "pinFor", "pinFor must be between 00:00:01 and 1.00:00:00")]
    [InlineData("PATCH", """{"pinFor": "00:10:00"}""", "pinFor", "send it with workers")]
    [InlineData("PATCH", """{"pinned": "no"}""", "pinned", "pinned must be true")]
    [InlineData("PATCH", """{"pinned": false, "workers": 4}""", "pinned", "cannot be sent with workers")]
    // What a careless or hostile client sends: a list where one value is expected, a number for a name, null for a
    // flag, two modes in one string, an ambiguous duration.
    [InlineData("PATCH", """{"adaptiveMode": ["On", "Off"]}""", "adaptiveMode", "adaptiveMode")]
    [InlineData("PATCH", """{"adaptiveMode": 1}""", "adaptiveMode", "adaptiveMode")]
    [InlineData("PATCH", """{"adaptiveMode": "On,Advisory"}""", "adaptiveMode", "adaptiveMode")]
    [InlineData("PATCH", """{"pinned": [true]}""", "pinned", "pinned")]
    [InlineData("PATCH", """{"pinned": null}""", "pinned", "pinned")]
    [InlineData("PATCH", """{"adaptiveMinWorkers": [2]}""", "adaptiveMinWorkers", "adaptiveMinWorkers")]
    [InlineData("PUT", """{"workers": 4, "pinFor": "5"}""", "pinFor", "pinFor")]
    [InlineData("PUT", """{"workers": 4, "pinFor": "00:05"}""", "pinFor", "pinFor")]
    public async Task Change_BadAdaptiveField_400NamingTheField_AndNothingChanges(string method, string body, string field, string mention)
    {
        var path = method == "PUT" ? "/bounded-work/executors/payments/workers" : "/bounded-work/executors/payments";
        using var response = await _server.Client.SendChangeAsync(new HttpMethod(method), path, body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, mention);
        Assert.True(problem.GetProperty("errors").TryGetProperty(field, out _), problem.GetRawText());
        var s = _server.Payments.GetStatistics();
        Assert.Equal((2, AdaptiveMode.Off, false), (s.TargetWorkerCount, s.AdaptiveMode, s.IsWorkerCountPinned));
    }

    [Fact]
    public async Task LocalSocket_ResizeWithPinFor_AndUnpin_AsOverHttp()
    {
        var path = Path.Combine(Path.GetTempPath(), $"bw-adaptive-{Guid.NewGuid():N}.sock");
        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));
        server.Payments.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.On });

        var put = LocalSocketClient.Send(path, "PUT", "/executors/payments/workers", """{"workers": 4, "pinFor": "00:05:00"}""");
        Assert.Equal(200, put.Status);
        Assert.True(server.Payments.GetStatistics().IsWorkerCountPinned);
        var show = LocalSocketClient.Send(path, "GET", "/executors/payments");
        Assert.True(show.Json.GetProperty("adaptive").GetProperty("pinned").GetBoolean());

        var unpin = LocalSocketClient.Send(path, "PATCH", "/executors/payments", """{"pinned": false}""");
        Assert.Equal(200, unpin.Status);
        Assert.False(server.Payments.GetStatistics().IsWorkerCountPinned);
    }
}
