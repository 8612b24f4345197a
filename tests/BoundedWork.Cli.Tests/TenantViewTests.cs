using System.Text.Json;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Tests;

/// <summary><c>bw show</c> lists the busiest tenants under fair share, hostile names shown as text, and nothing without them.</summary>
public sealed class TenantViewTests
{
    private static string Show(string tenants)
    {
        var json = JsonDocument.Parse($$"""{"name":"payments","isShutdown":false,"workers":{"busy":0,"live":1,"target":1,"max":8,"slow":0,"peak":1},"queue":{"length":0,"capacity":10,"oldestItemAgeMs":0,"waitingProducers":0},"settings":{"rejectionPolicy":"Abort"},"rates":{},"counters":{}{{tenants}}}""").RootElement;
        var output = new StringWriter();
        var console = AnsiConsole.Create(new AnsiConsoleSettings { Ansi = AnsiSupport.No, ColorSystem = ColorSystemSupport.NoColors, Out = new AnsiConsoleOutput(output) });
        console.Profile.Width = 400;
        console.Write(Views.Executor(json));
        return output.ToString();
    }

    [Fact]
    public void Show_Tenants_ListedBusiestFirstWithTheirCounts()
    {
        var text = Show(""","tenants":[{"tenant":"acme","weight":4,"queued":12,"running":2,"completed":300,"failed":1,"refused":5,"averageWaitMs":250},{"tenant":"globex","weight":1,"queued":0,"running":1,"completed":40,"failed":0,"refused":0,"averageWaitMs":3}]""");

        Assert.Contains("busiest tenants", text, StringComparison.Ordinal);
        Assert.Contains("acme: weight 4, queued 12, running 2, completed 300, failed 1, refused 5", text, StringComparison.Ordinal);
        Assert.True(text.IndexOf("acme:", StringComparison.Ordinal) < text.IndexOf("globex:", StringComparison.Ordinal));
    }

    [Fact]
    public void Show_NoTenants_SaysNothingAboutThem()
    {
        Assert.DoesNotContain("tenant", Show(string.Empty), StringComparison.Ordinal);
    }

    [Fact]
    public void Show_HostileTenantNames_ShownEscapedAndCut()
    {
        var text = Show(""","tenants":[{"tenant":"evil\r\n\u001b[31mred[/] [bold]","weight":1,"queued":1,"running":0,"completed":0,"failed":0,"refused":0,"averageWaitMs":0},{"tenant":"{{new string('y', 100)}}","weight":1,"queued":1,"running":0,"completed":0,"failed":0,"refused":0,"averageWaitMs":0}]""".Replace("{{new string('y', 100)}}", new string('y', 100), StringComparison.Ordinal));

        Assert.Contains(@"evil\r\n\u001b[31mred[/] [bold]: weight 1", text, StringComparison.Ordinal);
        Assert.DoesNotContain("\u001b", text, StringComparison.Ordinal);
        Assert.Contains(new string('y', Views.MaxTenantShown - 1) + "…: weight 1", text, StringComparison.Ordinal);
        Assert.DoesNotContain(new string('y', Views.MaxTenantShown), text, StringComparison.Ordinal);
    }
}
