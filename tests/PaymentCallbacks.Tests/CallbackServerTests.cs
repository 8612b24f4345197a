using System.Net;
using BoundedWork;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;
using PaymentCallbacks.Server;

namespace PaymentCallbacks.Tests;

public sealed class CallbackServerTests
{
    private static readonly string[] s_oneWorkerTwoSlots =
        ["--BoundedWork:Executors:payments:WorkerCount", "1", "--BoundedWork:Executors:payments:QueueCapacity", "2"];

    [Fact]
    public async Task BoundedEndpoint_QueueFull_Returns503WithRetryAfterAndCountsIt()
    {
        await using var server = await TestServer.StartAsync(settings: s_oneWorkerTwoSlots);

        using var running = await server.PostCallbackAsync("bounded", 1);
        await server.Dependency.WaitStartedAsync(1);
        using var queued1 = await server.PostCallbackAsync("bounded", 2);
        using var queued2 = await server.PostCallbackAsync("bounded", 3);
        using var refused = await server.PostCallbackAsync("bounded", 4);

        Assert.Equal(HttpStatusCode.Accepted, running.StatusCode);
        Assert.Equal(HttpStatusCode.Accepted, queued1.StatusCode);
        Assert.Equal(HttpStatusCode.Accepted, queued2.StatusCode);
        Assert.Equal(HttpStatusCode.ServiceUnavailable, refused.StatusCode);
        Assert.Equal("1", refused.Headers.RetryAfter?.Delta?.TotalSeconds.ToString(System.Globalization.CultureInfo.InvariantCulture));
        Assert.Equal("application/problem+json", refused.Content.Headers.ContentType?.MediaType);

        var stats = await server.StatsAsync();
        Assert.Equal(4, stats.Bounded.Received);
        Assert.Equal(3, stats.Bounded.Accepted);
        Assert.Equal(1, stats.Bounded.Rejected503);
        Assert.Equal(2, stats.Bounded.Queued);
        Assert.Equal(1, stats.Bounded.Running);
        Assert.True(stats.Bounded.LedgerBalanced);
    }

    [Fact]
    public async Task BoundedEndpoint_GateOpened_EveryAcceptedSideEffectCompletes()
    {
        await using var server = await TestServer.StartAsync(settings: s_oneWorkerTwoSlots);
        using var first = await server.PostCallbackAsync("bounded", 1);
        await server.Dependency.WaitStartedAsync(1);
        using var second = await server.PostCallbackAsync("bounded", 2);
        using var third = await server.PostCallbackAsync("bounded", 3);

        server.Dependency.Open();
        var executor = server.App.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        var result = await executor.ShutdownAsync(TestServer.Safety);

        Assert.Empty(result.AbandonedItems);
        var stats = CallbackServer.ReadStats(server.App.Services, collect: false);
        Assert.Equal(3, stats.Bounded.Completed);
        Assert.Equal(0, stats.Bounded.Queued + stats.Bounded.Running);
        Assert.True(stats.Bounded.LedgerBalanced);
    }

    [Fact]
    public async Task HostShutdown_DeadlinePassed_QueuedCallbacksHandedBackAndLedgerBalances()
    {
        await using var server = await TestServer.StartAsync(settings: ["--BoundedWork:Executors:payments:WorkerCount", "1"]);
        using var running = await server.PostCallbackAsync("bounded", 1);
        await server.Dependency.WaitStartedAsync(1);
        for (var i = 2; i <= 4; i++)
        {
            using var queued = await server.PostCallbackAsync("bounded", i);
            Assert.Equal(HttpStatusCode.Accepted, queued.StatusCode);
        }

        await server.App.StopAsync(); // ShutdownTimeoutSeconds = 0: the deadline has passed at once

        var stats = CallbackServer.ReadStats(server.App.Services, collect: false);
        Assert.Equal(3, server.App.Services.GetRequiredService<HandedBackCallbacks>().Count);
        Assert.Equal(3, stats.Bounded.HandedBack);
        Assert.Equal(1, stats.Bounded.Running);
        Assert.True(stats.Bounded.LedgerBalanced);
    }

    [Fact]
    public async Task NaiveEndpoint_SideEffectStillRunning_AnsweredAndCountedInFlight()
    {
        await using var server = await TestServer.StartAsync();

        using var response = await server.PostCallbackAsync("naive", 1);
        await server.Dependency.WaitStartedAsync(1);

        Assert.Equal(HttpStatusCode.Accepted, response.StatusCode);
        var stats = await server.StatsAsync();
        Assert.Equal(1, stats.Naive.Received);
        Assert.Equal(0, stats.Naive.Completed);
        Assert.Equal(1, stats.Naive.InFlight);
    }

    [Fact]
    public async Task Server_UrlsAskForEveryInterface_ListensOnLoopbackOnly()
    {
        await using var server = await TestServer.StartAsync(settings: ["--urls", "http://0.0.0.0:0"]);

        Assert.Equal("127.0.0.1", server.BaseUrl.Host);
        Assert.Equal(IPAddress.Loopback, IPAddress.Parse(server.BaseUrl.Host));
    }

    [Fact]
    public async Task AdminConsole_Development_ResizesPaymentsExecutor()
    {
        await using var server = await TestServer.StartAsync();
        using var request = new HttpRequestMessage(HttpMethod.Put, "bounded-work/executors/payments/workers")
        {
            Content = new StringContent("""{"workers":5}""", System.Text.Encoding.UTF8, "application/json"),
        };
        request.Headers.Add("X-BoundedWork-Admin", "1");

        using var response = await server.Client.SendAsync(request);

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(5, server.App.Services.GetRequiredKeyedService<BoundedExecutor>("payments").Settings.WorkerCount);
        Assert.Equal(5, (await server.StatsAsync()).Bounded.Workers);
    }

    [Fact]
    public async Task AdminConsole_Production_IsNotMapped()
    {
        await using var server = await TestServer.StartAsync(environment: "Production");

        using var response = await server.Client.GetAsync("bounded-work/executors");

        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    [Fact]
    public async Task Server_SideEffectDelaysReversed_StartFailsNamingTheSetting()
    {
        await using var app = CallbackServer.Build(["--port", "0", "--SideEffect:MinDelayMs", "10", "--SideEffect:MaxDelayMs", "5"]);

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());

        Assert.Contains("SideEffect:MaxDelayMs (5) must be at least MinDelayMs (10).", error.Failures);
    }
}
