using System.Collections.Concurrent;
using BoundedWork.Hosting;
using Microsoft.Playwright;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The dashboard as the documents show it (<c>docs/dashboard.png</c>): five executors under varied live load, one of
/// them adaptive with a few decisions and a pin, and the cluster view of a durable queue (over an in-memory cluster),
/// at 1280 px. The test checks the page shows all of it and writes <c>artifacts/docs-dashboard.png</c>;
/// <c>docs/dashboard-screenshot.sh</c> runs it and copies that file to <c>docs/dashboard.png</c>.
/// </summary>
public sealed class DocsScreenshotTests
{
    private static readonly float s_patience = (float)TestKit.Safety.TotalMilliseconds;

    /// <summary>The file the test writes, beside the other screenshots.</summary>
    public static string ScreenshotPath => Path.Combine(DashboardBrowserTests.ArtifactsDirectory, "docs-dashboard.png");

    [Fact]
    public async Task DocsDashboard_AdaptiveDecisionsAndACluster_AllShownAt1280Px()
    {
        var cluster = ClusterEndpointTests.NewCluster();
        await cluster.UpdateSettingsAsync(s => s with { MaxRunning = 20, StartsPerSecond = 12.5, StartBurst = 13 }, "bob");
        await using var server = await AdminServer.StartAsync(
            configure: builder =>
            {
                builder.Services.AddSingleton<IWorkQueueCluster>(cluster);
                builder.Services.AddSingleton<IWorkQueueStorage>(new DashboardBrowserTests.StandInStorage
                {
                    Statistics = new WorkQueueStorageStatistics { Ready = 1234, Scheduled = 5, Running = 17, DeadLettered = 3, OldestReadyAge = TimeSpan.FromSeconds(3.5), IsAvailable = true, ReadAt = DateTimeOffset.UtcNow },
                });
            },
            executors: services =>
            {
                services.AddBoundedExecutor("payments", o =>
                {
                    o.WorkerCount = 12;
                    o.MaxWorkerCount = 32;
                    o.QueueCapacity = 500;
                    o.RejectionPolicy = RejectionPolicy.Wait;
                    o.AdaptiveMode = AdaptiveMode.On;
                    o.AdaptiveMinWorkerCount = 2;
                    o.AdaptiveMaxWorkerCount = 8;
                });
                services.AddBoundedExecutor("mail", o => { o.WorkerCount = 2; o.MaxWorkerCount = 8; o.QueueCapacity = 100; o.RejectionPolicy = RejectionPolicy.DiscardOldest; o.FairShare = new FairShareSettings().WithWeight("merchant-a", 3); });
                services.AddBoundedExecutor("legacy-crm", o => { o.WorkerCount = 8; o.MaxWorkerCount = 16; o.QueueCapacity = 200; o.RejectionPolicy = RejectionPolicy.Abort; });
                services.AddBoundedExecutor("audit", o => { o.WorkerCount = 1; o.MaxWorkerCount = 4; o.QueueCapacity = 1_000; o.RejectionPolicy = RejectionPolicy.CallerRuns; });
                services.AddBoundedExecutor("reports", o => { o.WorkerCount = 2; o.MaxWorkerCount = 4; o.QueueCapacity = 50; o.RejectionPolicy = RejectionPolicy.Discard; });
            });

        // The adaptive executor's decisions: the controller brings 12 inside its bounds (Bounds, 12 → 8), an operator
        // pins 4 and unpins (Pinned, then Unpinned at the next decision), and pins 6 for ten minutes.
        var payments = server.Payments;
        await UntilDecisionAsync(payments, "Bounds");
        payments.Resize(4);
        payments.UnpinWorkerCount();
        await UntilDecisionAsync(payments, "Unpinned");
        using var load = new VariedLoad(server);
        payments.Resize(6, TimeSpan.FromMinutes(10));

        await using var browser = await DashboardBrowserTests.LaunchAsync();
        var page = await DashboardBrowserTests.OpenDashboardAsync(browser, server, width: 1280, height: 900);
        var panel = page.Locator("tr.adaptive-row[data-adaptive-of='payments']");
        await Assertions.Expect(panel.Locator(".adaptive-pin")).ToContainTextAsync("pinned at 6 until ", new() { Timeout = s_patience });
        await Assertions.Expect(panel.Locator("tr.decision").First.Locator("td.rule")).ToHaveTextAsync("Pinned", new() { Timeout = s_patience });
        Assert.True(await panel.Locator("tr.decision").CountAsync() >= 4, "The panel lists fewer than the four decisions made.");
        var view = page.Locator(".cluster[data-queue='payments']");
        await Assertions.Expect(view.Locator(".limit-running .v")).ToHaveTextAsync("12 / 20", new() { Timeout = s_patience });
        await Assertions.Expect(view.Locator("tbody.cluster-nodes tr[data-node]")).ToHaveCountAsync(2);

        // Live numbers in every row, and the chart with its series, before the picture.
        await page.WaitForFunctionAsync(
            """
            () => ["payments", "mail", "legacy-crm", "audit", "reports"].every(name =>
                Number(document.querySelector(`tr[data-executor='${name}'] td.completed`).textContent.replace(/,/g, "")) > 0)
              && Number(document.querySelector("tr[data-adaptive-of='payments'] svg.adaptive-chart path[data-series='workers']")?.dataset.points) >= 3
            """,
            null,
            new() { Timeout = s_patience });
        await page.Locator("tr[data-executor='mail'] button.more-toggle").ClickAsync();

        // An operator's pause in force (shown on its row and in the health), after the executor has done some work.
        server.Executor("reports").Pause("provider outage", TimeSpan.FromMinutes(30));

        // Load, not a wait for anything: docs/dashboard-screenshot.sh asks for a minute of it, so the charts have a history.
        if (int.TryParse(Environment.GetEnvironmentVariable("BOUNDEDWORK_SCREENSHOT_LOAD_SECONDS"), out var seconds) && seconds > 0)
        {
            await Task.Delay(TimeSpan.FromSeconds(seconds));
        }

        Directory.CreateDirectory(DashboardBrowserTests.ArtifactsDirectory);
        await page.ScreenshotAsync(new() { Path = ScreenshotPath, FullPage = true });
        Assert.InRange(new FileInfo(ScreenshotPath).Length, 10_000, 300_000);
    }

    /// <summary>Waits (up to the safety limit) until the executor has made a decision by <paramref name="rule"/>.</summary>
    private static async Task UntilDecisionAsync(BoundedExecutor executor, string rule)
    {
        var deadline = DateTime.UtcNow + TestKit.Safety;
        while (!executor.GetWorkerCountDecisions().Any(d => d.Rule == rule))
        {
            Assert.True(DateTime.UtcNow < deadline, $"No {rule} decision: {string.Join(", ", executor.GetWorkerCountDecisions().Select(d => d.Rule))}.");
            await Task.Delay(20); // the poll's interval: the wait is for the decision, up to the safety limit
        }
    }

    /// <summary>Each executor's own kind of load, on a thread of its own, until disposed.</summary>
    private sealed class VariedLoad : IDisposable
    {
        private readonly CancellationTokenSource _stop = new();
        private readonly ConcurrentBag<Thread> _threads = [];

        public VariedLoad(AdminServer server)
        {
            // Load: items that take a while; a submitter faster than the workers keeps queues standing and refusals coming.
            Run(server.Payments, static () => Thread.Sleep(20), pause: 2);
            // Three merchants share the mail executor by weight (fair share): a's weight is 3, b and c send more often.
            Run(server.Executor("mail").ForTenant("merchant-a"), static () => Thread.Sleep(60), pause: 15);
            Run(server.Executor("mail").ForTenant("merchant-b"), static () => Thread.Sleep(60), pause: 5);
            Run(server.Executor("mail").ForTenant("merchant-c"), static () => Thread.Sleep(60), pause: 5);
            Run(server.Executor("legacy-crm"), static () => Thread.Sleep(5), pause: 30);
            Run(server.Executor("audit"), static () => Thread.Sleep(1), pause: 40);
            Run(server.Executor("reports"), static () => Thread.Sleep(80), pause: 10);
        }

        public void Dispose()
        {
            _stop.Cancel();
            foreach (var thread in _threads)
            {
                thread.Join();
            }

            _stop.Dispose();
        }

        private void Run(BoundedExecutor executor, Action item, int pause) =>
            Run(executor.Name, () => executor.Execute(item, _stop.Token), pause);

        private void Run(TenantExecutor tenant, Action item, int pause) =>
            Run("mail tenant", () => tenant.Execute(item, _stop.Token), pause);

        private void Run(string name, Action submit, int pause)
        {
            var thread = new Thread(() =>
            {
                while (!_stop.IsCancellationRequested)
                {
                    try
                    {
                        submit(); // each policy as it is: waits, discards, runs here, refuses
                    }
                    catch (OperationCanceledException)
                    {
                        return;
                    }
                    catch (RejectedExecutionException)
                    {
                        // Abort's refusals, and the executor shutting down with the server.
                    }

                    Thread.Sleep(pause); // load: the submitter's pace
                }
            })
            { IsBackground = true, Name = "docs screenshot load: " + name };
            _threads.Add(thread);
            thread.Start();
        }
    }
}
