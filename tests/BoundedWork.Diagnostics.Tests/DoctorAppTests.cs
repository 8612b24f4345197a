using System.Diagnostics;
using System.Globalization;

namespace BoundedWork.Diagnostics.Tests;

/// <summary>
/// <c>bw doctor</c> from outside, on the Release MVC app without the sentinel: the stacks show MVC's compiled invoker
/// (<c>dynamicClass.lambda_method</c>) where the inlined action was, and the doctor names the action and its route
/// from ASP.NET Core's own diagnostic events, never the generated method.
/// </summary>
public sealed class DoctorAppTests(ITestOutputHelper output)
{
    [Fact]
    public async Task BwDoctor_TaskResultActionUnderLoad_NamesTheActionNotTheGeneratedMethod()
    {
        await using var app = await SentinelApp.StartAsync(null, "--Sentinel", "off");
        await using var load = new Load(new Uri(app.Address, "/orders/7"), clients: 200);

        var deadline = DateTime.UtcNow + Limits.Safety;
        (int ExitCode, string Out) run;
        while (true)
        {
            run = await DoctorAsync(app.ProcessId);
            if (run.ExitCode == 4)
            {
                break; // starved
            }

            Assert.True(DateTime.UtcNow < deadline, $"bw doctor never found the app starved. Last run: exit {run.ExitCode}\n{run.Out}");
        }

        output.WriteLine(run.Out);
        Assert.Contains("OrdersController.Get (route orders/{id:int})", run.Out, StringComparison.Ordinal);
        Assert.Contains("sync over async", run.Out, StringComparison.Ordinal);
        Assert.DoesNotContain("lambda_method", run.Out, StringComparison.Ordinal);
        Assert.DoesNotContain("dynamicClass", run.Out, StringComparison.Ordinal);
    }

    private static async Task<(int ExitCode, string Out)> DoctorAsync(int pid)
    {
        var start = new ProcessStartInfo(SentinelApp.DotnetHost())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.Environment["COLUMNS"] = "250";
        foreach (var argument in (string[])[Path.Combine(AppContext.BaseDirectory, "bw.dll"), "doctor", "-p", pid.ToString(CultureInfo.InvariantCulture)])
        {
            start.ArgumentList.Add(argument);
        }

        using var process = Process.Start(start)!;
        try
        {
            var stdout = process.StandardOutput.ReadToEndAsync();
            var stderr = process.StandardError.ReadToEndAsync();
            await process.WaitForExitAsync().WaitAsync(Limits.Safety);
            return (process.ExitCode, await stdout + await stderr);
        }
        finally
        {
            if (!process.HasExited)
            {
                process.Kill(entireProcessTree: true);
            }
        }
    }
}
