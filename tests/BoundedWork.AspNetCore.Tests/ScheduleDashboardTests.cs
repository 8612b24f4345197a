using System.Collections.Concurrent;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The dashboard's schedules panel in a real browser: in-memory and durable schedules, operated and audited.</summary>
public sealed class ScheduleDashboardTests
{
    private const string HostileName = "<img src=x onerror=\"window.pwned = 1\">\r\nforged";

    [Fact]
    public async Task Dashboard_ListsBothKinds_PausesTriggersRetimesAndAdds_NamesAsText()
    {
        var durable = new FakeDurableSchedules("reconciliation");
        durable.Define("settlements", "reconciliation", RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"));
        durable.Define(HostileName, "reconciliation", RecurringSchedule.Every(TimeSpan.FromMinutes(5)));
        await using var server = await AdminServer.StartAsync(configure: b =>
        {
            b.Services.AddSingleton<IDurableSchedules>(durable);
            b.Services.AddRecurring("pulse", TimeSpan.FromHours(1), "mail", _ => { });
        });
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var context = await browser.NewContextAsync(new()
        {
            ViewportSize = new() { Width = 1480, Height = 900 },
            ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" },
        });
        var page = await context.NewPageAsync();
        var errors = new ConcurrentQueue<string>();
        page.Console += (_, message) =>
        {
            if (message.Type == "error")
            {
                errors.Enqueue(message.Text);
            }
        };
        page.Dialog += (_, dialog) => _ = dialog.DismissAsync();
        await page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        var rows = page.Locator("#sched-rows tr[data-schedule]");

        await Assertions.Expect(rows).ToHaveCountAsync(3, new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        var settlements = page.Locator("#sched-rows tr[data-schedule='settlements']");
        await Assertions.Expect(settlements.Locator("td.sched-kind")).ToHaveTextAsync("durable");
        await Assertions.Expect(settlements.Locator("td.sched-timing")).ToHaveTextAsync("cron '0 2 * * *' in Europe/Berlin");
        await Assertions.Expect(settlements.Locator("td.sched-where")).ToHaveTextAsync("reconciliation");
        await Assertions.Expect(page.Locator("#sched-rows tr[data-schedule='pulse'] td.sched-kind")).ToHaveTextAsync("in memory");
        Assert.Equal(HostileName, await rows.Nth(2).Locator("td.sched-name").TextContentAsync());
        Assert.Equal(0, await page.Locator("#schedules img").CountAsync());
        Assert.True(await page.EvaluateAsync<bool>("() => window.pwned === undefined"));

        await settlements.Locator("button.sched-toggle").ClickAsync();
        await Assertions.Expect(page.Locator("#sched-msg")).ToContainTextAsync("Paused settlements", patience);
        Assert.True((await durable.GetAsync("settlements"))!.IsPaused);
        await Assertions.Expect(settlements.Locator("td.sched-state")).ToHaveTextAsync("paused", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });

        await settlements.Locator("button.sched-trigger").ClickAsync();
        await Assertions.Expect(page.Locator("#sched-msg")).ToContainTextAsync("Triggered settlements", patience);
        Assert.Equal(1, (await durable.GetAsync("settlements"))!.Enqueued);

        // A cron that never fires is refused with the server's message, and nothing changes.
        await settlements.Locator("input.sched-cron").FillAsync("0 0 30 2 *");
        await settlements.Locator("button.sched-retime").ClickAsync();
        await Assertions.Expect(page.Locator("#sched-msg.err")).ToContainTextAsync("never", patience);
        Assert.Equal("cron '0 2 * * *' in Europe/Berlin", (await durable.GetAsync("settlements"))!.Definition);

        await page.Locator("#sched-add-name").FillAsync("daily-report");
        await page.Locator("#sched-add-cron").FillAsync("0 6 * * *");
        await page.Locator("#sched-add-zone").FillAsync("America/New_York");
        await page.Locator("#sched-add-button").ClickAsync();
        await Assertions.Expect(page.Locator("#sched-msg.ok")).ToContainTextAsync("Added daily-report", patience);
        Assert.Equal("cron '0 6 * * *' in America/New_York", (await durable.GetAsync("daily-report"))!.Definition);
        await Assertions.Expect(rows).ToHaveCountAsync(4, new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });

        Assert.All(durable.Changes, c => Assert.EndsWith("by alice", c, StringComparison.Ordinal));
        Assert.All(errors, error => Assert.Contains("status of 400", error, StringComparison.Ordinal));
        Directory.CreateDirectory(DashboardBrowserTests.ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = Path.Combine(DashboardBrowserTests.ArtifactsDirectory, "dashboard-schedules.png"), FullPage = true });
    }
}
