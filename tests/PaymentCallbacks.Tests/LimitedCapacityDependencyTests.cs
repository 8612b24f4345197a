extern alias driver;

using System.Net;
using System.Net.Http.Json;
using System.Text;
using driver::PaymentCallbacks.LoadDriver;
using driver::PaymentCallbacks.LoadDriver.Adaptive;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;
using PaymentCallbacks.Server;
using PaymentCallbacks.Shared;

namespace PaymentCallbacks.Tests;

/// <summary>The dependency of limited capacity behind the adaptive-workers benchmark, and the benchmark's report.</summary>
public sealed class LimitedCapacityDependencyTests
{
    [Fact]
    public void Call_ManyThreadsAtOnce_NeverMoreThanCapacityHoldAConnection()
    {
        using var dependency = new LimitedCapacityDependency(
            Options.Create(new SideEffectOptions { MinDelayMs = 0, MaxDelayMs = 1, CpuIterations = 1 }),
            Options.Create(new DownstreamOptions { Capacity = 3, ContentionPenalty = 1 }));
        using var start = new Barrier(12);

        var threads = Enumerable.Range(0, 12).Select(t => new Thread(() =>
        {
            start.SignalAndWait();
            for (var i = 0; i < 50; i++)
            {
                dependency.Call(new PaymentCallback((t * 100) + i, 1));
            }
        })).ToList();
        threads.ForEach(t => t.Start());
        threads.ForEach(t => Assert.True(t.Join(TestServer.Safety)));

        var stats = dependency.Read();
        Assert.Equal(600, stats.Calls);
        Assert.InRange(stats.PeakServing, 1, 3);
        Assert.Equal(0, stats.InFlight);
        Assert.Equal(600, stats.RunTimeBuckets.Sum());
    }

    [Fact]
    public void SpeedFactor_TriangleOverThePeriod_FromOneToTheFactorAndBack()
    {
        var options = new DownstreamOptions { DriftFactor = 3, DriftPeriodSeconds = 100 };

        Assert.Equal(1, options.SpeedFactor(0), 6);
        Assert.Equal(2, options.SpeedFactor(25), 6);
        Assert.Equal(3, options.SpeedFactor(50), 6);
        Assert.Equal(2, options.SpeedFactor(75), 6);
        Assert.Equal(1, options.SpeedFactor(100), 6);
        Assert.Equal(1, new DownstreamOptions().SpeedFactor(123), 6);
    }

    [Theory]
    [InlineData("Downstream:Capacity", "-1", "Downstream:Capacity (-1)")]
    [InlineData("Downstream:ContentionPenalty", "-0.5", "Downstream:ContentionPenalty (-0.5)")]
    [InlineData("Downstream:DriftFactor", "0.5", "Downstream:DriftFactor (0.5)")]
    [InlineData("Downstream:DriftPeriodSeconds", "0", "Downstream:DriftPeriodSeconds (0)")]
    public async Task Start_BadDownstreamSetting_FailsNamingIt(string setting, string value, string expected)
    {
        await using var app = CallbackServer.Build(["--port", "0", "--environment", "Development", $"--{setting}", value]);

        var error = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());

        Assert.Contains(error.Failures, f => f.Contains(expected, StringComparison.Ordinal));
    }

    [Fact]
    public async Task StatsCapacity_LimitedDependencySelected_CountsEveryCallOfTheBoundedEndpoint()
    {
        await using var app = CallbackServer.Build(
            ["--port", "0", "--environment", "Development", "--ShutdownTimeoutSeconds", "0", "--Downstream:Capacity", "4",
             "--SideEffect:MinDelayMs", "0", "--SideEffect:MaxDelayMs", "1"]);
        await app.StartAsync();
        using var client = new HttpClient { BaseAddress = new Uri(CallbackServer.GetAddress(app) + "/"), Timeout = TestServer.Safety };
        Assert.IsType<LimitedCapacityDependency>(app.Services.GetRequiredService<IPaymentDependency>());

        for (var i = 0; i < 10; i++)
        {
            using var response = await client.PostAsync("callbacks/bounded", new StringContent($$"""{"orderId":{{i}},"amount":1}""", Encoding.UTF8, "application/json"));
            Assert.Equal(HttpStatusCode.Accepted, response.StatusCode);
        }

        // Polls until the ten side effects are done (a safety limit, not a timing claim).
        var deadline = DateTime.UtcNow + TestServer.Safety;
        var stats = (await client.GetFromJsonAsync("stats/capacity", CapacityJson.Default.CapacityStats))!;
        while (stats.BoundedCompleted < 10 && DateTime.UtcNow < deadline)
        {
            await Task.Delay(10); // the poll's interval
            stats = (await client.GetFromJsonAsync("stats/capacity", CapacityJson.Default.CapacityStats))!;
        }

        Assert.Equal(10, stats.BoundedCompleted);
        Assert.NotNull(stats.Dependency);
        Assert.Equal(4, stats.Dependency.Capacity);
        Assert.Equal(10, stats.Dependency.Calls);
        Assert.Equal(10, stats.Dependency.RunTimeBuckets.Sum());
        Assert.InRange(stats.Dependency.PeakServing, 1, 4);
        await app.StopAsync();
    }

    [Fact]
    public async Task StatsCapacity_PlainDependency_HasNoDependencyPart()
    {
        await using var server = await TestServer.StartAsync();

        var stats = await server.Client.GetFromJsonAsync("stats/capacity", CapacityJson.Default.CapacityStats);

        Assert.NotNull(stats);
        Assert.Null(stats.Dependency);
        Assert.Equal(8, stats.Workers);
    }

    [Fact]
    public void Percentile_OfAHistogram_ReadsTheBucketWithinFivePercent()
    {
        var histogram = new RunTimeHistogram();
        for (var i = 1; i <= 100; i++)
        {
            histogram.Record(TimeSpan.FromMilliseconds(i));
        }

        var counts = histogram.Snapshot();
        Assert.InRange(RunTimeHistogram.PercentileMs(counts, 0.99), 99 * 0.95, 99 * 1.05);
        Assert.InRange(RunTimeHistogram.PercentileMs(counts, 0.5), 50 * 0.95, 50 * 1.05);
        Assert.InRange(RunTimeHistogram.MeanMs(counts), 50.5 * 0.95, 50.5 * 1.05);
        Assert.Equal(0, RunTimeHistogram.PercentileMs(RunTimeHistogram.Between(counts, counts), 0.99));
    }

    [Fact]
    public void ScenarioReport_FixedCountsSwept_PicksTheOracleAndRatesEveryContenderAgainstIt()
    {
        var results = Directory.CreateTempSubdirectory("adaptive-report");
        try
        {
            Write(results.FullName, new ScenarioSummary("saturating", "fixed-min", "bounded", 1500, 200, 20, 2, 2, 0, 0, -1, 9000, 2));
            Write(results.FullName, new ScenarioSummary("saturating", "fixed-12", "bounded", 1500, 1180, 16, 12, 12, 0, 0, -1, 0, 12));
            Write(results.FullName, new ScenarioSummary("saturating", "fixed-14", "bounded", 1500, 1175, 30, 14, 14, 0, 0, -1, 0, 14));
            Write(results.FullName, new ScenarioSummary("saturating", "threadpool", "naive", 1500, 450, 15, 8, 10, 3, 1, -1, 0, 10));

            Assert.Equal(0, ScenarioCommands.Report(new Arguments(["--results", results.FullName])));

            Assert.Equal("fixed-12", File.ReadAllText(Path.Combine(results.FullName, "raw", "saturating", "oracle.txt")));
            var report = File.ReadAllText(Path.Combine(results.FullName, "adaptive-workers.md"));
            Assert.Contains("| threadpool | naive | 1500 | 450 | 0.381 | 15.0 | 0.94 |", report, StringComparison.Ordinal);
            Assert.Contains("| adaptive | bounded | not run", report, StringComparison.Ordinal);
        }
        finally
        {
            results.Delete(recursive: true);
        }
    }

    [Fact]
    public void ScenarioPlan_EveryScenario_QuickAndFullAreConsistent()
    {
        foreach (var name in ScenarioPlan.Names)
        {
            foreach (var quick in new[] { true, false })
            {
                var plan = ScenarioPlan.Get(name, quick);
                Assert.True(plan.Duration > 0);
                Assert.All(plan.Sweep, n => Assert.InRange(n, plan.MinWorkers, plan.MaxWorkers));
                Assert.All(plan.SteadyWindows, w => Assert.True(w.From < w.To && w.To <= plan.Duration));
                Assert.Contains("--Downstream:Capacity", plan.ServerArguments);
                Assert.True(double.IsNaN(plan.NeighbourAt) || (plan.NeighbourThreads > 0 && plan.NeighbourAt + plan.NeighbourSeconds <= plan.Duration), name);
            }
        }

        Assert.Throws<ArgumentException>(() => ScenarioPlan.Get("unknown", quick: true));
    }

    private static void Write(string results, ScenarioSummary summary)
    {
        var dir = Path.Combine(results, "raw", summary.Scenario, summary.Contender);
        Directory.CreateDirectory(dir);
        File.WriteAllText(Path.Combine(dir, "summary.json"), System.Text.Json.JsonSerializer.Serialize(summary, ScenarioJson.Default.ScenarioSummary));
    }
}
