using Microsoft.Extensions.Logging.Testing;
using System.Collections.Concurrent;
using System.Text.Json;
using System.Text.Json.Serialization;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql;
using BoundedWork.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.Cli.Tests;

/// <summary>
/// <c>bw dead-letters</c> as an operator runs it: the real tool in its own process, against an app's socket, over a
/// durable queue on a real PostgreSQL server.
/// </summary>
public sealed class DeadLetterCommandTests(DeadLetterCommandTests.Database database) : IClassFixture<DeadLetterCommandTests.Database>
{
    [Fact]
    public async Task DeadLetters_ListShowRequeuePurge_TheRequeuedItemRunsAgainWithItsId_AndEachChangeIsLogged()
    {
        await using var app = await DeadLetterApp.StartAsync(database.Server.ConnectionString);
        var ids = new List<long>();
        for (var i = 0; i < 3; i++)
        {
            ids.Add(await app.Queue.EnqueueWithIdAsync(new Notice(i)));
        }

        await Bw.UntilAsync("three dead letters", list => list.GetProperty("items").GetArrayLength() == 3, app.Bw("dead-letters", "list", "notices"));

        // A page of two in a table, with the way to the next one; the pages as JSON hold every dead letter once.
        var table = await Bw.RunAsync(app.Bw("dead-letters", "list", "notices", "--limit", "2"));
        Assert.True(table.ExitCode == 0, table.ToString());
        Assert.Contains("refused 2", table.Out, StringComparison.Ordinal);
        Assert.Contains("more with: bw dead-letters list notices --cursor ", table.Out, StringComparison.Ordinal);
        var first = Json(await Bw.RunAsync(app.Bw("dead-letters", "list", "notices", "--limit", "2", "--json")));
        var second = Json(await Bw.RunAsync(app.Bw("dead-letters", "list", "notices", "--limit", "2", "--json", "--cursor", first.GetProperty("nextCursor").GetString()!)));
        Assert.Equal(JsonValueKind.Null, second.GetProperty("nextCursor").ValueKind);
        Assert.Equal(ids, first.GetProperty("items").EnumerateArray().Concat(second.GetProperty("items").EnumerateArray()).Select(e => e.GetProperty("id").GetInt64()).Order());

        // One in full: its last error and its payload.
        var shown = await Bw.RunAsync(app.Bw("dead-letters", "show", "notices", ids[0].ToString(System.Globalization.CultureInfo.InvariantCulture)));
        Assert.True(shown.ExitCode == 0, shown.ToString());
        Assert.Contains("InvalidOperationException: refused 0", shown.Out, StringComparison.Ordinal);
        Assert.Contains("\"Number\": 0", shown.Out, StringComparison.Ordinal);
        Assert.Equal(0, Json(await Bw.RunAsync(app.Bw("dead-letters", "show", "notices", Id(ids[0]), "--json"))).GetProperty("payload").GetProperty("Number").GetInt32());

        // Requeue one: it runs again, as the same item, its attempts going on; the change is logged with the tool's process.
        app.Fail = false;
        var requeued = await Bw.RunAsync(app.Bw("dead-letters", "requeue", "notices", Id(ids[0])));
        Assert.True(requeued.ExitCode == 0, requeued.ToString());
        Assert.Contains($"notices: 1 dead letter requeued (item {ids[0]})", requeued.Out, StringComparison.Ordinal);
        Assert.Equal(2, await app.DeliveredAsync(ids[0]));
        var entry = Assert.Single(app.Logs.WithEvent("DeadLettersRequeued"));
        Assert.Matches(@"^local socket peer \(uid \d+, pid \d+\)$", entry.GetStructuredStateValue("User"));
        Assert.Equal("unix:" + app.SocketPath, entry.GetStructuredStateValue("RemoteAddress"));
        Assert.Equal("1", entry.GetStructuredStateValue("Count"));

        // Purging everything needs --yes; by id it does not.
        var unconfirmed = await Bw.RunAsync(app.Bw("dead-letters", "purge", "notices", "--all"));
        Assert.True(unconfirmed.ExitCode == 2, unconfirmed.ToString());
        Assert.Contains("add --yes", unconfirmed.Error, StringComparison.Ordinal);
        Assert.Empty(app.Logs.WithEvent("DeadLettersPurged"));
        var purged = await Bw.RunAsync(app.Bw("dead-letters", "purge", "notices", Id(ids[1])));
        Assert.True(purged.ExitCode == 0, purged.ToString());
        Assert.Contains("notices: 1 dead letter purged", purged.Out, StringComparison.Ordinal);

        // Requeue the rest in one step, then purge what is left: nothing.
        var all = Json(await Bw.RunAsync(app.Bw("dead-letters", "requeue", "notices", "--all", "--json")));
        Assert.Equal(1, all.GetProperty("count").GetInt32());
        Assert.Equal(2, await app.DeliveredAsync(ids[2]));
        var nothing = Json(await Bw.RunAsync(app.Bw("dead-letters", "purge", "notices", "--all", "--yes", "--json")));
        Assert.Equal(0, nothing.GetProperty("count").GetInt32());
        Assert.Equal([1, 0], app.Logs.WithEvent("DeadLettersPurged").Select(e => int.Parse(e.GetStructuredStateValue("Count")!, System.Globalization.CultureInfo.InvariantCulture)));

        var empty = await Bw.RunAsync(app.Bw("dead-letters", "list", "notices"));
        Assert.Contains("No dead letters in work queue 'notices'", empty.Out, StringComparison.Ordinal);
        var gone = await Bw.RunAsync(app.Bw("dead-letters", "show", "notices", Id(ids[1])));
        Assert.True(gone.ExitCode == 1, gone.ToString());
        Assert.Contains($"404 Unknown dead letter: Work queue 'notices' has no dead letter {ids[1]}", gone.Error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(1, "since: It must be an ISO 8601 date", "list", "notices", "--since", "yesterday")]
    [InlineData(1, "limit: It must be a whole number between 1 and 500", "list", "notices", "--limit", "0")]
    [InlineData(1, "until: It must be after since.", "requeue", "notices", "--since", "2026-11-23T10:00:00Z", "--until", "2026-11-22T10:00:00Z")]
    [InlineData(1, "No durable work queue named 'mail'", "list", "mail")]
    [InlineData(1, "has no dead letter 424242", "requeue", "notices", "424242")]
    [InlineData(2, "id: an item id is a positive whole number (was 'abc')", "show", "notices", "abc")]
    [InlineData(2, "id: an item id is a positive whole number (was '0')", "purge", "notices", "0")]
    [InlineData(2, "Say which dead letters to requeue", "requeue", "notices")]
    [InlineData(2, "Give item ids or --all", "requeue", "notices", "7", "--until", "2026-11-22T10:00:00Z")]
    [InlineData(2, "add --yes to confirm", "purge", "notices", "--since", "2026-11-23T10:00:00Z")]
    public async Task DeadLetters_BadInput_ExitCodeAndAMessageNamingTheField(int exitCode, string message, params string[] args)
    {
        await using var app = await DeadLetterApp.StartAsync(database.Server.ConnectionString);

        var run = await Bw.RunAsync(app.Bw(["dead-letters", .. args]));

        Assert.True(run.ExitCode == exitCode, run.ToString());
        Assert.Contains(message, run.Error, StringComparison.Ordinal);
        Assert.DoesNotContain(app.Logs.GetSnapshot(), e => e.Id.Name is "DeadLettersRequeued" or "DeadLettersPurged" && e.GetStructuredStateValue("Count") != "0");
    }

    [Fact]
    public async Task DeadLetters_NoSocket_Exit3()
    {
        var run = await Bw.RunAsync("dead-letters", "list", "notices", "--socket", Path.Combine(Path.GetTempPath(), $"bw-none-{Guid.NewGuid():N}.sock"));

        Assert.True(run.ExitCode == 3, run.ToString());
        Assert.Contains("There is no socket at", run.Error, StringComparison.Ordinal);
    }

    private static string Id(long id) => id.ToString(System.Globalization.CultureInfo.InvariantCulture);

    private static JsonElement Json(BwResult run)
    {
        Assert.True(run.ExitCode == 0, run.ToString());
        return JsonDocument.Parse(run.Out).RootElement.Clone();
    }

    /// <summary>One PostgreSQL server for the class; each app works in a schema of its own.</summary>
    public sealed class Database : IAsyncLifetime
    {
        private PostgresServer? _server;

        public PostgresServer Server => _server ?? throw new InvalidOperationException("Not started.");

        public async Task InitializeAsync() => _server = await PostgresServer.StartAsync();

        public async Task DisposeAsync()
        {
            if (_server is not null)
            {
                NpgsqlConnection.ClearAllPools();
                await _server.DisposeAsync();
            }
        }
    }
}

public sealed record Notice(int Number);

[JsonSerializable(typeof(Notice))]
public sealed partial class NoticeJson : JsonSerializerContext;

/// <summary>
/// An app with a durable queue "notices" (no retries) whose handler fails while <see cref="Fail"/> is set, and the
/// admin console on a local socket only; it records each delivery and who changed what.
/// </summary>
public sealed class DeadLetterApp : SocketAppHost
{
    private DeadLetterApp(WebApplication app, string socketPath, FakeLogCollector logs, DeliveryLog deliveries)
        : base(app, socketPath, logs)
    {
        Deliveries = deliveries;
    }

    public IPostgreSqlWorkQueue<Notice> Queue => App.Services.GetRequiredService<IPostgreSqlWorkQueue<Notice>>();

    public bool Fail
    {
        get => Volatile.Read(ref Deliveries.Fail);
        set => Volatile.Write(ref Deliveries.Fail, value);
    }

    internal DeliveryLog Deliveries { get; }

    public static async Task<DeadLetterApp> StartAsync(string connectionString)
    {
        var schema = await SocketApp.CreateSchemaAsync(connectionString);
        var deliveries = new DeliveryLog();
        var (built, socketPath, logs) = SocketApp.Build("dl", services =>
        {
            services.AddSingleton(deliveries);
            services
                .AddWorkQueue<Notice, FailingHandler>("notices", o => o.MaxRetryAttempts = 0)
                .UsePostgreSql(connectionString, NoticeJson.Default.Notice, o =>
                {
                    o.Schema = schema;
                    o.PollInterval = TimeSpan.FromMilliseconds(100);
                });
        });
        return await StartedAsync(new DeadLetterApp(built, socketPath, logs, deliveries));
    }

    /// <summary>Waits until item <paramref name="id"/> has been handled without failing; returns the attempt that did.</summary>
    public Task<int> DeliveredAsync(long id) => Deliveries.Completed.GetOrAdd(id, static _ => new(TaskCreationOptions.RunContinuationsAsynchronously)).Task.WaitAsync(Limits.Safety);

}

/// <summary>Whether the handler fails now, and the attempt at which each item was handled.</summary>
internal sealed class DeliveryLog
{
    public bool Fail = true;

    public ConcurrentDictionary<long, TaskCompletionSource<int>> Completed { get; } = new();
}

internal sealed class FailingHandler(DeliveryLog log, WorkItemContext context) : IBlockingWorkHandler<Notice>
{
    public void Handle(Notice item, CancellationToken cancellationToken)
    {
        if (Volatile.Read(ref log.Fail))
        {
            throw new InvalidOperationException("refused " + item.Number);
        }

        log.Completed.GetOrAdd(context.ItemId, static _ => new(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult(context.Attempt);
    }
}
