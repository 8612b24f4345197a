using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The dashboard's executor row lists the busiest tenants under fair share, in a real browser (Chromium): each with its
/// counts, a hostile name shown as text (no element made of it, no script run) and a long name cut.
/// </summary>
public sealed class TenantDashboardBrowserTests
{
    private const string Hostile = "<img src=x onerror=\"window.__pwned=1\">";

    [Fact]
    public async Task Dashboard_FairShare_BusiestTenantsListedAsText()
    {
        await using var server = await AdminServer.StartAsync(executors: services =>
            services.AddBoundedExecutor("payments", o => { o.WorkerCount = 2; o.FairShare = new FairShareSettings { Weights = new Dictionary<string, int> { ["acme"] = 4 } }; }));
        var longName = new string('y', FairShareSettings.MaxTenantLength);
        await server.Payments.ForTenant("acme").RunAsync(() => { });
        await server.Payments.ForTenant(Hostile).RunAsync(() => { });
        await server.Payments.ForTenant(longName).RunAsync(() => { });
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var page = await DashboardBrowserTests.OpenDashboardAsync(browser, server);

        var tenants = page.Locator("tr[data-executor='payments'] .tenants");
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        await Assertions.Expect(tenants).ToContainTextAsync("busiest tenants:", patience);
        await Assertions.Expect(tenants).ToContainTextAsync("acme: weight 4, 0 queued, 0 running, 1 done", patience);
        await Assertions.Expect(tenants).ToContainTextAsync(Hostile + ": weight 1", patience);
        await Assertions.Expect(tenants).ToContainTextAsync(new string('y', 39) + "\u2026: weight 1", patience);
        Assert.Equal(0, await tenants.Locator("img").CountAsync());
        Assert.Equal("undefined", await page.EvaluateAsync<string>("typeof window.__pwned"));
    }
}
