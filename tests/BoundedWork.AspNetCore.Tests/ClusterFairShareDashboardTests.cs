using System.Collections.Concurrent;
using System.Collections.ObjectModel;
using BoundedWork.Hosting;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// A durable queue's fair share in the dashboard's cluster view, in a real browser: shown with tenants' names as text,
/// changed only after a confirmation (a dismissed one sends nothing), a bad value answered with the console's message
/// naming the field and nothing changed, and turned off.
/// </summary>
public sealed class ClusterFairShareDashboardTests
{
    private const string HostileTenant = "<img src=x onerror=\"window.pwned = 3\">\r\n";

    [Fact]
    public async Task Dashboard_ShowsTheFairShare_ChangesItBehindAConfirmation_RefusalsNameTheField()
    {
        var cluster = ClusterEndpointTests.NewCluster();
        var weights = new ReadOnlyDictionary<string, int>(new Dictionary<string, int> { ["acme"] = 4, [HostileTenant] = 5 });
        await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { DefaultWeight = 2, Weights = weights, MaxRunningPerTenant = 3 } }, "bob");
        await using var server = await ClusterEndpointTests.StartAsync(cluster);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var context = await browser.NewContextAsync(new()
        {
            ViewportSize = new() { Width = 1480, Height = 900 },
            ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" },
        });
        var page = await context.NewPageAsync();
        var dialogs = new ConcurrentQueue<string>();
        var accept = false;
        page.Dialog += (_, dialog) =>
        {
            dialogs.Enqueue(dialog.Message);
            _ = accept ? dialog.AcceptAsync() : dialog.DismissAsync();
        };
        await page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        var view = page.Locator(".cluster[data-queue='payments']");
        var line = view.Locator(".cluster-fair-share");

        await Assertions.Expect(line).ToContainTextAsync("Fair share across tenants: on: default weight 2, weights <img src=x onerror=\"window.pwned = 3\">\\u000d\\u000a 5, acme 4, max running per tenant 3", patience);
        Assert.Equal(0, await page.Locator(".cluster img").CountAsync());
        Assert.True(await page.EvaluateAsync<bool>("() => window.pwned === undefined"));

        // Dismissed: nothing is sent.
        var form = view.Locator(".cluster-fair-form");
        await form.Locator("input.cluster-fair-tenant").FillAsync("globex");
        await form.Locator("input.cluster-fair-weight").FillAsync("7");
        await form.Locator("button.cluster-fair-apply").ClickAsync();
        Assert.True(SpinWait.SpinUntil(() => !dialogs.IsEmpty, TestKit.Safety));
        Assert.Contains("Change fair share across tenants of payments on every node: tenant 'globex' weight 7?", Assert.Single(dialogs), StringComparison.Ordinal);
        Assert.Equal(1, cluster.Settings.Version);

        // Confirmed: only what was filled in changes.
        accept = true;
        await form.Locator("button.cluster-fair-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToContainTextAsync("Applied (settings v2): fair share on: default weight 2, weights", patience);
        var fair = cluster.Settings.FairShare!;
        Assert.Equal((7, 4, 2, 3, "alice"), (fair.GetWeight("globex"), fair.GetWeight("acme"), fair.DefaultWeight, fair.MaxRunningPerTenant!.Value, cluster.Settings.UpdatedBy));
        await Assertions.Expect(line).ToContainTextAsync("acme 4, globex 7, max running per tenant 3", patience);

        // Bad values: the console's message names the field; nothing changes.
        await form.Locator("input.cluster-fair-tenant").FillAsync("globex");
        await form.Locator("input.cluster-fair-weight").FillAsync("0");
        await form.Locator("button.cluster-fair-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.err")).ToContainTextAsync("fairShare.tenantWeights \"globex\" must be a whole number from 1 to 1000 (was 0)", patience);
        await form.Locator("input.cluster-fair-tenant").FillAsync("");
        await form.Locator("input.cluster-fair-weight").FillAsync("");
        await form.Locator("input.cluster-fair-max-per-tenant").FillAsync("lots");
        await form.Locator("button.cluster-fair-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.err")).ToContainTextAsync("fairShare.maxRunningPerTenant must be a whole number or null, not a string.", patience);
        await form.Locator("input.cluster-fair-max-per-tenant").FillAsync("");
        await form.Locator("input.cluster-fair-weight").FillAsync("3");
        await form.Locator("button.cluster-fair-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.err")).ToContainTextAsync("Name the tenant whose weight this is.", patience);
        Assert.Equal(2, cluster.Settings.Version);

        // Off.
        await form.Locator("button.cluster-fair-off").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToContainTextAsync("Applied (settings v3)", patience);
        Assert.Null(cluster.Settings.FairShare);
        await Assertions.Expect(line).ToHaveTextAsync("Fair share across tenants: off", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Contains(dialogs, d => d.StartsWith("Turn fair share across tenants off for payments on every node?", StringComparison.Ordinal));
    }

    [Fact]
    public async Task Dashboard_SetsAndClearsTheStartsPerTenant_BehindAConfirmation_RefusalsNameTheField()
    {
        var cluster = ClusterEndpointTests.NewCluster();
        await cluster.UpdateSettingsAsync(s => s with { FairShare = new WorkQueueFairShare { MaxRunningPerTenant = 3 } }, "bob");
        await using var server = await ClusterEndpointTests.StartAsync(cluster);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var context = await browser.NewContextAsync(new()
        {
            ViewportSize = new() { Width = 1480, Height = 900 },
            ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" },
        });
        var page = await context.NewPageAsync();
        var dialogs = new ConcurrentQueue<string>();
        page.Dialog += (_, dialog) =>
        {
            dialogs.Enqueue(dialog.Message);
            _ = dialog.AcceptAsync();
        };
        await page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        var view = page.Locator(".cluster[data-queue='payments']");
        var line = view.Locator(".cluster-fair-share");
        var form = view.Locator(".cluster-fair-form");
        var rate = form.Locator("input.cluster-fair-rate-per-tenant");
        var burst = form.Locator("input.cluster-fair-burst-per-tenant");
        var apply = form.Locator("button.cluster-fair-apply");

        await Assertions.Expect(line).ToContainTextAsync("max running per tenant 3, starts per second per tenant none (burst default)", patience);

        await rate.FillAsync("2.5");
        await burst.FillAsync("4");
        await apply.ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToContainTextAsync("Applied (settings v2)", patience);
        Assert.Contains(dialogs, d => d.Contains("Change fair share across tenants of payments on every node: starts per second per tenant 2.5, burst per tenant 4?", StringComparison.Ordinal));
        var fair = cluster.Settings.FairShare!;
        Assert.Equal((2.5, 4, 3), (fair.StartsPerSecondPerTenant!.Value, fair.StartsBurstPerTenant!.Value, fair.MaxRunningPerTenant!.Value));
        await Assertions.Expect(line).ToContainTextAsync("max running per tenant 3, starts per second per tenant 2.5 (burst 4)", patience);

        // Bad values: the console's message names the field; nothing changes.
        foreach (var (field, typed, message) in new[]
        {
            (rate, "NaN", "fairShare.startsPerSecondPerTenant must be a number of starts per second or null, not a string."),
            (rate, "0", "fairShare.startsPerSecondPerTenant must be more than 0 and at most 1,000,000 (was 0); null clears it."),
            (rate, "-2", "fairShare.startsPerSecondPerTenant must be more than 0 and at most 1,000,000 (was -2); null clears it."),
            (burst, "0", "fairShare.startsBurstPerTenant must be between 1 and 1,000,000 (was 0); null clears it."),
            (burst, "1.5", "fairShare.startsBurstPerTenant must be a whole number (was 1.5)."),
        })
        {
            await rate.FillAsync("");
            await burst.FillAsync("");
            await field.FillAsync(typed);
            await apply.ClickAsync();
            await Assertions.Expect(form.Locator(".msg.err")).ToContainTextAsync(message, patience);
        }

        Assert.Equal(2, cluster.Settings.Version);

        // "none" clears each.
        await rate.FillAsync("none");
        await burst.FillAsync("none");
        await apply.ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToContainTextAsync("Applied (settings v3)", patience);
        fair = cluster.Settings.FairShare!;
        Assert.Equal(((double?)null, (int?)null, 3), (fair.StartsPerSecondPerTenant, fair.StartsBurstPerTenant, fair.MaxRunningPerTenant!.Value));
        await Assertions.Expect(line).ToContainTextAsync("starts per second per tenant none (burst default)", patience);
    }
}
