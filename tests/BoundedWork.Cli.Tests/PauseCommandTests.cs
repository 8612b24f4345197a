using System.Text.Json;
using BoundedWork.Cli.Commands;

namespace BoundedWork.Cli.Tests;

/// <summary>bw pause and bw resume against a running app: applied, shown in list and show, and bad input refused.</summary>
[Collection(ChildProcessCollection.Name)]
public sealed class PauseCommandTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Pause_List_Show_Resume_AndBadInput()
    {
        await using var app = await SampleApp.StartAsync(sideEffectMs: 1);
        var pid = app.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture);

        var pause = await Bw.RunAsync("pause", "payments", "--reason", "provider outage", "--for", "10m", "-p", pid);
        var list = await Bw.RunAsync("list", "-p", pid);
        var show = await Bw.RunAsync("show", "payments", "-p", pid);
        var showJson = await Bw.RunAsync("show", "payments", "-p", pid, "--json");
        var resume = await Bw.RunAsync("resume", "payments", "-p", pid, "--json");
        var again = await Bw.RunAsync("resume", "payments", "-p", pid);
        var badFor = await Bw.RunAsync("pause", "payments", "--reason", "x", "--for", "soon", "-p", pid);
        var tooLong = await Bw.RunAsync("pause", "payments", "--reason", "x", "--for", "40d", "-p", pid);
        var badReason = await Bw.RunAsync("pause", "payments", "--reason", "two\nlines", "-p", pid);
        var noReason = await Bw.RunAsync("pause", "payments", "-p", pid);
        var unknown = await Bw.RunAsync("pause", "nobody", "--reason", "x", "-p", pid);
        var after = await Bw.RunAsync("show", "payments", "-p", pid, "--json");
        foreach (var run in (BwResult[])[pause, list, show, showJson, resume, again, badFor, tooLong, badReason, noReason, unknown, after])
        {
            output.WriteLine(run.ToString());
        }

        Assert.True(pause.ExitCode == 0, pause.ToString());
        Assert.Contains("paused until", pause.Out, StringComparison.Ordinal);
        Assert.Contains("provider outage", pause.Out, StringComparison.Ordinal);
        Assert.Contains("paused", list.Out, StringComparison.Ordinal);
        Assert.Contains("provider outage; since", show.Out, StringComparison.Ordinal);
        var shown = JsonDocument.Parse(showJson.Out).RootElement.GetProperty("pause");
        Assert.True(shown.GetProperty("paused").GetBoolean());
        Assert.Equal("provider outage", shown.GetProperty("reason").GetString());
        Assert.True(resume.ExitCode == 0, resume.ToString());
        Assert.True(JsonDocument.Parse(resume.Out).RootElement.GetProperty("changed").GetBoolean());
        Assert.Contains("not paused (unchanged)", again.Out, StringComparison.Ordinal);
        Assert.Equal(2, badFor.ExitCode);
        Assert.Equal(1, tooLong.ExitCode);
        Assert.Contains("for", tooLong.Out + tooLong.Error, StringComparison.Ordinal);
        Assert.Equal(1, badReason.ExitCode);
        Assert.Contains("control characters", badReason.Out + badReason.Error, StringComparison.Ordinal);
        Assert.Equal(2, noReason.ExitCode);
        Assert.Equal(1, unknown.ExitCode);
        Assert.False(JsonDocument.Parse(after.Out).RootElement.GetProperty("pause").GetProperty("paused").GetBoolean());
    }

    [Theory]
    [InlineData("90s", "00:01:30")]
    [InlineData("10m", "00:10:00")]
    [InlineData("2h", "02:00:00")]
    [InlineData("1d", "1.00:00:00")]
    [InlineData("00:05:00", "00:05:00")]
    [InlineData("infinite", "infinite")]
    [InlineData("soon", null)]
    [InlineData("-5m", null)]
    [InlineData("10", null)]
    [InlineData("99999999999d", null)]
    public void ToConsoleDuration_ReadsWhatOperatorsType(string typed, string? sent) =>
        Assert.Equal(sent, PauseCommands.ToConsoleDuration(typed));
}
