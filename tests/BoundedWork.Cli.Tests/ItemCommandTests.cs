using Microsoft.Extensions.Logging.Testing;
using BoundedWork.Testing;
using System.Text.Json;

namespace BoundedWork.Cli.Tests;

/// <summary>
/// <c>bw items</c> as an operator runs it: the real tool in its own process, against an app's socket, over a durable
/// queue on a real PostgreSQL server: search, a dry run, then the action applied and audited.
/// </summary>
public sealed class ItemCommandTests(DeadLetterCommandTests.Database database) : IClassFixture<DeadLetterCommandTests.Database>
{
    [Fact]
    public async Task Items_SearchDryRunThenRequeue_TheItemsRunAgain_AndTheActionIsLogged()
    {
        await using var app = await DeadLetterApp.StartAsync(database.Server.ConnectionString);
        var ids = new List<long>();
        for (var i = 0; i < 3; i++)
        {
            ids.Add(await app.Queue.EnqueueWithIdAsync(new Notice(i)));
        }

        await Bw.UntilAsync("three dead letters", page => page.GetProperty("items").GetArrayLength() == 3, app.Bw("items", "search", "notices", "--state", "dead-letter"));

        var table = await Bw.RunAsync(app.Bw("items", "search", "notices", "--state", "dead-letter", "--error", "REFUSED 1"));
        Assert.True(table.ExitCode == 0, table.ToString());
        Assert.Contains("refused 1", table.Out, StringComparison.Ordinal);
        Assert.DoesNotContain("refused 2", table.Out, StringComparison.Ordinal);
        var byField = JsonDocument.Parse((await Bw.RunAsync(app.Bw("items", "search", "notices", "--state", "dead-letter", "--path", "Number", "--equals", "2", "--json"))).Out).RootElement;
        Assert.Equal(ids[2], Assert.Single(byField.GetProperty("items").EnumerateArray()).GetProperty("id").GetInt64());

        // A dry run changes nothing and says how to apply.
        app.Fail = false;
        var dry = await Bw.RunAsync(app.Bw("items", "requeue", "notices", "--state", "dead-letter"));
        Assert.True(dry.ExitCode == 0, dry.ToString());
        Assert.Contains("requeue would touch 3 items (every item of the state)", dry.Out, StringComparison.Ordinal);
        Assert.Contains("Apply with --yes, or with --confirm ", dry.Out, StringComparison.Ordinal);
        Assert.Empty(app.Logs.WithEvent("ItemActionApplied"));

        // A token from another selection is refused; the right one applies.
        var other = JsonDocument.Parse((await Bw.RunAsync(app.Bw("items", "requeue", "notices", "--state", "dead-letter", "--key", "none", "--json"))).Out).RootElement;
        var refused = await Bw.RunAsync(app.Bw("items", "requeue", "notices", "--state", "dead-letter", "--confirm", other.GetProperty("confirmToken").GetString()!));
        Assert.True(refused.ExitCode == 1, refused.ToString());
        Assert.Contains("confirmToken: The confirmation token is not that of a dry run", refused.Error, StringComparison.Ordinal);

        var applied = await Bw.RunAsync(app.Bw("items", "requeue", "notices", "--state", "dead-letter", "--yes"));
        Assert.True(applied.ExitCode == 0, applied.ToString());
        Assert.Contains("notices: 3 items changed (requeue), 0 skipped", applied.Out, StringComparison.Ordinal);
        foreach (var id in ids)
        {
            Assert.Equal(2, await app.DeliveredAsync(id));
        }

        var entry = Assert.Single(app.Logs.WithEvent("ItemActionApplied"));
        Assert.Matches(@"^local socket peer \(uid \d+, pid \d+\)$", entry.GetStructuredStateValue("User"));
        Assert.Equal("3", entry.GetStructuredStateValue("Applied"));
    }

    [Theory]
    [InlineData(1, "state: Unknown state 'lost'", "search", "notices", "--state", "lost")]
    [InlineData(1, "limit: It must be a whole number between 1 and 500", "search", "notices", "--state", "ready", "--limit", "1000000")]
    [InlineData(1, "path: StoredItemQuery.PayloadPath 'a..b' is not a path", "search", "notices", "--state", "ready", "--path", "a..b", "--equals", "x")]
    [InlineData(1, "enqueuedSince: It must be an ISO 8601", "search", "notices", "--state", "ready", "--enqueued-since", "-5")]
    [InlineData(1, "key: It may not contain control characters", "cancel", "notices", "--state", "ready", "--key", "a\r\nb")]
    [InlineData(1, "state: Delete takes items that are", "delete", "notices", "--state", "ready", "--yes")]
    [InlineData(1, "priority: StoredItemAction.Priority must be between -100 and 100", "set-priority", "notices", "--state", "ready", "--priority", "1000", "--yes")]
    [InlineData(1, "No durable work queue named 'mail'", "search", "mail", "--state", "ready")]
    [InlineData(2, "--state", "search", "notices")]
    [InlineData(2, "Give --yes", "cancel", "notices", "--state", "ready", "--yes", "--confirm", "1.abc")]
    public async Task Items_BadInput_ExitCodeAndAMessageNamingTheField(int exitCode, string message, params string[] args)
    {
        await using var app = await DeadLetterApp.StartAsync(database.Server.ConnectionString);

        var run = await Bw.RunAsync(app.Bw(["items", .. args]));

        Assert.True(run.ExitCode == exitCode, run.ToString());
        Assert.Contains(message, run.Error, StringComparison.Ordinal);
        Assert.Empty(app.Logs.WithEvent("ItemActionApplied"));
    }
}
