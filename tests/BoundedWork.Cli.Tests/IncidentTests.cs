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
        await PoolHeldAsync(pid, poolThreads: 4, output);
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

    /// <summary>
    /// Waits until bw doctor sees all <paramref name="poolThreads"/> of the app's pool threads (its ThreadPool's maximum)
    /// blocked in the side effect. A callback that gets there stays until the app is disposed
    /// (<see cref="SampleApp.BlocksUntilStopped"/>), so from then on no pool thread is free: nothing queued to the pool
    /// runs, an HTTP request included, however slow the machine. The probe's "starved" does not say as much: it reports
    /// a probe item that waited a second, which happens as soon as the pool is short of threads for a second, while
    /// threads it adds later can still be free and answer an HTTP request (if it is queued before the next callbacks).
    /// </summary>
    internal static async Task PoolHeldAsync(string pid, int poolThreads, ITestOutputHelper output)
    {
        var deadline = DateTime.UtcNow + Limits.Safety;
        while (true)
        {
            var run = await Bw.RunAsync("doctor", "-p", pid, "--json", "--duration", "2");
            var held = 0;
            if (run.Out.TrimStart().StartsWith('{'))
            {
                using var report = JsonDocument.Parse(run.Out);
                held = report.RootElement.GetProperty("blockingSites").EnumerateArray()
                    .Where(site => site.GetProperty("method").GetString() == "SlowDependency.Call")
                    .Sum(site => site.GetProperty("threads").GetInt32());
            }

            output.WriteLine($"Pool threads held in the side effect: {held} of {poolThreads}.");
            if (held >= poolThreads)
            {
                return;
            }

            Assert.True(DateTime.UtcNow < deadline, $"The load never held all {poolThreads} pool threads: {run}");
            await Task.Delay(500); // the poll's interval (a run starts a process): the wait is for the condition
        }
    }

    private static int CountOf(string text, string part) =>
        (text.Length - text.Replace(part, "", StringComparison.Ordinal).Length) / part.Length;
}

/// <summary>Tests that start child processes under load run one at a time, so they do not starve each other's machine.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class ChildProcessCollection
{
    public const string Name = "Child processes under load";
}
