using System.Text.Json;

namespace BoundedWork.Cli.Tests;

/// <summary>The incident: the sample's pool starved by blocking requests in a child process, operated with bw.</summary>
[Collection(ChildProcessCollection.Name)]
public sealed class IncidentTests(ITestOutputHelper output)
{
    [Fact]
    public async Task ListResizeShowTop_PoolStarved_AnswerWhileTheHttpConsoleDoesNot()
    {
        // Four pool threads at most, each held by a naive-sync callback that does not return before the app is
        // disposed: the HTTP console's request stays queued behind them for as long as bw takes, however slow the
        // machine, while bw goes through the diagnostics socket's own thread.
        await using var app = await SampleApp.StartAsync(sideEffectMs: SampleApp.BlocksUntilStopped, maxPoolThreads: 4);
        var pid = app.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture);
        app.StartLoad("naive-sync", concurrency: 200);
        await StarvedAsync(pid);
        var http = app.StartHttpConsoleRequest();

        var list = await Bw.RunAsync("list", "-p", pid, "--json");
        var httpAnsweredBeforeList = http.IsCompleted;
        var resize = await Bw.RunAsync("resize", "payments", "16", "-p", pid);
        var show = await Bw.RunAsync("show", "payments", "-p", pid, "--json");
        var top = await Bw.RunAsync("top", "-p", pid, "-n", "3");
        var httpAnsweredBeforeTop = http.IsCompleted;
        foreach (var run in (BwResult[])[list, resize, show, top])
        {
            output.WriteLine(run.ToString());
        }

        Assert.True(list.ExitCode == 0, list.ToString());
        var executors = JsonDocument.Parse(list.Out).RootElement.GetProperty("executors");
        Assert.Equal("payments", executors[0].GetProperty("name").GetString());
        Assert.False(httpAnsweredBeforeList, "The HTTP console answered before bw list: the pool was not starved enough to prove anything.");

        Assert.True(resize.ExitCode == 0, resize.ToString());
        Assert.Contains("workers 8 -> 16", resize.Out, StringComparison.Ordinal);
        Assert.True(show.ExitCode == 0, show.ToString());
        var payments = JsonDocument.Parse(show.Out).RootElement;
        Assert.Equal(16, payments.GetProperty("settings").GetProperty("workers").GetInt32());
        Assert.Equal(16, payments.GetProperty("workers").GetProperty("target").GetInt32());

        Assert.True(top.ExitCode == 0, top.ToString());
        Assert.Equal(3, CountOf(top.Out, "shared ThreadPool"));
        Assert.Equal(3, System.Text.RegularExpressions.Regex.Count(top.Out, @"payments\s+0\s+16\s+16\s")); // each frame: busy 0, live 16, target 16
        Assert.False(httpAnsweredBeforeTop, "The HTTP console answered during bw top: the pool was not starved enough to prove anything.");
    }

    /// <summary>Waits until the app's own probe reports starvation, read through bw.</summary>
    internal static Task StarvedAsync(string pid) =>
        Bw.UntilAsync("The load starving the app's pool", pool => pool.GetProperty("isStarved").GetBoolean(), "threadpool", "-p", pid);

    private static int CountOf(string text, string part) =>
        (text.Length - text.Replace(part, "", StringComparison.Ordinal).Length) / part.Length;
}

/// <summary>Tests that start child processes under load run one at a time, so they do not starve each other's machine.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class ChildProcessCollection
{
    public const string Name = "Child processes under load";
}
