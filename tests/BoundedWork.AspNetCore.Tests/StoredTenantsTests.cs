using System.Net;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// A durable queue's busiest tenants by stored items (<see cref="WorkQueueStorageStatistics.Tenants"/>) in the executor's
/// document and on the dashboard, as an in-memory executor's busiest tenants are: names as text, never markup.
/// </summary>
public sealed class StoredTenantsTests
{
    private const string HostileTenant = "<img src=x onerror=\"window.pwned = 4\">\r\n";

    [Fact]
    public async Task ExecutorDocument_ListsTheStoredTenants_OnlyWhileThereAreAny()
    {
        var storage = new TenantStorage();
        await using var server = await StartAsync(storage);

        var none = await (await server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync();
        storage.Statistics = storage.Statistics with { Tenants = Tenants() };
        using var response = await server.Client.GetAsync("/bounded-work/executors/payments");
        var json = await response.JsonAsync();

        Assert.False(none.GetProperty("storage").TryGetProperty("tenants", out _));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var tenants = json.GetProperty("storage").GetProperty("tenants").EnumerateArray().ToList();
        Assert.Equal(["tenant", "ready", "running", "completed", "failed", "deadLettered"], tenants[0].EnumerateObject().Select(p => p.Name));
        Assert.Equal((10L, 1L, 2L), (tenants[0].GetProperty("completed").GetInt64(), tenants[0].GetProperty("failed").GetInt64(), tenants[0].GetProperty("deadLettered").GetInt64()));
        Assert.Equal(
            [("acme", 120L, 4L), (HostileTenant, 3L, 1L), ("(other)", 7L, 2L)],
            tenants.Select(t => (t.GetProperty("tenant").GetString()!, t.GetProperty("ready").GetInt64(), t.GetProperty("running").GetInt64())));
    }

    [Fact]
    public async Task Dashboard_ShowsTheStoredTenants_NamesAsText()
    {
        var storage = new TenantStorage();
        storage.Statistics = storage.Statistics with { Tenants = Tenants() };
        await using var server = await StartAsync(storage);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var context = await browser.NewContextAsync(new()
        {
            ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" },
        });
        var page = await context.NewPageAsync();
        await page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());

        var lines = page.Locator(".stored-tenant");
        await Assertions.Expect(lines).ToHaveCountAsync(3, new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        // The control characters shown as escapes, and the name cut at 40 characters (the whole of it in the title).
        const string Safe = "<img src=x onerror=\"window.pwned = 4\">\\u000d\\u000a";
        await Assertions.Expect(lines).ToHaveTextAsync(["acme: 120 ready, 4 running; here 10 done, 1 failed, 2 dead", Safe[..39] + "\u2026: 3 ready, 1 running; here 0 done", "(other): 7 ready, 2 running; here 0 done"]);
        await Assertions.Expect(lines.Nth(1)).ToHaveAttributeAsync("title", Safe);
        Assert.True(await page.EvaluateAsync<bool>("() => window.pwned === undefined"));
        Assert.Equal(0, await page.Locator(".tenants img").CountAsync());
    }

    private static WorkQueueTenantStatistics[] Tenants() =>
    [
        new() { Tenant = "acme", Ready = 120, Running = 4, Completed = 10, Failed = 1, DeadLettered = 2 },
        new() { Tenant = HostileTenant, Ready = 3, Running = 1 },
        new() { Tenant = BoundedWork.TenantStatistics.OtherTenants, Ready = 7, Running = 2 },
    ];

    private static Task<AdminServer> StartAsync(TenantStorage storage) =>
        AdminServer.StartAsync(configure: builder => builder.Services.AddSingleton<IWorkQueueStorage>(storage));

    /// <summary>The durable storage of queue "payments", its statistics set by the test.</summary>
    private sealed class TenantStorage : IWorkQueueStorage
    {
        public string QueueName => "payments";

        public string StorageKind => "PostgreSql";

        public WorkQueueStorageStatistics Statistics { get; set; } = new() { IsAvailable = true, Ready = 130, Running = 7, ReadAt = DateTimeOffset.UtcNow };
    }
}
