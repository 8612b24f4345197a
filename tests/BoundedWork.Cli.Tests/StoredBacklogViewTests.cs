using System.Text.Json;
using BoundedWork.Cli.Rendering;
using Spectre.Console;
using Spectre.Console.Rendering;

namespace BoundedWork.Cli.Tests;

/// <summary>
/// <c>bw list</c>, <c>bw top</c> and <c>bw show</c> print a durable queue's stored backlog (ready with the oldest's age,
/// retrying, dead) beside the executor's queue, and its health says <c>backlog</c> while items wait in the storage with
/// every worker busy, or <c>storage unreachable</c>.
/// </summary>
public sealed class StoredBacklogViewTests
{
    private const string Storage = """{"kind":"PostgreSql","available":true,"lastError":null,"ready":290,"scheduled":3,"running":4,"deadLettered":2,"completed":100,"oldestReadyAgeMs":12000,"readAt":null}""";

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void ListAndTop_DurableQueue_ShowTheStoredBacklogAndSayBacklog(bool withHistory)
    {
        var list = JsonDocument.Parse($$"""{"executors":[{{Executor(Storage)}}, {{Executor(null, "mail")}}]}""").RootElement;

        var text = Render(Views.Executors(list, withHistory));

        Assert.Contains("STORED", text, StringComparison.Ordinal);
        Assert.Contains("290 ready (oldest 12.0 s), 3 retrying, 2 dead", text, StringComparison.Ordinal);
        Assert.Contains("backlog", text, StringComparison.Ordinal);
    }

    [Fact]
    public void Show_DurableQueue_ShowsTheStoredBacklog_OrThatTheStorageIsUnreachable()
    {
        var shown = Render(Views.Executor(JsonDocument.Parse(Executor(Storage)).RootElement));
        var unreachable = Render(Views.Executor(JsonDocument.Parse(Executor("""{"kind":"PostgreSql","available":false,"lastError":"connection refused","ready":0,"scheduled":0,"running":0,"deadLettered":0,"completed":0,"oldestReadyAgeMs":0}""")).RootElement));

        Assert.Contains("stored", shown, StringComparison.Ordinal);
        Assert.Contains("290 ready (oldest 12.0 s), 3 retrying, 2 dead", shown, StringComparison.Ordinal);
        Assert.Contains("PostgreSql unreachable: connection refused", unreachable, StringComparison.Ordinal);
        Assert.Contains("storage unreachable", unreachable, StringComparison.Ordinal);
    }

    [Fact]
    public void List_NoDurableQueue_HasNoStoredColumn()
    {
        var list = JsonDocument.Parse($$"""{"executors":[{{Executor(null)}}]}""").RootElement;

        Assert.DoesNotContain("STORED", Render(Views.Executors(list, withHistory: false)), StringComparison.Ordinal);
    }

    [Fact]
    public void Show_DurableQueue_ListsTheBusiestStoredTenants_NamesMadeSafeAndCutShort()
    {
        var storage = Storage[..^1] + $$""","tenants":[{"tenant":"acme","ready":120,"running":4,"completed":10,"failed":1,"deadLettered":2},{"tenant":"evil\r\nforged\u001b[31m","ready":3,"running":1},{"tenant":"{{new string('x', 60)}}","ready":2,"running":0},{"tenant":"(other)","ready":7,"running":2}]}""";

        var shown = Render(Views.Executor(JsonDocument.Parse(Executor(storage)).RootElement));

        Assert.Contains("busiest tenants (stored)", shown, StringComparison.Ordinal);
        Assert.Contains("acme: ready 120, running 4; on this node completed 10, failed 1, dead 2", shown, StringComparison.Ordinal);
        Assert.Contains(@"evil\r\nforged\u001b[31m: ready 3, running 1", shown, StringComparison.Ordinal);
        Assert.DoesNotContain('\u001b', shown);
        Assert.Contains(new string('x', Views.MaxTenantShown - 1) + "…: ready 2, running 0", shown, StringComparison.Ordinal);
        Assert.Contains("(other): ready 7, running 2", shown, StringComparison.Ordinal);
        Assert.DoesNotContain("busiest tenants (stored)", Render(Views.Executor(JsonDocument.Parse(Executor(Storage)).RootElement)), StringComparison.Ordinal);
    }

    private static string Executor(string? storage, string name = "payments") =>
        $$"""{"name":"{{name}}","isShutdown":false,"workers":{"busy":4,"live":4,"target":4,"max":8,"slow":0,"peak":4},"queue":{"length":4,"capacity":1024,"oldestItemAgeMs":5,"waitingProducers":0},"settings":{"rejectionPolicy":"Abort"},"rates":{"completed":40},"counters":{},"history":{"queueLength":[1,2,3]}{{(storage is null ? "" : ",\"storage\":" + storage)}}}""";

    private static string Render(IRenderable renderable)
    {
        var output = new StringWriter();
        var console = AnsiConsole.Create(new AnsiConsoleSettings { Ansi = AnsiSupport.No, ColorSystem = ColorSystemSupport.NoColors, Out = new AnsiConsoleOutput(output) });
        console.Profile.Width = 400;
        console.Write(renderable);
        return output.ToString();
    }
}
