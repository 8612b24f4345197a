using BoundedWork.Hosting;
using BoundedWork.Testing.Cluster;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The cluster view's fleet-wide pause controls in a real browser (Debian's chromium, driven by Playwright), over an
/// in-memory cluster that keeps pauses as a storage does: each control is behind a confirmation, what it stores is what
/// the form said, and the view shows the pauses in force with the operator's text as text.
/// </summary>
public sealed class ClusterPauseDashboardTests
{
    /// <summary>An ordering key as a careless or hostile client could send it: markup and a script.</summary>
    private const string HostileKey = "<img src=x onerror=\"window.pwned = 1\">";

    [Fact]
    public async Task Dashboard_PausesAndResumesTheQueueAndOneKeyFleetWide_OnlyAfterAConfirmation()
    {
        var cluster = ClusterEndpointTests.NewCluster();
        await using var server = await AdminServer.StartAsync(configure: builder =>
        {
            builder.Services.AddSingleton<IWorkQueueCluster>(cluster);
            builder.Services.AddSingleton<IWorkQueuePauseControl>(cluster);
            builder.Services.AddSingleton<IWorkQueueStorage>(new ClusterQueueStorage());
        });
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        // Each dialog is answered as the test says at that moment: the first pause is dismissed.
        var dashboard = await DashboardPage.OpenAsync(browser, server, new() { Width = 1480, Height = 900 });
        var (page, errors, dialogs) = (dashboard.Page, dashboard.Errors, dashboard.Dialogs);
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        var view = page.Locator(".cluster[data-queue='payments']");
        await Assertions.Expect(view.Locator(".cluster-pause")).ToHaveTextAsync("Not paused.", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });

        var form = view.Locator(".cluster-pause-form");
        await form.Locator("input.cluster-pause-reason").FillAsync("provider outage");
        await form.Locator("input.cluster-pause-for").FillAsync("00:10:00");
        await form.Locator("button.cluster-pause-apply").ClickAsync();
        await WaitForAsync(() => !dialogs.IsEmpty);
        Assert.Contains("Pause payments on every node?", dialogs.Single(), StringComparison.Ordinal);
        Assert.Null((await cluster.GetPausesAsync()).Queue); // dismissed: nothing sent

        dashboard.Accept = true;
        await form.Locator("button.cluster-pause-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToHaveTextAsync("Paused payments fleet-wide.", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        var stored = (await cluster.GetPausesAsync()).Queue;
        Assert.NotNull(stored);
        Assert.Equal(("provider outage", "alice", TimeSpan.FromMinutes(10)), (stored.Reason, stored.By, stored.Until!.Value - stored.Since));
        await Assertions.Expect(view.Locator(".cluster-pause")).ToContainTextAsync("Paused fleet-wide by alice until ", patience);
        await Assertions.Expect(view.Locator(".cluster-pause")).ToContainTextAsync(": provider outage", patience);
        await Assertions.Expect(view.Locator(".cluster-pause")).ToHaveClassAsync(new System.Text.RegularExpressions.Regex("hot"));

        // One key alone, named with markup: stored as typed, shown as text.
        await form.Locator("input.cluster-pause-for").FillAsync("");
        await form.Locator("input.cluster-pause-key").FillAsync(HostileKey);
        await form.Locator("button.cluster-pause-apply").ClickAsync();
        await Assertions.Expect(view.Locator(".cluster-pause")).ToContainTextAsync("Key '" + HostileKey + "' paused by alice until resumed: provider outage", patience);
        Assert.Equal(HostileKey, Assert.Single((await cluster.GetPausesAsync()).Keys).Key);
        Assert.Equal(0, await view.Locator("img").CountAsync());
        Assert.True(await page.EvaluateAsync<bool>("() => window.pwned === undefined"));

        // Resume the key, then the queue: the view says each, and the storage holds no pause.
        await form.Locator("button.cluster-resume-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToHaveTextAsync("Resumed key '" + HostileKey + "' of payments fleet-wide.", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await form.Locator("input.cluster-pause-key").FillAsync("");
        await form.Locator("button.cluster-resume-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.ok")).ToHaveTextAsync("Resumed payments fleet-wide.", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(view.Locator(".cluster-pause")).ToHaveTextAsync("Not paused.", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        var after = await cluster.GetPausesAsync();
        Assert.Null(after.Queue);
        Assert.Empty(after.Keys);

        // A pause without a reason is refused by the server, whose message the form shows; nothing is stored.
        await form.Locator("input.cluster-pause-reason").FillAsync("");
        await form.Locator("button.cluster-pause-apply").ClickAsync();
        await Assertions.Expect(form.Locator(".msg.err")).ToContainTextAsync("reason", patience);
        Assert.Null((await cluster.GetPausesAsync()).Queue);
        Assert.All(errors, error => Assert.Contains("status of 400", error, StringComparison.Ordinal));
    }

    /// <summary>Waits (up to the safety limit) until <paramref name="condition"/> holds.</summary>
    private static async Task WaitForAsync(Func<bool> condition)
    {
        var deadline = DateTime.UtcNow + TestKit.Safety;
        while (!condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "The condition did not hold within the safety limit.");
            await Task.Delay(20); // the poll's interval: the wait is for the browser's dialog, up to the safety limit
        }
    }
}
