using BoundedWork;
using Microsoft.Extensions.DependencyInjection;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Tests;

public sealed class OpenLoopLoadTests
{
    [Fact]
    public async Task RunAsync_QueueFullWhileWorkerBlocked_CountsAcceptedAnd503Separately()
    {
        await using var server = await TestServer.StartAsync(settings:
            ["--BoundedWork:Executors:payments:WorkerCount", "1", "--BoundedWork:Executors:payments:QueueCapacity", "2"]);
        using var client = OpenLoopLoad.CreateClient(4);
        var load = new OpenLoopLoad(client, new Uri(server.BaseUrl, "callbacks/bounded"), HttpMethod.Post, rate: 20, TimeSpan.FromSeconds(0.5));

        using (var first = await server.PostCallbackAsync("bounded", 0))
        {
            await server.Dependency.WaitStartedAsync(1);
        }

        // The gate stays closed: the worker is held, two callbacks wait, and every later one is refused.
        var report = await load.RunAsync(TestServer.Safety, CancellationToken.None);

        Assert.Equal(10, report.Sent);
        Assert.Equal(2, report.Ok);
        Assert.Equal(8, report.Status503);
        Assert.Equal(0, report.Errors + report.Unfinished + report.OtherStatus);
        var stats = await server.StatsAsync();
        Assert.Equal(report.Status503, stats.Bounded.Rejected503);
        Assert.Equal(report.Sent + 1, stats.Bounded.Received);
    }

    [Fact]
    public async Task RunAsync_Merchants_EachCallbackNamesOneAndTheServerSeesThemAsTenants()
    {
        await using var server = await TestServer.StartAsync();
        using var client = OpenLoopLoad.CreateClient(4);
        var load = new OpenLoopLoad(client, new Uri(server.BaseUrl, "callbacks/bounded"), HttpMethod.Post, rate: 20, TimeSpan.FromSeconds(0.3), merchants: 3);

        var report = await load.RunAsync(TestServer.Safety, CancellationToken.None);

        Assert.Equal(6, report.Ok);
        var executor = server.App.Services.GetRequiredKeyedService<BoundedExecutor>("payments");
        var tenants = executor.GetTenantStatistics().Select(static t => t.Tenant).Order(StringComparer.Ordinal);
        Assert.Equal(["merchant-0", "merchant-1", "merchant-2"], tenants);
    }

    [Fact]
    public async Task WriteCsv_AfterRun_OneLinePerAnsweredRequestWithOutcome()
    {
        await using var server = await TestServer.StartAsync();
        using var client = OpenLoopLoad.CreateClient(4);
        var load = new OpenLoopLoad(client, new Uri(server.BaseUrl, "ping"), HttpMethod.Get, rate: 20, TimeSpan.FromSeconds(0.25));
        await load.RunAsync(TestServer.Safety, CancellationToken.None);

        using var writer = new StringWriter();
        load.WriteCsv(writer);

        var lines = writer.ToString().Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal("sent_s,latency_ms,outcome", lines[0].TrimEnd('\r'));
        Assert.Equal(5, lines.Length - 1);
        Assert.All(lines.Skip(1), line => Assert.EndsWith(",ok", line.TrimEnd('\r'), StringComparison.Ordinal));
    }
}
