using System.Net;
using System.Text.Json;

namespace BoundedWork.AspNetCore.Tests;

public sealed class AdminApiTests : IAsyncLifetime
{
    private AdminServer _server = null!;

    public async Task InitializeAsync() => _server = await AdminServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task ListExecutors_TwoRegistered_ReturnsBothWithEveryDocumentedField()
    {
        using var response = await _server.Client.GetAsync("/bounded-work/executors");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("application/json", response.Content.Headers.ContentType?.MediaType);
        var json = await response.JsonAsync();
        Assert.True(json.TryGetProperty("timestamp", out _));
        var executors = json.GetProperty("executors").EnumerateArray().ToList();
        Assert.Equal(["payments", "mail"], executors.Select(e => e.GetProperty("name").GetString()));
        var payments = executors[0];
        Assert.False(payments.GetProperty("isShutdown").GetBoolean());
        AssertFields(payments.GetProperty("workers"), "target", "live", "busy", "peak", "max", "slow");
        Assert.Equal(2, payments.GetProperty("workers").GetProperty("target").GetInt32());
        Assert.Equal(8, payments.GetProperty("workers").GetProperty("max").GetInt32());
        AssertFields(payments.GetProperty("queue"), "length", "capacity", "oldestItemAgeMs", "waitingProducers");
        Assert.Equal(100, payments.GetProperty("queue").GetProperty("capacity").GetInt32());
        var settings = payments.GetProperty("settings");
        AssertFields(settings, "workers", "queueCapacity", "rejectionPolicy", "waitTimeout", "slowItemThreshold", "queueWaitThreshold");
        Assert.Equal("00:00:30", settings.GetProperty("slowItemThreshold").GetString());
        Assert.Equal("infinite", settings.GetProperty("queueWaitThreshold").GetString());
        Assert.Equal("Abort", settings.GetProperty("rejectionPolicy").GetString());
        Assert.Equal("00:00:05", settings.GetProperty("waitTimeout").GetString());
        AssertFields(payments.GetProperty("counters"), "submitted", "completed", "failed", "cancelled", "rejected", "discarded", "abandoned", "callerRuns", "callbackFailures", "threadPoolBlockingWaits", "running", "slowItemsReported", "longQueueWaitsReported", "workersReplaced", "starting", "runningOnCallers");
        var counters = payments.GetProperty("counters");
        long Counter(string name) => counters.GetProperty(name).GetInt64();
        Assert.Equal(Counter("submitted"), payments.GetProperty("queue").GetProperty("length").GetInt64() + Counter("starting") + Counter("running")
            + Counter("completed") + Counter("failed") + Counter("cancelled") + Counter("rejected") + Counter("discarded") + Counter("abandoned"));
        Assert.Equal(Counter("running"), payments.GetProperty("workers").GetProperty("busy").GetInt64() + Counter("runningOnCallers"));
        AssertFields(payments.GetProperty("rates"), "windowSeconds", "submitted", "completed", "failed", "cancelled", "rejected", "discarded");
        Assert.False(payments.TryGetProperty("history", out _));
        Assert.False(payments.TryGetProperty("running", out _)); // only in the single-executor document
    }

    [Fact]
    public async Task ListExecutors_HistoryRequested_IncludesQueueLengthSamples()
    {
        var sampler = _server.App.Services.GetRequiredService<Internal.AdminSampler>();
        sampler.SampleOnce();

        var json = await (await _server.Client.GetAsync("/bounded-work/executors?history=true")).JsonAsync();

        var history = json.GetProperty("executors")[0].GetProperty("history");
        Assert.Equal(1, history.GetProperty("intervalSeconds").GetDouble());
        Assert.NotEmpty(history.GetProperty("queueLength").EnumerateArray());
    }

    [Fact]
    public async Task GetExecutor_CountersMoved_ReflectsItemsAndQueue()
    {
        var payments = _server.Payments;
        using var gate = new ManualResetEventSlim(false);
        using var running = new CountdownEvent(2);
        for (var i = 0; i < 5; i++)
        {
            payments.Execute(() =>
            {
                running.Signal();
                gate.Wait();
            });
        }

        Assert.True(running.Wait(TestKit.Safety));
        var json = await (await _server.Client.GetAsync("/bounded-work/executors/PAYMENTS")).JsonAsync();
        gate.Set();

        Assert.Equal("payments", json.GetProperty("name").GetString());
        Assert.Equal(5, json.GetProperty("counters").GetProperty("submitted").GetInt64());
        Assert.Equal(2, json.GetProperty("workers").GetProperty("busy").GetInt32());
        Assert.Equal(3, json.GetProperty("queue").GetProperty("length").GetInt32());
        Assert.True(json.GetProperty("queue").GetProperty("oldestItemAgeMs").GetDouble() >= 0);
    }

    [Fact]
    public async Task GetExecutor_Unknown_Returns404ProblemNamingIt()
    {
        using var response = await _server.Client.GetAsync("/bounded-work/executors/nope");

        await AssertProblem(response, HttpStatusCode.NotFound, "nope");
    }

    [Fact]
    public async Task PutWorkers_NewCount_ResizesAndReturnsOldAndNewTargetAndLiveCount()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 6}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var json = await response.JsonAsync();
        Assert.Equal("payments", json.GetProperty("name").GetString());
        Assert.Equal(2, json.GetProperty("previous").GetProperty("workers").GetInt32());
        Assert.Equal(6, json.GetProperty("current").GetProperty("workers").GetInt32());
        Assert.Equal(6, json.GetProperty("workers").GetProperty("target").GetInt32());
        Assert.True(json.GetProperty("workers").TryGetProperty("live", out _));
        Assert.Equal(6, _server.Payments.Settings.WorkerCount);
    }

    [Fact]
    public async Task PutWorkers_SameCountTwice_IsIdempotent()
    {
        using var first = await _server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 3}""");
        using var second = await _server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 3}""");

        Assert.Equal(HttpStatusCode.OK, second.StatusCode);
        var json = await second.JsonAsync();
        Assert.Equal(3, json.GetProperty("previous").GetProperty("workers").GetInt32());
        Assert.Equal(3, json.GetProperty("current").GetProperty("workers").GetInt32());
        Assert.Equal(3, _server.Payments.Settings.WorkerCount);
    }

    [Fact]
    public async Task PatchSettings_EveryField_AppliesAllAtOnce()
    {
        using var response = await _server.Client.SendChangeAsync(
            HttpMethod.Patch,
            "/bounded-work/executors/payments",
            """{"workers": 4, "queueCapacity": 250, "rejectionPolicy": "discardOldest", "waitTimeout": "00:00:02"}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var json = await response.JsonAsync();
        Assert.Equal(100, json.GetProperty("previous").GetProperty("queueCapacity").GetInt32());
        Assert.Equal("DiscardOldest", json.GetProperty("current").GetProperty("rejectionPolicy").GetString());
        Assert.Equal(
            new BoundedExecutorSettings { WorkerCount = 4, QueueCapacity = 250, RejectionPolicy = RejectionPolicy.DiscardOldest, WaitTimeout = TimeSpan.FromSeconds(2), SlowItemThreshold = TimeSpan.FromSeconds(30), QueueWaitThreshold = Timeout.InfiniteTimeSpan },
            _server.Payments.Settings);
    }

    [Fact]
    public async Task PatchSettings_SlowItemAndQueueWaitThresholds_ApplyAndShowInTheExecutor()
    {
        using var response = await _server.Client.SendChangeAsync(
            HttpMethod.Patch,
            "/bounded-work/executors/payments",
            """{"slowItemThreshold": "00:00:10", "queueWaitThreshold": "00:00:02"}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var current = (await response.JsonAsync()).GetProperty("current");
        Assert.Equal("00:00:10", current.GetProperty("slowItemThreshold").GetString());
        Assert.Equal("00:00:02", current.GetProperty("queueWaitThreshold").GetString());
        Assert.Equal(TimeSpan.FromSeconds(10), _server.Payments.Settings.SlowItemThreshold);
        Assert.Equal(TimeSpan.FromSeconds(2), _server.Payments.Settings.QueueWaitThreshold);
        var settings = (await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync()).GetProperty("settings");
        Assert.Equal("00:00:10", settings.GetProperty("slowItemThreshold").GetString());

        using var off = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"slowItemThreshold": "infinite"}""");
        Assert.Equal(HttpStatusCode.OK, off.StatusCode);
        Assert.Equal(Timeout.InfiniteTimeSpan, _server.Payments.Settings.SlowItemThreshold);
    }

    [Fact]
    public async Task GetExecutor_AWorkerPastTheSlowItemThreshold_IsShownAsSlow()
    {
        using var release = new ManualResetEventSlim();
        using var started = new ManualResetEventSlim();
        _server.Payments.Reconfigure(_server.Payments.Settings with { SlowItemThreshold = TimeSpan.FromMilliseconds(20) });
        _server.Payments.Execute(() =>
        {
            started.Set();
            release.Wait(TestKit.Safety);
        });
        Assert.True(started.Wait(TestKit.Safety));
        Assert.True(SpinWait.SpinUntil(() => _server.Payments.GetStatistics().SlowItemsReported == 1, TestKit.Safety), "The watchdog never reported the stuck item.");

        var json = await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync();
        release.Set();

        Assert.Equal(1, json.GetProperty("workers").GetProperty("slow").GetInt32());
        Assert.Equal(1, json.GetProperty("counters").GetProperty("slowItemsReported").GetInt64());
        Assert.Equal(1, json.GetProperty("counters").GetProperty("running").GetInt64());
        var running = Assert.Single(json.GetProperty("running").EnumerateArray());
        Assert.StartsWith("payments#", running.GetProperty("worker").GetString(), StringComparison.Ordinal);
        Assert.True(running.GetProperty("elapsedMs").GetDouble() > 0);
        Assert.Equal(
            $"{typeof(AdminApiTests).FullName}.{nameof(GetExecutor_AWorkerPastTheSlowItemThreshold_IsShownAsSlow)} (lambda)",
            running.GetProperty("method").GetString());
    }

    [Theory]
    [InlineData("""{"slowItemThreshold": "00:00:00"}""", "slowItemThreshold")]
    [InlineData("""{"slowItemThreshold": 5}""", "slowItemThreshold")]
    [InlineData("""{"queueWaitThreshold": "soon"}""", "queueWaitThreshold")]
    [InlineData("""{"queueWaitThreshold": "-00:00:01", "workers": 3}""", "queueWaitThreshold")]
    public async Task PatchSettings_BadThreshold_IsAProblemNamingTheFieldAndChangesNothing(string body, string field)
    {
        var before = _server.Payments.Settings;

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", body);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        Assert.True((await response.JsonAsync()).GetProperty("errors").TryGetProperty(field, out _));
        Assert.Equal(before, _server.Payments.Settings);
    }

    [Fact]
    public async Task PatchSettings_InfiniteWaitTimeout_Applies()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"waitTimeout": "infinite"}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("infinite", (await response.JsonAsync()).GetProperty("current").GetProperty("waitTimeout").GetString());
        Assert.Equal(Timeout.InfiniteTimeSpan, _server.Payments.Settings.WaitTimeout);
    }

    [Fact]
    public async Task ThreadPool_Healthy_ReportsPoolFigures()
    {
        _server.App.Services.GetRequiredService<Internal.AdminSampler>().SampleOnce();

        var json = await (await _server.Client.GetAsync("/bounded-work/threadpool?history=true")).JsonAsync();

        AssertFields(json, "timestamp", "threadCount", "pendingWorkItemCount", "completedWorkItemCount", "completedPerSecond", "minThreads", "maxThreads",
            "minCompletionPortThreads", "maxCompletionPortThreads", "queueLatencyMs", "isStarved", "starvationThresholdMs", "starvation", "history");
        ThreadPool.GetMaxThreads(out var max, out _);
        Assert.Equal(max, json.GetProperty("maxThreads").GetInt32());
        Assert.True(json.GetProperty("threadCount").GetInt32() >= 1);
        Assert.NotEmpty(json.GetProperty("history").GetProperty("threadCount").EnumerateArray());
    }

    [Fact]
    public async Task Rates_ItemsCompletedBetweenSamples_ReportsItemsPerSecond()
    {
        // A sample taken before the items is the rate's baseline; the sampler thread adds one per second. Wait
        // (bounded) until the baseline is old enough for a rate (half a second).
        var payments = _server.Payments;
        _server.App.Services.GetRequiredService<Internal.AdminSampler>().SampleOnce();
        for (var i = 0; i < 10; i++)
        {
            await payments.RunAsync(() => { });
        }

        JsonElement rates = default;
        Assert.True(
            await PollAsync(async () =>
            {
                var json = await (await _server.Client.GetAsync("/bounded-work/executors/payments")).JsonAsync();
                rates = json.GetProperty("rates");
                return rates.GetProperty("completed").ValueKind == JsonValueKind.Number;
            }),
            "No rate within the safety limit.");

        Assert.True(rates.GetProperty("windowSeconds").GetDouble() >= 0.5);
        Assert.True(rates.GetProperty("completed").GetDouble() > 0);
        Assert.True(rates.GetProperty("submitted").GetDouble() > 0);
        Assert.Equal(0, rates.GetProperty("failed").GetDouble());
        Assert.Equal(0, rates.GetProperty("rejected").GetDouble());
    }

    [Theory]
    [InlineData("/bounded-work/")]
    [InlineData("/bounded-work")]
    public async Task Dashboard_Get_ServesSelfContainedPageWithNonceAndBasePath(string path)
    {
        using var response = await _server.Client.GetAsync(path);

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("text/html", response.Content.Headers.ContentType?.MediaType);
        var csp = response.Headers.GetValues("Content-Security-Policy").Single();
        Assert.Contains("default-src 'none'", csp, StringComparison.Ordinal);
        var html = await response.Content.ReadAsStringAsync();
        Assert.Contains("\"/bounded-work\"", html, StringComparison.Ordinal);
        Assert.DoesNotContain("__NONCE__", html, StringComparison.Ordinal);
        Assert.DoesNotContain("src=\"http", html, StringComparison.Ordinal);
        Assert.DoesNotContain("href=\"http", html, StringComparison.Ordinal);
    }

    internal static async Task<bool> PollAsync(Func<Task<bool>> condition)
    {
        var deadline = DateTime.UtcNow + TestKit.Safety;
        while (DateTime.UtcNow < deadline)
        {
            if (await condition())
            {
                return true;
            }

            await Task.Delay(50); // the poll's interval: the wait is for the condition, up to the safety limit
        }

        return false;
    }

    internal static async Task<JsonElement> AssertProblem(HttpResponseMessage response, HttpStatusCode status, string mustMention)
    {
        Assert.Equal(status, response.StatusCode);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        var json = await response.JsonAsync();
        Assert.Equal((int)status, json.GetProperty("status").GetInt32());
        Assert.Contains(mustMention, json.GetRawText(), StringComparison.Ordinal);
        return json;
    }

    private static void AssertFields(JsonElement element, params string[] names)
    {
        foreach (var name in names)
        {
            Assert.True(element.TryGetProperty(name, out _), $"Missing field '{name}' in {element}");
        }
    }
}
