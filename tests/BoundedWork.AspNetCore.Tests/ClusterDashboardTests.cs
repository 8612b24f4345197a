using System.Collections.Concurrent;
using BoundedWork.Hosting;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The dashboard's cluster view in a real browser (Debian's chromium, driven by Playwright), over an in-memory cluster.</summary>
public sealed class ClusterDashboardTests
{
    /// <summary>A node name as a hostile or broken storage row could hold it: markup, a line break, a terminal escape.</summary>
    private const string HostileName = "<script>window.pwned = 1</script>\r\n<img src=x onerror=\"window.pwned = 2\">\u001b[31m";

    [Fact]
    public async Task Dashboard_ShowsEachDurableQueuesCluster_RefreshedEverySecond_StorageNamesAsText()
    {
        var cluster = ClusterEndpointTests.NewCluster();
        await cluster.UpdateSettingsAsync(s => s with { MaxRunning = 20, StartsPerSecond = 12.5, StartBurst = 13 }, "bob");
        var nodes = (await cluster.GetClusterAsync()).Nodes;
        cluster.SetNodes([.. nodes, nodes[0] with { Name = HostileName, Host = "web-3\r\nforged: yes", Version = "<b>1.4.0</b>", ProcessId = 303 }]);
        await using var server = await ClusterEndpointTests.StartAsync(cluster);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var context = await browser.NewContextAsync(new()
        {
            ViewportSize = new() { Width = 1480, Height = 900 },
            ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" },
        });
        var page = await context.NewPageAsync();
        var errors = new ConcurrentQueue<string>();
        var dialogs = new ConcurrentQueue<string>();
        page.Console += (_, message) =>
        {
            if (message.Type == "error")
            {
                errors.Enqueue(message.Text);
            }
        };
        page.Dialog += (_, dialog) =>
        {
            dialogs.Enqueue(dialog.Message);
            _ = dialog.DismissAsync();
        };
        await page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        var view = page.Locator(".cluster[data-queue='payments']");

        // Only the queue with a cluster gets a view: its limits and their use, its stored items and its nodes.
        // The running limit's use is the handlers running (12 of the 17 items running in the storage), the items
        // reserved or settling apart.
        await Assertions.Expect(view.Locator(".limit-running .v")).ToHaveTextAsync("12 / 20", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(view.Locator(".limit-running .k")).ToHaveTextAsync("Handlers running / max");
        await Assertions.Expect(view.Locator(".limit-running .limit-settling")).ToHaveTextAsync("reserved or settling: 5");
        await Assertions.Expect(page.Locator(".cluster")).ToHaveCountAsync(1);
        await Assertions.Expect(view.Locator(".limit-waiting .v")).ToHaveTextAsync("40 (oldest 2.5 s)");
        await Assertions.Expect(view.Locator(".limit-starts .v")).ToHaveTextAsync("11.5 / 12.5 (burst 13)");
        await Assertions.Expect(view.Locator(".limit-per-key .v")).ToHaveTextAsync("1");
        await Assertions.Expect(view.Locator(".limit-workers .v")).ToHaveTextAsync("each node's own");
        await Assertions.Expect(view.Locator(".cluster-version")).ToContainTextAsync("settings v1, changed by bob", patience);
        await Assertions.Expect(view.Locator(".stored")).ToContainTextAsync("1,234 ready (oldest 3.5 s), 5 scheduled, 17 running, 3 dead, 4,000 completed, 2 cancelled", patience);
        var rows = view.Locator("tbody.cluster-nodes tr[data-node]");
        await Assertions.Expect(rows).ToHaveCountAsync(3);
        await Assertions.Expect(rows.Nth(1).Locator("td")).ToHaveTextAsync(["node-a", "web-1", "101", "1.4.0", "8", "8", "7", "1,200", "3", "v1", "200 ms ago", "–"]);
        await Assertions.Expect(rows.Nth(1).Locator("td.node-settings")).Not.ToHaveClassAsync(new System.Text.RegularExpressions.Regex("hot"));
        await Assertions.Expect(rows.Nth(2).Locator("td.node-pinned")).ToHaveTextAsync("pinned locally");

        // The hostile names are text: no element, no script ran, the line break and escape kept as characters.
        Assert.Equal(HostileName, await rows.Nth(0).Locator("td.node-name").TextContentAsync());
        Assert.Equal("web-3\r\nforged: yes", await rows.Nth(0).Locator("td.node-host").TextContentAsync());
        Assert.Equal("<b>1.4.0</b>", await rows.Nth(0).Locator("td.node-version").TextContentAsync());
        Assert.Equal(0, await page.Locator(".cluster script, .cluster img, .cluster b").CountAsync());
        Assert.True(await page.EvaluateAsync<bool>("() => window.pwned === undefined"));

        // The view follows the storage without a reload: a change of the settings and of the limits' use.
        await cluster.UpdateSettingsAsync(s => s with { WorkersPerNode = 6, MaxRunning = 25 }, "carol");
        // As many items running in the storage as the limit, but fewer handlers: not at the limit, not marked.
        cluster.SetLimitUse(new WorkQueueClusterLimitUse { Running = 25, HandlersRunning = 20, StartsLastSecond = 3 });
        await Assertions.Expect(view.Locator(".limit-running .v")).ToHaveTextAsync("20 / 25", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(view.Locator(".limit-running .v")).Not.ToHaveClassAsync(new System.Text.RegularExpressions.Regex("hot"));
        await Assertions.Expect(view.Locator(".limit-running .limit-settling")).ToHaveTextAsync("reserved or settling: 5");
        cluster.SetLimitUse(new WorkQueueClusterLimitUse { Running = 25, HandlersRunning = 25, StartsLastSecond = 3 });
        await Assertions.Expect(view.Locator(".limit-running .v")).ToHaveTextAsync("25 / 25", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(view.Locator(".limit-running .v")).ToHaveClassAsync(new System.Text.RegularExpressions.Regex("hot"));
        await Assertions.Expect(view.Locator(".limit-running .limit-settling")).ToHaveTextAsync("reserved or settling: 0");
        await Assertions.Expect(view.Locator(".limit-workers .v")).ToHaveTextAsync("6");
        await Assertions.Expect(view.Locator(".limit-waiting .v")).ToHaveTextAsync("0");
        await Assertions.Expect(view.Locator(".cluster-version")).ToContainTextAsync("settings v2, changed by carol", patience);
        // Each node's applied settings version, marked while it is behind (these nodes still report v1).
        await Assertions.Expect(rows.Nth(1).Locator("td.node-settings")).ToHaveTextAsync("v1");
        await Assertions.Expect(rows.Nth(1).Locator("td.node-settings")).ToHaveClassAsync(new System.Text.RegularExpressions.Regex("hot"));

        // The fleet-wide settings through the view's form: only the fields the operator edited are sent, so carol's
        // change (made after the form was filled) stands; an empty box clears a limit.
        var form = view.Locator(".cluster-form");
        await Assertions.Expect(form.Locator("input.cluster-maxRunning")).ToHaveValueAsync("20");
        await form.Locator("input.cluster-startsPerSecond").FillAsync("40");
        await form.Locator("input.cluster-maxRunning").FillAsync("");
        await form.Locator("button.cluster-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToContainTextAsync("Applied (settings v3): maxRunning 25 → none, startsPerSecond 12.5 → 40", patience);
        var applied = cluster.Settings;
        Assert.Equal((6, (int?)null, 40.0, 13, "alice"), (applied.WorkersPerNode!.Value, applied.MaxRunning, applied.StartsPerSecond!.Value, applied.StartBurst!.Value, applied.UpdatedBy));

        Assert.Empty(errors); // no script errors and no content-security-policy violations

        // A bad value shows the server's message, and nothing changes (the browser reports the 400 it got, nothing else).
        await form.Locator("input.cluster-startBurst").FillAsync("0");
        await form.Locator("button.cluster-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.err")).ToContainTextAsync("startBurst must be between 1 and 1,000,000 (was 0)", patience);
        Assert.Equal(3, cluster.Settings.Version);
        Assert.All(errors, error => Assert.Contains("status of 400", error, StringComparison.Ordinal));

        Assert.Empty(dialogs);
        Directory.CreateDirectory(DashboardBrowserTests.ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = Path.Combine(DashboardBrowserTests.ArtifactsDirectory, "dashboard-cluster.png"), FullPage = true });
    }

    [Fact]
    public async Task Dashboard_ClusterStorageFails_SaysSoInTheView_AndRecovers()
    {
        var cluster = ClusterEndpointTests.NewCluster();
        cluster.Failure = new InvalidOperationException("connection refused");
        await using var server = await ClusterEndpointTests.StartAsync(cluster);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var context = await browser.NewContextAsync(new() { ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" } });
        var page = await context.NewPageAsync();
        await page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());
        var view = page.Locator(".cluster[data-queue='payments']");

        await Assertions.Expect(view.Locator(".cluster-msg")).ToContainTextAsync("HTTP 503", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        cluster.Failure = null;
        await Assertions.Expect(view.Locator(".limit-running .v")).ToHaveTextAsync("12 / none", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(view.Locator(".cluster-msg")).ToHaveTextAsync("");
    }
}
