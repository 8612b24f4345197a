using System.Globalization;
using System.Text.Json;

namespace BoundedWork.Cli.Tests;

/// <summary>bw doctor on the sample under the same load, sent to the blocking endpoint and to the bounded one.</summary>
[Collection(ChildProcessCollection.Name)]
public sealed class DoctorTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Doctor_NaiveSyncLoad_SaysStarvedAndNamesTheBlockingSideEffect()
    {
        // Every pool thread stays blocked in the side effect until the app is disposed: the pool is starved, and the
        // blocking frames are there to sample, for as long as bw doctor takes.
        await using var app = await SampleApp.StartAsync(sideEffectMs: SampleApp.BlocksUntilStopped, maxPoolThreads: 4);
        var pid = app.ProcessId.ToString(CultureInfo.InvariantCulture);
        app.StartLoad("naive-sync", concurrency: 200);
        await IncidentTests.StarvedAsync(pid);

        var json = await Bw.RunAsync("doctor", "-p", pid, "--json");
        var text = await Bw.RunAsync("doctor", "-p", pid);
        output.WriteLine(json.ToString());
        output.WriteLine(text.ToString());

        Assert.True(json.ExitCode == 4, json.ToString());
        var report = JsonDocument.Parse(json.Out).RootElement;
        Assert.True(report.GetProperty("starved").GetBoolean());
        var top = report.GetProperty("blockingSites")[0];
        Assert.Equal("SlowDependency.Call", top.GetProperty("method").GetString());
        Assert.Equal("CallbackServer.MapEndpoints (lambda)", top.GetProperty("calledFrom").GetString());
        Assert.Equal("Thread.Sleep", top.GetProperty("wait").GetString());

        Assert.True(text.ExitCode == 4, text.ToString());
        Assert.StartsWith("STARVED", text.Out, StringComparison.Ordinal);
        Assert.Contains("blocked in SlowDependency.Call, called from CallbackServer.MapEndpoints (lambda)", text.Out, StringComparison.Ordinal);
        Assert.Contains("AddBoundedExecutor", text.Out, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Doctor_BoundedLoad_SaysNotStarved()
    {
        // The executor's workers stay busy in the side effect, and its queue full, until the app is disposed, however
        // long bw doctor takes to sample.
        await using var app = await SampleApp.StartAsync(sideEffectMs: SampleApp.BlocksUntilStopped, maxPoolThreads: 4);
        var pid = app.ProcessId.ToString(CultureInfo.InvariantCulture);
        app.StartLoad("bounded", concurrency: 200);

        // The same load as above, proven to reach the executor: its queue fills (and callers get 503s).
        await QueueFilledAsync(pid);
        var json = await Bw.RunAsync("doctor", "-p", pid, "--json");
        output.WriteLine(json.ToString());

        Assert.True(json.ExitCode == 0, json.ToString());
        var report = JsonDocument.Parse(json.Out).RootElement;
        Assert.False(report.GetProperty("starved").GetBoolean());
        Assert.Empty(report.GetProperty("blockingSites").EnumerateArray());
        Assert.Contains(report.GetProperty("executors").EnumerateArray(), e => e.GetProperty("name").GetString() == "payments" && e.GetProperty("busy").GetDouble() > 0);
    }

    [Fact]
    public async Task Doctor_AnyDotnetProcessWithoutBoundedWork_Reports()
    {
        // This test host: a .NET process with no BoundedWork in it, read through the runtime alone.
        var json = await Bw.RunAsync("doctor", "-p", Environment.ProcessId.ToString(CultureInfo.InvariantCulture), "--json", "--duration", "2");
        output.WriteLine(json.ToString());

        Assert.True(json.ExitCode is 0 or 4, json.ToString());
        var report = JsonDocument.Parse(json.Out).RootElement;
        Assert.True(report.GetProperty("poolThreadCounts").GetArrayLength() > 0, "No ThreadPool counter reading arrived.");
        Assert.Empty(report.GetProperty("executors").EnumerateArray());
    }

    [Fact]
    public async Task Top_ProcessWithoutSocket_ReadOnlyViewFromTheRuntimeCounters()
    {
        // This test host has no BoundedWork socket: top reads the runtime's counters instead.
        var top = await Bw.RunAsync("top", "-p", Environment.ProcessId.ToString(CultureInfo.InvariantCulture), "-n", "3");
        output.WriteLine(top.ToString());

        Assert.True(top.ExitCode == 0, top.ToString());
        const string Frame = "read-only from the runtime's counters";
        Assert.Equal(3, (top.Out.Length - top.Out.Replace(Frame, "", StringComparison.Ordinal).Length) / Frame.Length);
        Assert.Contains("queue length", top.Out, StringComparison.Ordinal);
    }

    private static Task QueueFilledAsync(string pid) =>
        Bw.UntilAsync(
            "The load filling the executor's queue",
            payments => payments.GetProperty("counters").GetProperty("rejected").GetInt64() > 0,
            "show", "payments", "-p", pid);
}
