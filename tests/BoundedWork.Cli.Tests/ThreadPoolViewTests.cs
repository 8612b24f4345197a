using System.Text.Json;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Tests;

/// <summary><c>bw threadpool</c> prints the app's starvation sentinel's last diagnosis, or why it cannot make one.</summary>
public sealed class ThreadPoolViewTests
{
    private const string Pool = """
        "timestamp":"2026-01-02T03:04:05Z","threadCount":40,"pendingWorkItemCount":180,"completedWorkItemCount":9000,"completedPerSecond":2,"minThreads":2,"maxThreads":32767,"minCompletionPortThreads":2,"maxCompletionPortThreads":1000,"queueLatencyMs":4200,"isStarved":true,"starvationThresholdMs":1000,"starvation":"A work item queued to the ThreadPool waited 4.2 s for a thread."
        """;

    private static string Render(string json)
    {
        var output = new StringWriter();
        var console = AnsiConsole.Create(new AnsiConsoleSettings { Ansi = AnsiSupport.No, ColorSystem = ColorSystemSupport.NoColors, Out = new AnsiConsoleOutput(output) });
        console.Profile.Width = 400;
        console.Write(Views.ThreadPool(JsonDocument.Parse(json).RootElement, withHistory: false));
        return output.ToString();
    }

    [Fact]
    public void ThreadPool_LastDiagnosis_PrintsTheVerdictTheSitesAndTheAdvice()
    {
        var text = Render("{" + Pool + "," + """
            "lastDiagnosis":{"diagnosedAt":"2026-01-02T03:04:00+00:00","isStarved":true,
              "verdict":"STARVED: 47 of 52 pool threads are blocked in OrdersController.Get (route orders/{id}) (waits on Task.Result: sync over async), and work is queuing behind them.",
              "blockingSites":["47 of 52 pool threads blocked in OrdersController.Get (route orders/{id}): waits on Task.Result: sync over async"],
              "evidence":["Work waited for a pool thread in every one of 4 readings."],
              "advice":["Await the task in OrdersController.Get (route orders/{id}) instead of blocking on it."]}}
            """);

        Assert.Contains("last diagnosis", text, StringComparison.Ordinal);
        Assert.Contains("STARVED: 47 of 52 pool threads are blocked in OrdersController.Get (route orders/{id})", text, StringComparison.Ordinal);
        Assert.Contains("47 of 52 pool threads blocked in OrdersController.Get (route orders/{id}): waits on Task.Result: sync over async", text, StringComparison.Ordinal);
        Assert.Contains("Await the task in OrdersController.Get", text, StringComparison.Ordinal);
    }

    [Fact]
    public void ThreadPool_SentinelCannotDiagnose_SaysWhy()
    {
        var text = Render("{" + Pool + ""","diagnosisLimitation":"DOTNET_EnableDiagnostics=0 turns the runtime's diagnostics port off."}""");

        Assert.Contains("can detect starvation, not diagnose it: DOTNET_EnableDiagnostics=0", text, StringComparison.Ordinal);
    }

    [Fact]
    public void ThreadPool_NoSentinel_NoDiagnosisRows()
    {
        var text = Render("{" + Pool + "}");

        Assert.DoesNotContain("diagnos", text, StringComparison.Ordinal);
    }
}
