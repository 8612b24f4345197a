using System.Text.Json.Nodes;
using System.Text.RegularExpressions;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The dashboard's adaptive panel and rate-limit line, in a real browser (Chromium) against a real server: an adaptive
/// executor's mode, bounds, pin, decisions and chart; no panel for an executor whose mode is Off; a hostile decision
/// shown as text; an executor's rate limit with its waits.
/// </summary>
public sealed class DashboardAdaptiveBrowserTests
{
    private static readonly float s_patience = (float)TestKit.Safety.TotalMilliseconds;

    /// <summary>
    /// The real controller decides (its Bounds rule brings 6 workers inside 1 to 4), an operator pins 3 for ten minutes,
    /// and items flow: the panel shows the mode, the bounds, the pin and its end, both decisions newest first with their
    /// signals, and a chart whose three series carry the samples (the workers' last value the pinned 3). The executor
    /// whose mode is Off has no panel, and turning the mode off removes the panel.
    /// </summary>
    [Fact]
    public async Task Dashboard_AdaptiveExecutor_ShowsModeBoundsPinDecisionsAndTheChartsSeries_AndNoPanelWhenOff()
    {
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            services.AddBoundedExecutor("payments", o =>
            {
                o.WorkerCount = 6;
                o.MaxWorkerCount = 16;
                o.AdaptiveMode = AdaptiveMode.On;
                o.AdaptiveMinWorkerCount = 1;
                o.AdaptiveMaxWorkerCount = 4;
                o.QueueCapacity = 50;
                o.RejectionPolicy = RejectionPolicy.Wait; // the load's submitter waits for room instead of spinning
            });
            services.AddBoundedExecutor("mail", o => { o.WorkerCount = 1; o.MaxWorkerCount = 4; });
        });
        var payments = server.Payments;
        Assert.True(
            SpinWait.SpinUntil(() => payments.GetWorkerCountDecisions().Any(d => d.Rule == "Bounds"), TestKit.Safety),
            "The watchdog never brought the count inside the adaptive bounds.");
        var bounds = payments.GetWorkerCountDecisions().First(d => d.Rule == "Bounds");
        Assert.Equal((6, 4), (bounds.OldCount, bounds.NewCount));
        payments.Resize(3, TimeSpan.FromMinutes(10));
        var pin = payments.GetWorkerCountDecisions()[^1];
        Assert.Equal(("Pinned", 3), (pin.Rule, pin.NewCount));
        using var load = new SteadyLoad(payments);

        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var page = await DashboardBrowserTests.OpenDashboardAsync(browser, server);
        var panel = page.Locator("tr.adaptive-row[data-adaptive-of='payments']");
        var contains = new LocatorAssertionsToContainTextOptions { Timeout = s_patience };

        await Assertions.Expect(panel.Locator(".adaptive-mode")).ToHaveTextAsync("Adaptive: On", new() { Timeout = s_patience });
        await Assertions.Expect(panel.Locator(".adaptive-bounds")).ToHaveTextAsync("1–4 workers (hard maximum 16)");
        await Assertions.Expect(panel.Locator(".adaptive-pin")).ToContainTextAsync("pinned at 3 until ", contains);
        await Assertions.Expect(panel.Locator(".adaptive-pin")).Not.ToContainTextAsync("unpinned");

        // The decisions, newest first: the pin, then the controller's Bounds decision with its signals.
        var decisions = panel.Locator("tr.decision");
        await Assertions.Expect(decisions.First.Locator("td.rule")).ToHaveTextAsync("Pinned", new() { Timeout = s_patience });
        await Assertions.Expect(decisions.First.Locator("td.change")).ToHaveTextAsync($"{pin.OldCount} → 3");
        await Assertions.Expect(decisions.First.Locator("td.signals")).ToContainTextAsync("by an operator for");
        var boundsRow = decisions.Filter(new() { Has = page.Locator("td.rule", new() { HasTextRegex = new Regex("^Bounds$") }) });
        await Assertions.Expect(boundsRow).ToHaveCountAsync(1);
        await Assertions.Expect(boundsRow.Locator("td.change")).ToHaveTextAsync("6 → 4");
        await Assertions.Expect(boundsRow.Locator("td.signals")).ToContainTextAsync("min queue wait");
        Assert.Equal(bounds.Description, await boundsRow.GetAttributeAsync("title"));

        // The chart's series fill as the page refreshes: workers at the pinned 3, the queue's wait, and the run time of
        // the items the load keeps finishing.
        await page.WaitForFunctionAsync(
            """
            () => {
              const series = name => document.querySelector(`tr[data-adaptive-of='payments'] svg.adaptive-chart path[data-series='${name}']`);
              const workers = series("workers"), wait = series("queue-wait"), run = series("run-time");
              return workers && Number(workers.dataset.points) >= 2 && workers.dataset.last === "3"
                && Number(wait.dataset.points) >= 2 && Number(run.dataset.points) >= 1 && run.getAttribute("d").startsWith("M");
            }
            """,
            null,
            new() { Timeout = s_patience });
        await Assertions.Expect(panel.Locator(".legend .workers")).ToContainTextAsync("workers 3 (bounds 1–4)");
        await Assertions.Expect(panel.Locator(".legend .run-time")).ToContainTextAsync("run time ");

        // No panel for the executor whose mode is Off.
        await Assertions.Expect(page.Locator("tr[data-executor='mail']")).ToBeVisibleAsync();
        await Assertions.Expect(page.Locator("tr.adaptive-row[data-adaptive-of='mail']")).ToHaveCountAsync(0);
        await Assertions.Expect(page.Locator("tr.adaptive-row")).ToHaveCountAsync(1);

        Directory.CreateDirectory(DashboardBrowserTests.ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = Path.Combine(DashboardBrowserTests.ArtifactsDirectory, "dashboard-adaptive.png"), FullPage = true });

        // Turned off: the panel goes at the next refresh.
        payments.Reconfigure(s => s with { AdaptiveMode = AdaptiveMode.Off });
        await Assertions.Expect(page.Locator("tr.adaptive-row")).ToHaveCountAsync(0, new() { Timeout = s_patience });
    }

    /// <summary>
    /// A decision whose rule and description are markup and script (the console's document rewritten on its way to the
    /// page) is shown as text: the rule cell reads the markup, the description is the row's tooltip, and nothing runs.
    /// </summary>
    [Fact]
    public async Task Dashboard_HostileDecisionText_IsShownAsText()
    {
        const string rule = "<img src=x onerror=\"window.__pwned = 1\">Grow";
        const string description = "</td><script>window.__pwned = 2</script><b>grow</b>";
        await using var server = await AdminServer.StartAsync(executors: services =>
            services.AddBoundedExecutor("payments", o => { o.WorkerCount = 2; o.MaxWorkerCount = 8; o.AdaptiveMode = AdaptiveMode.Advisory; }));
        server.Payments.Resize(3);

        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var page = await DashboardBrowserTests.OpenDashboardAsync(browser, server, beforeLoad: p => p.RouteAsync(new Regex(@"/bounded-work/executors(\?history=true)?$"), async route =>
        {
            var response = await route.FetchAsync();
            var document = JsonNode.Parse(await response.TextAsync())!;
            foreach (var executor in document["executors"]!.AsArray())
            {
                var adaptive = executor!["adaptive"]!;
                adaptive["decisions"]!.AsArray().Add(new JsonObject
                {
                    ["time"] = "2026-11-24T12:00:00+00:00",
                    ["oldCount"] = 3,
                    ["newCount"] = 5,
                    ["rule"] = rule,
                    ["applied"] = false,
                    ["minQueueWaitMs"] = 12.5,
                    ["queueLength"] = 7,
                    ["completedPerSecond"] = 40.0,
                    ["runTimeMs"] = null,
                    ["description"] = description,
                });
                adaptive["decisionCount"] = adaptive["decisionCount"]!.GetValue<long>() + 1;
            }

            await route.FulfillAsync(new() { Response = response, Body = document.ToJsonString() });
        }));

        var panel = page.Locator("tr.adaptive-row[data-adaptive-of='payments']");
        var newest = panel.Locator("tr.decision").First;
        await Assertions.Expect(newest.Locator("td.rule")).ToHaveTextAsync(rule, new() { Timeout = s_patience });
        await Assertions.Expect(newest.Locator("td.change")).ToHaveTextAsync("3 → 5 proposed");
        Assert.Equal(description, await newest.GetAttributeAsync("title"));
        await Assertions.Expect(panel.Locator("tr.decision")).ToHaveCountAsync(2); // the hostile one and the pin
        await Assertions.Expect(panel.Locator("img, script, b")).ToHaveCountAsync(0);
        Assert.True(await page.EvaluateAsync<bool>("() => window.__pwned === undefined"), "The decision's text ran as script.");
        await Assertions.Expect(panel.Locator(".adaptive-mode")).ToHaveTextAsync("Adaptive: advisory");
    }

    /// <summary>
    /// Each executor's rate limit under its name, as the executor's document has it: permits per second and burst, or
    /// the application's own limiter with the workers waiting for a permit and the refusals; nothing without a limit.
    /// </summary>
    [Fact]
    public async Task Dashboard_RateLimits_ShowPermitsBurstWaitingAndRefusals()
    {
        var limiter = new ManualRateLimiter(permits: 2);
        await using var server = await AdminServer.StartAsync(executors: services =>
        {
            services.AddBoundedExecutor("payments", o => { o.WorkerCount = 1; o.RateLimiter = limiter; });
            services.AddBoundedExecutor("mail", o => { o.WorkerCount = 1; o.PermitsPerSecond = 50; o.PermitBurst = 5; });
            services.AddBoundedExecutor("reports", o => o.WorkerCount = 1);
        });
        try
        {
            // Three items and two permits: two run, and the worker waits for a third permit, refused.
            for (var i = 0; i < 3; i++)
            {
                server.Payments.Execute(static () => { });
            }

            Assert.True(
                SpinWait.SpinUntil(() => server.Payments.GetStatistics() is { Completed: 2, RateLimitWaitingWorkers: 1, PermitsRefused: >= 1 }, TestKit.Safety),
                "The worker never waited for a permit.");

            await using var browser = await DashboardBrowserTests.LaunchAsync();
            var page = await DashboardBrowserTests.OpenDashboardAsync(browser, server);
            var contains = new LocatorAssertionsToContainTextOptions { Timeout = s_patience };

            var custom = page.Locator("tr[data-executor='payments'] .ratelimit");
            await Assertions.Expect(custom).ToContainTextAsync("rate limit: ManualRateLimiter, 1 waiting, ", contains);
            await Assertions.Expect(custom).ToContainTextAsync(new Regex(@"\d+ refused \(\d"), contains);
            await Assertions.Expect(page.Locator("tr[data-executor='mail'] .ratelimit")).ToHaveTextAsync("rate limit 50/s, burst 5", new() { Timeout = s_patience });
            await Assertions.Expect(page.Locator("tr[data-executor='reports'] .ratelimit")).ToBeHiddenAsync();
            await Assertions.Expect(page.Locator("tr[data-executor='reports'] .ratelimit")).ToHaveTextAsync("");
        }
        finally
        {
            limiter.Grant(10);
        }
    }

    /// <summary>Keeps short items finishing on an executor until disposed, so its run time can be measured.</summary>
    private sealed class SteadyLoad : IDisposable
    {
        private readonly CancellationTokenSource _stop = new();
        private readonly Thread _thread;

        public SteadyLoad(BoundedExecutor executor)
        {
            _thread = new Thread(() =>
            {
                while (!_stop.IsCancellationRequested)
                {
                    try
                    {
                        executor.Execute(static () => Thread.Sleep(2), _stop.Token); // load: an item that takes a while
                    }
                    catch (OperationCanceledException)
                    {
                        return;
                    }
                    catch (RejectedExecutionException)
                    {
                        Thread.Sleep(1); // the queue is full for a moment, or the executor is shutting down with the server
                    }
                }
            })
            { IsBackground = true, Name = "adaptive dashboard test load" };
            _thread.Start();
        }

        public void Dispose()
        {
            _stop.Cancel();
            _thread.Join(TestKit.Safety);
            _stop.Dispose();
        }
    }
}
