using System.Net;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The rate limit through the console: shown in the executor's JSON, changed with PATCH, bad values refused by field.</summary>
public sealed class RateLimitAdminTests : IAsyncLifetime
{
    private AdminServer _server = null!;

    public async Task InitializeAsync() => _server = await AdminServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task GetExecutor_NoLimit_ShowsTheRateLimitAsNone()
    {
        var json = await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync();
        var rateLimit = json.GetProperty("rateLimit");
        Assert.Equal("none", rateLimit.GetProperty("kind").GetString());
        foreach (var field in new[] { "limiter", "permitsPerSecond", "permitBurst", "waitingWorkers", "permitsAcquired", "permitsRefused", "waitTimeMs" })
        {
            Assert.True(rateLimit.TryGetProperty(field, out _), $"Missing field '{field}' in {rateLimit}");
        }

        Assert.Equal(0, json.GetProperty("settings").GetProperty("permitsPerSecond").GetInt32());
        Assert.Equal(1, json.GetProperty("settings").GetProperty("permitBurst").GetInt32());
    }

    [Fact]
    public async Task PatchSettings_PermitsPerSecond_PutsTheLimitInForceAndShowsIt()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"permitsPerSecond": 50, "permitBurst": 5}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var current = (await response.JsonAsync()).GetProperty("current");
        Assert.Equal(50, current.GetProperty("permitsPerSecond").GetInt32());
        Assert.Equal(5, current.GetProperty("permitBurst").GetInt32());
        Assert.Equal(50, _server.Payments.Settings.PermitsPerSecond);
        await _server.Payments.RunAsync(() => { });

        var rateLimit = (await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync()).GetProperty("rateLimit");
        Assert.Equal("permitsPerSecond", rateLimit.GetProperty("kind").GetString());
        Assert.True(rateLimit.GetProperty("permitsAcquired").GetInt64() >= 1, $"No permit counted: {rateLimit}");

        using var off = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"permitsPerSecond": 0}""");
        Assert.Equal(HttpStatusCode.OK, off.StatusCode);
        Assert.False(_server.Payments.GetStatistics().IsRateLimited);
    }

    [Theory]
    [InlineData("""{"permitsPerSecond": -1}""", "permitsPerSecond")]
    [InlineData("""{"permitsPerSecond": 1000001}""", "permitsPerSecond")]
    [InlineData("""{"permitsPerSecond": 2.5}""", "permitsPerSecond")]
    [InlineData("""{"permitsPerSecond": "10"}""", "permitsPerSecond")]
    [InlineData("""{"permitBurst": 0}""", "permitBurst")]
    [InlineData("""{"permitBurst": 1000001, "workers": 3}""", "permitBurst")]
    public async Task PatchSettings_BadRateLimit_IsAProblemNamingTheFieldAndChangesNothing(string body, string field)
    {
        var before = _server.Payments.Settings;

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, field);
        Assert.True(problem.GetProperty("errors").TryGetProperty(field, out _));
        Assert.Equal(before, _server.Payments.Settings);
    }

    [Fact]
    public async Task PatchSettings_PermitsPerSecondBesideTheApplicationsOwnLimiter_IsRefusedNamingTheField()
    {
        using var limiter = new ManualRateLimiter(permits: 100);
        _server.Payments.Reconfigure(s => s with { RateLimiter = limiter });

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"permitsPerSecond": 10}""");

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "RateLimiter is set");
        Assert.True(problem.GetProperty("errors").TryGetProperty("permitsPerSecond", out _));
        Assert.Same(limiter, _server.Payments.Settings.RateLimiter);
        var rateLimit = (await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync()).GetProperty("rateLimit");
        Assert.Equal("custom", rateLimit.GetProperty("kind").GetString());
        Assert.Equal(nameof(ManualRateLimiter), rateLimit.GetProperty("limiter").GetString());
    }
}
