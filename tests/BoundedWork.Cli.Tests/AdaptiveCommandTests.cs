using System.Text.Json;

namespace BoundedWork.Cli.Tests;

/// <summary>The adaptive mode operated with bw: turned on with set, a resize pinned for a while, shown, and unpinned.</summary>
[Collection(ChildProcessCollection.Name)]
public sealed class AdaptiveCommandTests(ITestOutputHelper output)
{
    [Fact]
    public async Task SetAdaptive_ResizeWithPinFor_Show_Unpin()
    {
        await using var app = await SampleApp.StartAsync(sideEffectMs: 1);
        var pid = app.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture);

        var set = await Bw.RunAsync("set", "payments", "--adaptive", "On", "--adaptive-min", "2", "--adaptive-max", "32", "-p", pid);
        var resize = await Bw.RunAsync("resize", "payments", "12", "--pin-for", "00:05:00", "-p", pid);
        var show = await Bw.RunAsync("show", "payments", "-p", pid);
        var showJson = await Bw.RunAsync("show", "payments", "-p", pid, "--json");
        var unpin = await Bw.RunAsync("unpin", "payments", "-p", pid);
        var after = await Bw.RunAsync("show", "payments", "-p", pid, "--json");
        var badPin = await Bw.RunAsync("resize", "payments", "12", "--pin-for", "soon", "-p", pid);
        foreach (var run in (BwResult[])[set, resize, show, showJson, unpin, after, badPin])
        {
            output.WriteLine(run.ToString());
        }

        Assert.True(set.ExitCode == 0, set.ToString());
        Assert.Contains("adaptiveMode Off -> On", set.Out, StringComparison.Ordinal);
        Assert.True(resize.ExitCode == 0, resize.ToString());
        Assert.Contains("workers 8 -> 12", resize.Out, StringComparison.Ordinal);
        Assert.Contains("workers now: busy ", resize.Out, StringComparison.Ordinal);
        Assert.True(show.ExitCode == 0, show.ToString());
        Assert.Contains("On, 2 to 32 workers, pinned until", show.Out, StringComparison.Ordinal);
        Assert.Contains("pinned 8 -> 12 by an operator for 00:05:00", show.Out, StringComparison.Ordinal);
        var adaptive = JsonDocument.Parse(showJson.Out).RootElement.GetProperty("adaptive");
        Assert.True(adaptive.GetProperty("pinned").GetBoolean());
        Assert.True(unpin.ExitCode == 0, unpin.ToString());
        Assert.False(JsonDocument.Parse(after.Out).RootElement.GetProperty("adaptive").GetProperty("pinned").GetBoolean());
        Assert.NotEqual(0, badPin.ExitCode);
        Assert.Contains("pinFor", badPin.Out + badPin.Error, StringComparison.Ordinal);
    }
}
