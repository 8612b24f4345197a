using System.Globalization;
using System.Text.RegularExpressions;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
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
        using var release = new ReleasedOnDispose();
        server.Payments.Execute(release.Wait);
        Assert.True(SpinWait.SpinUntil(() => server.Payments.GetStatistics().SlowWorkerCount == 1, TestKit.Safety), "The item never became slow.");
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server);

        await Assertions.Expect(page.Locator("tr[data-executor='payments'] span.slow")).ToContainTextAsync("1 slow", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
    }

    [Fact]
    public async Task Dashboard_SentinelDiagnosed_ThreadPoolPanelShowsTheLastDiagnosisWithItsAdvice()
    {
        var diagnosis = new BoundedWork.Hosting.ThreadPoolDiagnosis
        {
            DiagnosedAt = DateTimeOffset.UtcNow,
            IsStarved = true,
            Verdict = "STARVED: 6 of 6 pool threads are blocked in OrdersController.Get (route orders/{id}) (waits on Task.Result: sync over async), and work is queuing behind them.",
            BlockingSites = ["6 of 6 pool threads blocked in OrdersController.Get (route orders/{id}): waits on Task.Result: sync over async"],
            Evidence = ["Work waited for a pool thread in every one of 4 readings."],
            Advice = ["Await the task in OrdersController.Get (route orders/{id}) instead of blocking on it.", "    await executor.RunAsync(() => theBlockingCall(...));"],
        };
        await using var server = await AdminServer.StartAsync(configure: builder =>
            builder.Services.AddSingleton<BoundedWork.Hosting.IThreadPoolDiagnosisSource>(new FakeSource(diagnosis, null)));
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server);

        var panel = page.Locator("#pool-diagnosis");
        await Assertions.Expect(panel).ToContainTextAsync("STARVED: 6 of 6 pool threads are blocked in OrdersController.Get (route orders/{id})", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.Equal(string.Join("\n", diagnosis.Advice), await panel.GetAttributeAsync("title"));
    }

    [Fact]
    public async Task Dashboard_PauseAndResumeThroughThePage_BehindAConfirmation_AndShownWithTheReason()
    {
        await using var server = await AdminServer.StartAsync();
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server);
        var dialogs = 0;
        page.Dialog += async (_, dialog) =>
        {
            Interlocked.Increment(ref dialogs);
            await dialog.AcceptAsync();
        };
        var payments = page.Locator("tr[data-executor='payments']");
        await payments.Locator("button.more-toggle").ClickAsync();
        var more = page.Locator("tr[data-executor='payments'] + tr.more-row");
        await more.Locator("input.pause-reason").FillAsync("provider outage");
        await more.Locator("input.pause-for").FillAsync("00:10:00");
        await more.Locator("button.pause").ClickAsync();
        await Assertions.Expect(more.Locator(".msg.ok")).ToContainTextAsync("provider outage", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.True(server.Payments.IsPaused);
        Assert.Equal("alice", Assert.Single(server.Logs.WithEvent("ExecutorPaused")).GetStructuredStateValue("User"));
        await Assertions.Expect(payments.Locator("td").First).ToContainTextAsync("paused until", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });

        await more.Locator("button.resume").ClickAsync();
        await Assertions.Expect(more.Locator(".msg.ok")).ToContainTextAsync("Resumed", new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        Assert.False(server.Payments.IsPaused);
        Assert.Equal(2, Volatile.Read(ref dialogs));
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
        await Assertions.Expect(line).ToHaveClassAsync(new Regex("hot"));
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
        Assert.Equal("alice", Assert.Single(server.Logs.WithEvent("SettingsChanged")).GetStructuredStateValue("User"));

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

    /// <summary>
    /// The server stops answering the console (its data requests are held at a gate, as a starved ThreadPool holds
    /// them): by 3 s after the last answer, on the page's own clock, the page says so, shows how old its numbers
    /// are, no longer calls the pool healthy, and tells the operator what to do: the local socket's commands when one
    /// is configured, how to configure one otherwise. When the server answers again, the page is live again.
    /// </summary>
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Dashboard_ServerStopsAnswering_SaysSoWithinThreeSeconds_WithTheDataAgeAndWhatToDo(bool localSocket)
    {
        var gate = new ConsoleGate();
        var socketPath = localSocket ? Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock") : null;
        await using var server = await AdminServer.StartAsync(configure: builder =>
        {
            builder.Services.AddSingleton<IStartupFilter>(gate);
            if (socketPath is not null)
            {
                builder.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = socketPath);
            }
        });
        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server, beforeLoad: p => p.Clock.InstallAsync());
        var banner = page.Locator("#banner");
        var status = page.Locator("#pool-status");
        var patience = new LocatorAssertionsToHaveTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        await Assertions.Expect(status).ToHaveTextAsync("healthy", patience);
        await Assertions.Expect(banner).ToBeHiddenAsync();

        // Stop answering. Once a request is held, no refresh can complete, so the page's last answer is final.
        gate.Close();
        await gate.Held.WaitAsync(TestKit.Safety);

        // Stop the page's clock, then run it to 3 s after the last answer (unless it is already past that).
        await PauseClockAsync(page);
        var pausedAt = await page.EvaluateAsync<long>("Date.now()");
        var answeredAtText = await page.Locator("#updated").GetAttributeAsync("data-answered-at"); // the page's clock at the last answer
        var answeredAt = answeredAtText is null ? pausedAt : long.Parse(answeredAtText, CultureInfo.InvariantCulture);
        if (answeredAt + 3000 > pausedAt)
        {
            await page.Clock.RunForAsync(answeredAt + 3000 - pausedAt);
        }

        var contains = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        await Assertions.Expect(banner).ToBeVisibleAsync(new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(banner).ToContainTextAsync("The server has not answered for", contains);
        await Assertions.Expect(banner).ToContainTextAsync(new Regex(@"The numbers below are from \d{1,2}:\d{2}:\d{2}.*, \d+\.\d\ss old"), contains);
        await Assertions.Expect(status).ToHaveTextAsync("no answer", patience);
        await Assertions.Expect(page.Locator("#updated")).ToContainTextAsync(new Regex(@"last answer .*\d+\.\d\ss ago"), contains);
        Assert.NotNull(answeredAtText);
        if (socketPath is not null)
        {
            await Assertions.Expect(banner).ToContainTextAsync($"curl -s --unix-socket {socketPath} http://localhost/executors", contains);
            await Assertions.Expect(banner).ToContainTextAsync($"curl -s --unix-socket {socketPath} -X PUT http://localhost/executors/", contains);
        }
        else
        {
            await Assertions.Expect(banner).ToContainTextAsync("o.LocalSocketPath", contains);
        }

        Directory.CreateDirectory(ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = Path.Combine(ArtifactsDirectory, $"dashboard-no-answer{(localSocket ? "-socket" : "")}.png") });

        // The server answers again: the page is live again.
        gate.Open();
        await page.Clock.ResumeAsync();
        await Assertions.Expect(banner).ToBeHiddenAsync(new() { Timeout = (float)TestKit.Safety.TotalMilliseconds });
        await Assertions.Expect(status).ToHaveTextAsync("healthy", patience);
        await Assertions.Expect(page.Locator("#updated")).ToContainTextAsync("updated ", contains);
    }

    /// <summary>
    /// At a laptop's 1280 x 800 (and at 1400 x 900) every column and every row's controls (the worker count box,
    /// <b>Set</b>, <b>More</b>) are inside the window, and the page does not scroll sideways, with counters in the
    /// millions, a durable queue's storage line, a rate limit, an adaptive panel and a slow worker on screen.
    /// </summary>
    [Theory]
    [InlineData(1280, 800)]
    [InlineData(1400, 900)]
    public async Task Dashboard_AtLaptopWidths_EveryColumnAndControlIsInsideTheWindow(int width, int height)
    {
        var storage = new StandInStorage
        {
            QueueName = "notifications-email",
            Statistics = new WorkQueueStorageStatistics { Ready = 1_234_567, Running = 16, Scheduled = 2_345, DeadLettered = 12_345, OldestReadyAge = TimeSpan.FromSeconds(754.3), IsAvailable = true, ReadAt = DateTimeOffset.UtcNow },
        };
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            services.AddBoundedExecutor("payments", o => { o.WorkerCount = 4; o.MaxWorkerCount = 64; o.QueueCapacity = 10_000; o.RejectionPolicy = RejectionPolicy.Wait; o.WaitTimeout = TimeSpan.FromSeconds(30); o.AdaptiveMode = AdaptiveMode.Advisory; });
            services.AddBoundedExecutor("notifications-email", o => { o.WorkerCount = 1; o.MaxWorkerCount = 16; o.QueueCapacity = 10; o.RejectionPolicy = RejectionPolicy.Abort; });
            services.AddBoundedExecutor("reports-nightly", o => { o.WorkerCount = 1; o.MaxWorkerCount = 4; o.QueueCapacity = 100; o.SlowItemThreshold = TimeSpan.FromMilliseconds(20); o.PermitsPerSecond = 100_000; o.PermitBurst = 1_000; });
            services.AddSingleton<IWorkQueueStorage>(storage);
        });

        // Counters in the millions and the hundred thousands, and a worker past its slow-item threshold.
        for (var i = 0; i < 1_234_567; i++)
        {
            await server.Payments.ExecuteAsync(static () => { });
        }

        using var release = new ReleasedOnDispose();
        var mail = server.Executor("notifications-email");
        for (var i = 0; i < 123_456; i++)
        {
            mail.TryExecute(release.Wait);
        }

        var reports = server.Executor("reports-nightly");
        reports.Execute(release.Wait);
        Assert.True(SpinWait.SpinUntil(() => reports.GetStatistics().SlowWorkerCount == 1, TestKit.Safety), "The item never became slow.");

        await using var browser = await LaunchAsync();
        var page = await OpenDashboardAsync(browser, server, width, height);
        var patience = new LocatorAssertionsToContainTextOptions { Timeout = (float)TestKit.Safety.TotalMilliseconds };
        await Assertions.Expect(page.Locator("tr[data-executor='payments'] td.completed")).ToContainTextAsync("1,234,567", patience);
        await Assertions.Expect(page.Locator("tr[data-executor='notifications-email'] span.storage")).ToContainTextAsync("1,234,567 ready", patience);
        await Assertions.Expect(page.Locator("tr[data-executor='reports-nightly'] span.slow")).ToContainTextAsync("1 slow", patience);
        await Assertions.Expect(page.Locator("tr[data-adaptive-of='payments'] .adaptive-mode")).ToContainTextAsync("advisory", patience);
        await Assertions.Expect(page.Locator("tr[data-executor='reports-nightly'] .ratelimit")).ToContainTextAsync("rate limit 100,000/s, burst 1,000", patience);

        // Nothing is cut off: no cell reaches past the right edge and the page does not scroll sideways.
        var outside = await page.EvaluateAsync<string[]>("""
            () => {
              const width = document.documentElement.clientWidth;
              const outside = [...document.querySelectorAll("thead th, tr[data-executor] td, section.pool > *, tr.adaptive-row td, .adaptive > *, .adaptive td")]
                .filter(e => { const r = e.getBoundingClientRect(); return r.left < 0 || r.right > width + 0.5; })
                .map(e => (e.textContent || e.tagName).trim().slice(0, 40) + " at " + Math.round(e.getBoundingClientRect().left) + ".." + Math.round(e.getBoundingClientRect().right));
              if (document.documentElement.scrollWidth > width) outside.push("the page is " + document.documentElement.scrollWidth + " px wide");
              return outside;
            }
            """);
        var columns = await page.EvaluateAsync<string[]>("""() => [...document.querySelectorAll("thead th")].map(th => th.textContent + " " + Math.round(th.getBoundingClientRect().width))""");
        Assert.True(outside.Length == 0, $"Outside the {width} px window: {string.Join("; ", outside)}. Column widths: {string.Join(", ", columns)}.");

        foreach (var name in new[] { "payments", "notifications-email", "reports-nightly" })
        {
            var row = page.Locator($"tr[data-executor='{name}']");
            foreach (var control in new[] { "input.workers-input", "button.workers-set", "button.more-toggle" })
            {
                AssertInsideWindow(await row.Locator(control).BoundingBoxAsync(), $"{name}: {control}", width, height);
            }
        }

        // The "More" panel of a row wraps inside the window too.
        await page.Locator("tr[data-executor='payments'] button.more-toggle").ClickAsync();
        var more = page.Locator("tr[data-executor='payments'] + tr.more-row");
        foreach (var control in new[] { "input.capacity-input", "select.policy-input", "input.timeout-input", "button.apply" })
        {
            AssertInsideWindow(await more.Locator(control).BoundingBoxAsync(), $"More: {control}", width, height);
        }

        Directory.CreateDirectory(ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = Path.Combine(ArtifactsDirectory, $"dashboard-{width}x{height}.png") });
    }

    /// <summary>Stops the page's clock about now: from then on, only <c>Clock.RunForAsync</c> fires the page's timers.</summary>
    private static async Task PauseClockAsync(IPage page)
    {
        var now = await page.EvaluateAsync<long>("Date.now()");
        try
        {
            await page.Clock.PauseAtAsync(DateTimeOffset.FromUnixTimeMilliseconds(now + 500).UtcDateTime);
        }
        catch (PlaywrightException ex) when (ex.Message.Contains("to the past", StringComparison.Ordinal))
        {
            // The page's clock ran past that time before the call reached it; it is stopped now, so pause where it stands.
            now = await page.EvaluateAsync<long>("Date.now()");
            await page.Clock.PauseAtAsync(DateTimeOffset.FromUnixTimeMilliseconds(now).UtcDateTime);
        }
    }

    private static void AssertInsideWindow(LocatorBoundingBoxResult? box, string what, int width, int height)
    {
        Assert.NotNull(box);
        Assert.True(
            box.X >= 0 && box.Y >= 0 && box.X + box.Width <= width && box.Y + box.Height <= height,
            $"{what} is not inside the {width} x {height} window: x {box.X:0}..{box.X + box.Width:0}, y {box.Y:0}..{box.Y + box.Height:0}.");
    }

    internal static async Task<IBrowser> LaunchAsync(params string[] extraArgs)
    {
        Assert.True(File.Exists(Chromium), $"{Chromium} is missing: run the tests with ./test.sh, which installs Debian's chromium (apt-get install -y chromium).");
        var playwright = await Playwright.CreateAsync();
        var browser = await playwright.Chromium.LaunchAsync(new() { ExecutablePath = Chromium, Headless = true, Args = [.. s_chromiumArgs, .. extraArgs] });
        browser.Disconnected += (_, _) => playwright.Dispose();
        return browser;
    }

    internal static async Task<IPage> OpenDashboardAsync(IBrowser browser, AdminServer server, int width = 1480, int height = 900, Func<IPage, Task>? beforeLoad = null)
    {
        var context = await browser.NewContextAsync(new()
        {
            ViewportSize = new() { Width = width, Height = height },
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
        if (beforeLoad is not null)
        {
            await beforeLoad(page);
        }

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
                        payments.Execute(static () => Thread.Sleep(20), _stop.Token); // load: an item that takes a while
                        if (i++ % 4 == 0)
                        {
                            mail.Execute(static () => Thread.Sleep(60)); // load
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

    /// <summary>
    /// Makes the console stop answering on demand, the way a starved ThreadPool does, without starving anything: while
    /// the gate is closed, every request for the executors or the ThreadPool waits (asynchronously, holding no thread)
    /// until the gate opens or the client gives up. The page itself is still served.
    /// </summary>
    private sealed class ConsoleGate : IStartupFilter
    {
        private readonly Lock _sync = new();
        private TaskCompletionSource? _closed;
        private TaskCompletionSource _held = NewSignal();

        /// <summary>Gets a task that completes when a request has been held since the gate last closed.</summary>
        public Task Held
        {
            get
            {
                lock (_sync)
                {
                    return _held.Task;
                }
            }
        }

        public void Close()
        {
            lock (_sync)
            {
                _closed ??= NewSignal();
                _held = NewSignal();
            }
        }

        public void Open()
        {
            TaskCompletionSource? closed;
            lock (_sync)
            {
                closed = _closed;
                _closed = null;
            }

            closed?.TrySetResult();
        }

        public Action<IApplicationBuilder> Configure(Action<IApplicationBuilder> next) => app =>
        {
            app.Use(async (context, nextMiddleware) =>
            {
                var path = context.Request.Path.Value ?? string.Empty;
                Task? wait = null;
                lock (_sync)
                {
                    if (_closed is not null && (path.EndsWith("/executors", StringComparison.Ordinal) || path.EndsWith("/threadpool", StringComparison.Ordinal)))
                    {
                        wait = _closed.Task;
                        _held.TrySetResult();
                    }
                }

                if (wait is not null)
                {
                    try
                    {
                        await wait.WaitAsync(context.RequestAborted);
                    }
                    catch (OperationCanceledException)
                    {
                        return; // the page gave up on this request
                    }
                }

                await nextMiddleware(context);
            });
            next(app);
        };

        private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);
    }

    /// <summary>
    /// Holds the items that wait on it until it is disposed, so a failing assertion still lets the server shut down
    /// at once (it is disposed before the server, which is declared earlier).
    /// </summary>
    private sealed class ReleasedOnDispose : IDisposable
    {
        private readonly ManualResetEventSlim _release = new();

        public void Wait() => _release.Wait(TestKit.Safety);

        public void Dispose() => _release.Set();
    }

    /// <summary>A queue storage whose statistics the test sets, to check how the page shows them.</summary>
    internal sealed class StandInStorage : IWorkQueueStorage
    {
        public string QueueName { get; init; } = "payments";

        public string StorageKind => "PostgreSql";

        public WorkQueueStorageStatistics Statistics { get; set; } = new();
    }
}
