using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// A console mapped with <c>AllowAnonymousAdmin()</c>, driven by a real browser: its own dashboard can change settings,
/// and a page of another site whose name resolves to this machine (DNS rebinding, reproduced with Chromium's host
/// resolver rules) cannot.
/// </summary>
public sealed class AnonymousConsoleBrowserTests
{
    private const string RebindingHost = "rebinding.example";

    [Fact]
    public async Task AnonymousDashboard_OnLoopback_ResizesThroughThePage()
    {
        await using var server = await AdminServer.StartAsync(anonymous: true);
        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var payments = await OpenAndResizeAsync(browser, server.BaseAddress);

        await Assertions.Expect(payments.Locator("span.target")).ToHaveTextAsync("6", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Equal(6, server.Payments.Settings.WorkerCount);
        Assert.Equal("anonymous", Assert.Single(server.Logs.WithEvent("SettingsChanged")).GetStructuredStateValue("User"));
    }

    [Fact]
    public async Task AnonymousDashboard_ReachedThroughAnotherSitesName_CannotResize()
    {
        await using var server = await AdminServer.StartAsync(anonymous: true);
        await using var browser = await DashboardBrowserTests.LaunchAsync($"--host-resolver-rules=MAP {RebindingHost} 127.0.0.1");
        var payments = await OpenAndResizeAsync(browser, new UriBuilder(server.BaseAddress) { Host = RebindingHost }.Uri);

        // The page shows the server's answer in the row's panel.
        var message = payments.Page.Locator("tr[data-executor='payments'] + tr.more-row .msg.err");
        await Assertions.Expect(message).ToContainTextAsync("AllowAnonymousAdmin", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Equal(2, server.Payments.Settings.WorkerCount);
        Assert.Equal("not_loopback_host", Assert.Single(server.Logs.WithEvent("SettingsChangeRefused")).GetStructuredStateValue("Reason"));
    }

    private static async Task<ILocator> OpenAndResizeAsync(IBrowser browser, Uri baseAddress)
    {
        var page = await (await browser.NewContextAsync()).NewPageAsync();
        var response = await page.GotoAsync(new Uri(baseAddress, "/bounded-work/").ToString());
        Assert.Equal(200, response!.Status);
        var payments = page.Locator("tr[data-executor='payments']");
        await Assertions.Expect(payments).ToBeVisibleAsync(new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await payments.Locator("input.workers-input").FillAsync("6");
        await payments.Locator("button.workers-set").ClickAsync();
        return payments;
    }
}
