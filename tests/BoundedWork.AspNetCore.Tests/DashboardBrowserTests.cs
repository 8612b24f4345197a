using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// Loads the dashboard in a real browser (Debian's chromium, driven by Playwright) against a real Kestrel server with
/// executors doing live work.
/// </summary>
public sealed class DashboardBrowserTests
{
    private const string Chromium = "/usr/bin/chromium";

    private static readonly string[] s_chromiumArgs =
    [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ];

    /// <summary>Where the screenshots go: an artifacts folder beside the test assembly.</summary>
    public static string ArtifactsDirectory => Path.Combine(AppContext.BaseDirectory, "artifacts");

    [Fact]
    public async Task Dashboard_AWorkerPastTheSlowItemThreshold_IsShownAsSlow()
    {
        await using var server = await AdminServer.StartAsync(executors: services =>
            services.AddBoundedExecutor("payments", o => { o.WorkerCount = 2; o.SlowItemThreshold = TimeSpan.FromMilliseconds(20); }));
        using var release = new ManualResetEventSlim();
        server.Payments.Execute(() => release.Wait(TestKit.Safety));
        Assert.True(SpinWait.SpinUntil(() => server.Payments.GetStatistics().SlowWorkerCount == 1, TestKit.Safety), "The item never became slow.");
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server);

        await Assertions.Expect(page.Locator("tr[data-executor='payments'] span.slow")).ToContainTextAsync("1 slow", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        release.Set();
    }

    [Fact]
    public async Task Dashboard_AQueueWithDurableStorage_ShowsTheStoredItems_AndWhenTheStorageIsUnreachable()
    {
        var storage = new StandInStorage
        {
            Statistics = new WorkQueueStorageStatistics { Ready = 1234, Running = 4, Scheduled = 2, DeadLettered = 1, OldestReadyAge = TimeSpan.FromSeconds(3.5), IsAvailable = true, ReadAt = DateTimeOffset.UtcNow },
        };
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            services.AddBoundedExecutor("payments", o => o.WorkerCount = 2);
            services.AddSingleton<IWorkQueueStorage>(storage);
        });
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server);
        var line = page.Locator("tr[data-executor='payments'] span.storage");
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };

        await Assertions.Expect(line).ToContainTextAsync("PostgreSql: 1,234 ready (oldest 3.5 s), 4 running, 2 retrying, 1 dead", patience);

        storage.Statistics = storage.Statistics with { IsAvailable = false, LastError = "connection refused" };
        await Assertions.Expect(line).ToContainTextAsync("PostgreSql unreachable: connection refused", patience);
        await Assertions.Expect(line).ToHaveClassAsync(new System.Text.RegularExpressions.Regex("hot"));
    }

    [Fact]
    public async Task Dashboard_LiveExecutors_ShowsChangingNumbersAndResizesThroughThePage()
    {
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            services.AddBoundedExecutor("payments", o => { o.WorkerCount = 2; o.MaxWorkerCount = 16; o.QueueCapacity = 200; o.RejectionPolicy = RejectionPolicy.Wait; });
            services.AddBoundedExecutor("mail", o => { o.WorkerCount = 1; o.MaxWorkerCount = 4; o.QueueCapacity = 20; o.RejectionPolicy = RejectionPolicy.Discard; });
            services.AddBoundedExecutor("reports", o => { o.WorkerCount = 1; o.MaxWorkerCount = 4; o.QueueCapacity = 50; });
        });
        using var load = new LiveLoad(server.Payments, server.Executor("mail"));
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server);
        var payments = page.Locator("tr[data-executor='payments']");

        // Numbers change on their own: the page refreshes every second.
        var completedBefore = long.Parse(await payments.Locator("td.completed").TextContentAsync() ?? "", NumberStyles.AllowThousands, CultureInfo.InvariantCulture);
        await page.WaitForFunctionAsync(
            "before => Number(document.querySelector(\"tr[data-executor='payments'] td.completed\").textContent.replace(/,/g, '')) > before",
            completedBefore,
            new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });

        // Resize through the page's control.
        await payments.Locator("input.workers-input").FillAsync("6");
        await payments.Locator("button.workers-set").ClickAsync();
        await Assertions.Expect(payments.Locator("span.target")).ToHaveTextAsync("6", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Equal(6, server.Payments.Settings.WorkerCount);
        Assert.Equal("alice", Assert.Single(server.Logs.WithEvent("SettingsChanged")).State["User"]);

        // The other settings, through the row's "More" panel.
        var reports = page.Locator("tr[data-executor='reports']");
        await reports.Locator("button.more-toggle").ClickAsync();
        var more = page.Locator("tr[data-executor='reports'] + tr.more-row");
        await more.Locator("input.capacity-input").FillAsync("75");
        await more.Locator("select.policy-input").SelectOptionAsync("Wait");
        await more.Locator("input.timeout-input").FillAsync("00:00:10");
        await more.Locator("button.apply").ClickAsync();
        await Assertions.Expect(more.Locator(".msg.ok")).ToContainTextAsync("capacity 75", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Equal(
            new BoundedExecutorSettings { WorkerCount = 1, QueueCapacity = 75, RejectionPolicy = RejectionPolicy.Wait, WaitTimeout = TimeSpan.FromSeconds(10), SlowItemThreshold = TimeSpan.FromSeconds(30), QueueWaitThreshold = Timeout.InfiniteTimeSpan },
            server.Executor("reports").Settings);

        // A bad value shows the server's message and changes nothing.
        await more.Locator("input.capacity-input").FillAsync("0");
        await more.Locator("button.apply").ClickAsync();
        await Assertions.Expect(more.Locator(".msg.err")).ToContainTextAsync("queueCapacity must be at least 1", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Equal(75, server.Executor("reports").Settings.QueueCapacity);

        await Assertions.Expect(page.Locator("#pool-status")).ToHaveTextAsync("healthy", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Directory.CreateDirectory(ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = Path.Combine(ArtifactsDirectory, "dashboard.png"), FullPage = true });
    }

    [Fact]
    public async Task Dashboard_FiftyExecutors_ListsAllAndFilters()
    {
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            for (var i = 1; i <= 50; i++)
            {
                services.AddBoundedExecutor($"queue-{i:00}", o => { o.WorkerCount = 1; o.MaxWorkerCount = 4; o.QueueCapacity = 10; });
            }
        });
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server);

        await Assertions.Expect(page.Locator("tr[data-executor]")).ToHaveCountAsync(50);
        await page.Locator("#filter").FillAsync("queue-4");
        await Assertions.Expect(page.Locator("tr[data-executor]:visible")).ToHaveCountAsync(10);
        await page.Locator("#filter").FillAsync("");
        await Assertions.Expect(page.Locator("tr[data-executor]:visible")).ToHaveCountAsync(50);

        // Resize the last one, far down the page.
        var last = page.Locator("tr[data-executor='queue-50']");
        await last.Locator("input.workers-input").FillAsync("3");
        await last.Locator("button.workers-set").ClickAsync();
        await Assertions.Expect(last.Locator("span.target")).ToHaveTextAsync("3");
        Assert.Equal(3, server.Executor("queue-50").Settings.WorkerCount);
        Directory.CreateDirectory(ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = Path.Combine(ArtifactsDirectory, "dashboard-50.png") });
    }

    internal static async Task<IBrowser> LaunchAsync(params string[] extraArgs)
    {
        Assert.True(File.Exists(Chromium), $"{Chromium} is missing: install Debian's chromium (apt-get install -y chromium); .ci/run does.");
        var playwright = await Playwright.CreateAsync();
        var browser = await playwright.Chromium.LaunchAsync(new() { ExecutablePath = Chromium, Headless = true, Args = [.. s_chromiumArgs, .. extraArgs] });
        browser.Disconnected += (_, _) => playwright.Dispose();
        return browser;
    }

    private static async Task<IPage> OpenDashboardAsync(IBrowser browser, AdminServer server)
    {
        var context = await browser.NewContextAsync(new()
        {
            ViewportSize = new() { Width = 1480, Height = 900 },
            ExtraHTTPHeaders = new Dictionary<string, string> { ["X-Test-User"] = "alice", ["X-Test-Roles"] = "ops" },
        });
        var page = await context.NewPageAsync();
        var errors = new List<string>();
        page.Console += (_, message) =>
        {
            if (message.Type == "error")
            {
                errors.Add(message.Text);
            }
        };
        var response = await page.GotoAsync(new Uri(server.BaseAddress, "/bounded-work/").ToString());
        Assert.Equal(200, response!.Status);
        await Assertions.Expect(page.Locator("tr[data-executor]").First).ToBeVisibleAsync(new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Empty(errors); // no script errors and no content-security-policy violations
        return page;
    }

    /// <summary>Keeps items flowing: payments gets a steady stream of short blocking items, mail a burst it partly discards.</summary>
    private sealed class LiveLoad : IDisposable
    {
        private readonly CancellationTokenSource _stop = new();
        private readonly Thread _thread;

        public LiveLoad(BoundedExecutor payments, BoundedExecutor mail)
        {
            _thread = new Thread(() =>
            {
                var i = 0;
                while (!_stop.IsCancellationRequested)
                {
                    try
                    {
                        payments.Execute(static () => Thread.Sleep(20), _stop.Token);
                        if (i++ % 4 == 0)
                        {
                            mail.Execute(static () => Thread.Sleep(60));
                        }
                    }
                    catch (OperationCanceledException)
                    {
                        return;
                    }
                    catch (RejectedExecutionException)
                    {
                        return; // shut down with the server
                    }
                }
            })
            { IsBackground = true, Name = "dashboard test load" };
            _thread.Start();
        }

        public void Dispose()
        {
            _stop.Cancel();
            _thread.Join(TestKit.Safety);
            _stop.Dispose();
        }
    }

    /// <summary>A queue storage whose statistics the test sets, to check how the page shows them.</summary>
    private sealed class StandInStorage : IWorkQueueStorage
    {
        public string QueueName => "payments";

        public string StorageKind => "PostgreSql";

        public WorkQueueStorageStatistics Statistics { get; set; } = new();
    }
}
