using System.Collections.Concurrent;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// A dashboard opened in the browser as alice (role ops), with what the tests watch: the page's console errors, and
/// its confirmation dialogs, each recorded and answered as <see cref="Accept"/> says at that moment (dismissed until set).
/// </summary>
internal sealed class DashboardPage
{
    private volatile bool _accept;

    private DashboardPage(IPage page) => Page = page;

    public IPage Page { get; }

    public ConcurrentQueue<string> Errors { get; } = new();

    public ConcurrentQueue<string> Dialogs { get; } = new();

    /// <summary>Gets or sets a value indicating whether the next dialogs are accepted (otherwise dismissed).</summary>
    public bool Accept
    {
        get => _accept;
        set => _accept = value;
    }

    /// <summary>Opens the console's dashboard of <paramref name="server"/> in a new context of <paramref name="browser"/>.</summary>
    public static async Task<DashboardPage> OpenAsync(IBrowser browser, AdminServer server, ViewportSize? viewport = null)
    {
        var context = await browser.NewContextAsync(new()
        {
            ViewportSize = viewport,
            ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" },
        });
        var watched = new DashboardPage(await context.NewPageAsync());
        watched.Page.Console += (_, message) =>
        {
            if (message.Type == "error")
            {
                watched.Errors.Enqueue(message.Text);
            }
        };
        watched.Page.Dialog += (_, dialog) =>
        {
            watched.Dialogs.Enqueue(dialog.Message);
            _ = watched.Accept ? dialog.AcceptAsync() : dialog.DismissAsync();
        };
        await watched.Page.GotoAsync(new Uri(server.BaseAddress, "bounded-work/").ToString());
        return watched;
    }
}
