namespace BoundedWork.Diagnostics.Tests;

/// <summary>
/// The tutorial's scenario in a real MVC app built in Release, with the starvation sentinel on: under load, the app's
/// own log names the action that blocks the pool and how (sync over async, polling with Thread.Sleep); an await-only
/// action under the same load and a CPU-bound one produce no starvation diagnosis; without a diagnostics port the
/// sentinel says once that it can detect but not diagnose, and the app serves on. Counts are bounded; nothing is
/// asserted on speed (the waits are limits a hung run reaches).
/// </summary>
public sealed class SentinelAppTests(ITestOutputHelper output)
{
    private const int Diagnosed = 400;
    private const int NotDiagnosable = 402;
    private const int Detected = 403;

    [Fact]
    public async Task TaskResultAction_UnderLoad_LogNamesTheActionAndSyncOverAsync()
    {
        await using var app = await SentinelApp.StartAsync();
        await using (var load = new Load(new Uri(app.Address, "/orders/7"), clients: 200))
        {
            var diagnosis = await app.WaitForSentinelEventAsync(Diagnosed);
            output.WriteLine(diagnosis.Message);
            Assert.Equal("Warning", diagnosis.Level);
            Assert.Contains("STARVED", diagnosis.Message, StringComparison.Ordinal);
            Assert.Contains("OrdersController.Get (route orders/{id:int})", diagnosis.Message, StringComparison.Ordinal);
            Assert.Contains("waits on Task.Result", diagnosis.Message, StringComparison.Ordinal);
            Assert.Contains("sync over async", diagnosis.Message, StringComparison.Ordinal);
            Assert.DoesNotContain("lambda_method", diagnosis.Message, StringComparison.Ordinal);
            Assert.DoesNotContain("dynamicClass", diagnosis.Message, StringComparison.Ordinal);
        }

        // The activity event follows the log event (the app prints it when the activity stops).
        static bool IsActivityEvent(string line) => line.StartsWith("ACTIVITY BoundedWork.ThreadPoolDiagnosis EVENT threadpool.starvation STARVED", StringComparison.Ordinal);
        var activity = await app.WaitForLineAsync("activity event of the diagnosis", IsActivityEvent);
        Assert.Contains("OrdersController.Get", activity, StringComparison.Ordinal);
        Assert.Single(app.SentinelEvents(Diagnosed));
        Assert.Single(app.RawLines, IsActivityEvent);
    }

    [Fact]
    public async Task ThreadSleepPolling_UnderLoad_LogNamesTheActionAndThePolling()
    {
        await using var app = await SentinelApp.StartAsync();
        await using var load = new Load(new Uri(app.Address, "/stock/7"), clients: 200);

        var diagnosis = await app.WaitForSentinelEventAsync(Diagnosed);

        output.WriteLine(diagnosis.Message);
        Assert.Contains("StockController.Get (route stock/{id:int})", diagnosis.Message, StringComparison.Ordinal);
        Assert.Contains("polls with Thread.Sleep", diagnosis.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("lambda_method", diagnosis.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AwaitOnlyAction_UnderTheSameLoad_NoDiagnosis()
    {
        await using var app = await SentinelApp.StartAsync();
        await using (var load = new Load(new Uri(app.Address, "/prices/7"), clients: 200, requestsPerClient: 25))
        {
            await load.Completion.WaitAsync(Limits.Safety);
            output.WriteLine($"{load.Succeeded} requests succeeded, {load.Failed} failed");
            Assert.Equal(200 * 25, load.Succeeded);
        }

        await AssertSentinelWatchedAsync(app);
        Assert.Empty(app.SentinelEvents(Diagnosed));
        Assert.Empty(app.SentinelEvents(Detected));
    }

    [Fact]
    public async Task CpuBoundAction_UnderLoad_BusyIsNotStarved()
    {
        await using var app = await SentinelApp.StartAsync();
        await using (var load = new Load(new Uri(app.Address, "/quotes/7"), clients: 64, requestsPerClient: 10))
        {
            await load.Completion.WaitAsync(Limits.Safety);
            output.WriteLine($"{load.Succeeded} requests succeeded, {load.Failed} failed");
        }

        await AssertSentinelWatchedAsync(app);
        foreach (var line in app.SentinelEvents(401))
        {
            output.WriteLine(line.Message); // the pool was slow to start work, and the diagnosis said why: busy
        }

        Assert.Empty(app.SentinelEvents(Diagnosed));
    }

    [Fact]
    public async Task DiagnosticsPortOff_SaysOnceItCanDetectButNotDiagnose_AndTheAppServes()
    {
        await using var app = await SentinelApp.StartAsync(new Dictionary<string, string> { ["DOTNET_EnableDiagnostics"] = "0" });

        var limitation = await app.WaitForSentinelEventAsync(NotDiagnosable);
        using var client = new HttpClient { Timeout = Limits.Safety };
        var health = await client.GetStringAsync(new Uri(app.Address, "/health"));
        var price = await client.GetStringAsync(new Uri(app.Address, "/prices/7"));

        Assert.Contains("can detect ThreadPool starvation but not diagnose it", limitation.Message, StringComparison.Ordinal);
        Assert.Contains("DOTNET_EnableDiagnostics=0", limitation.Message, StringComparison.Ordinal);
        Assert.Equal("Healthy", health);
        Assert.Equal("14", price);

        // Starved, it says so (how long work waited), without the code, and goes on.
        await using (var load = new Load(new Uri(app.Address, "/orders/7"), clients: 200))
        {
            var detected = await app.WaitForSentinelEventAsync(Detected);
            output.WriteLine(detected.Message);
            Assert.Contains("The ThreadPool is starved", detected.Message, StringComparison.Ordinal);
        }

        Assert.Single(app.SentinelEvents(NotDiagnosable));
        Assert.Empty(app.SentinelEvents(Diagnosed));
    }

    /// <summary>The sentinel is alive after the load: its health check answers from the app.</summary>
    private static async Task AssertSentinelWatchedAsync(SentinelApp app)
    {
        using var client = new HttpClient { Timeout = Limits.Safety };
        var health = await client.GetStringAsync(new Uri(app.Address, "/health"));
        Assert.Contains(health, new[] { "Healthy", "Degraded" });
    }
}
